#include "clients/cpp/submit_client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thread>

#include "common/backoff.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/json_parse.h"
#include "common/rfc3339.h"
#include "common/status_macros.h"
#include "common/ulid.h"

namespace loam::client {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Writes `state` durably: a temporary file, fsync, rename, fsync of the directory.
Status Persist(const fs::path& path, const json& state) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const std::string tmp = path.string() + ".tmp";
  const std::string text = state.dump();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return Status::Unavailable("cannot write " + tmp);
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::Unavailable("cannot write " + path.string());
  }
  const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return Status::OK();
}

// A file mapped read-only (sent without copying it into memory).
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) return Status::NotFound("cannot read '" + path + "'");
    struct stat st {};
    ::fstat(fd, &st);
    auto f = std::unique_ptr<MappedFile>(new MappedFile());
    f->size_ = static_cast<size_t>(st.st_size);
    if (f->size_ > 0) {
      f->data_ = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (f->data_ == MAP_FAILED) f->data_ = nullptr;
    }
    ::close(fd);
    if (f->size_ > 0 && f->data_ == nullptr)
      return Status::Unavailable("cannot map '" + path + "'");
    return f;
  }
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  MappedFile() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
};

// A transport error without the URL's query (upload URLs carry their token).
std::string Redacted(std::string text) {
  for (size_t q = text.find('?'); q != std::string::npos; q = text.find('?', q + 1)) {
    const size_t end = text.find_first_of(" '\"", q);
    text.replace(q, (end == std::string::npos ? text.size() : end) - q, "?…");
  }
  return text;
}

// The error of a non-retryable answer, with its stable code and, as detail
// httpStatus, its status.
Status ProblemStatus(const HttpResponse& r) {
  json p = ParseJson(r.body);
  const std::string code = p.is_object() ? StringAt(p, "code", "internal") : "internal";
  const std::string detail = p.is_object() ? StringAt(p, "detail", r.body) : r.body;
  return Status(StatusCode::kFailedPrecondition, "HTTP " + std::to_string(r.status) + ": " + detail)
      .WithErrorCode(ErrorCodeFromName(code))
      .WithDetail("httpStatus", std::to_string(r.status));
}

// A ticket kept in the state (so a resumed submission sends the same upload
// again rather than making another) while more than a minute of it is left.
bool TicketUsable(const json& f) {
  if (!f.contains("ticket")) return false;
  Result<int64_t> expires = ParseRfc3339Micros(StringAt(f["ticket"], "expiresAt"));
  return expires.ok() && *expires > Clock::System()->NowMicros() + 60'000'000;
}

}  // namespace

fs::path SubmissionStateDir() {
  const char* xdg = std::getenv("XDG_STATE_HOME");
  const char* home = std::getenv("HOME");
  const fs::path base = xdg != nullptr && *xdg != '\0' ? fs::path(xdg)
                        : home != nullptr              ? fs::path(home) / ".local/state"
                                                       : fs::path(".");
  return base / "loam" / "submissions";
}

// Whether a failed submission must keep its state for --resume: retries ran
// out, or the token was refused (a new one may finish it; the run may exist).
bool KeepState(const Status& s) {
  const std::string_view http = s.detail("httpStatus");
  return http.empty() || http == "401" || http == "403";
}

Result<fs::path> PrepareSubmission(const NewSubmission& s, const fs::path& dir, json* state) {
  *state = {{"version", 1},
            {"server", s.server},
            {"pipeline", s.pipeline},
            {"key", "loam-submit-" + NewUlidString()},
            {"sourceId", s.source_id},
            {"tokenFile", s.token_file.empty() ? "" : fs::absolute(s.token_file).string()},
            {"wait", s.wait},
            {"validateFirst", s.validate_first},
            {"files", json::array()}};
  for (const std::string& p : s.files) {
    ASSIGN_OR_RETURN(auto file, MappedFile::Open(p));
    (*state)["files"].push_back({{"path", fs::absolute(p).string()},
                                 {"size", file->bytes().size()},
                                 {"sha256", Sha256Hex(file->bytes())}});
  }
  const fs::path path = dir / ((*state)["key"].get<std::string>() + ".json");
  RETURN_NOT_OK(Persist(path, *state));  // before the first send
  return path;
}

Submitter::Submitter(fs::path path, json state, std::string token, SubmitHooks hooks)
    : path_(std::move(path)),
      state_(std::move(state)),
      token_(std::move(token)),
      hooks_(std::move(hooks)),
      client_(HttpOptions{}) {}

Status Submitter::Fail(std::string_view point) const {
  return hooks_.failpoint ? hooks_.failpoint(point) : Status::OK();
}

Result<HttpResponse> Submitter::SendWithRetries(const HttpRequest& req) {
  // Equal jitter on an exponential backoff from 200 ms, capped at 30 s.
  const Backoff backoff{200'000, 30'000'000, 0.5};
  int backoff_attempt = 0;
  for (int attempt = 1;; ++attempt) {
    Result<HttpResponse> r = client_.Send(req);
    std::chrono::milliseconds wait(0);
    std::string why;
    if (!r.ok()) {
      why = Redacted(r.status().message());
    } else if (r->status == 429 || r->status == 503 || r->status >= 500 ||
               (r->status == 409 && !r->Header("retry-after").empty())) {
      why = "HTTP " + std::to_string(r->status);
      const std::string_view after = r->Header("retry-after");
      if (!after.empty()) wait = std::chrono::seconds(std::atoll(std::string(after).c_str()));
    } else {
      return r;
    }
    if (wait.count() == 0) {
      wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::microseconds(backoff.WaitMicros(backoff_attempt++, rng_)));
    }
    if (std::chrono::steady_clock::now() + wait > deadline_) {
      return Status::Unavailable(why + " after " + std::to_string(attempt) +
                                 " attempts; the submission is kept: finish it with "
                                 "`loam submit --resume`");
    }
    if (hooks_.log) hooks_.log(why + "; retrying in " + std::to_string(wait.count()) + " ms");
    std::this_thread::sleep_for(wait);
  }
}

Status Submitter::ConfirmReceived(const std::string& upload_id, const HttpResponse& refused) {
  HttpRequest get{"GET", Url("/v1/uploads/" + upload_id), Auth(), ""};
  ASSIGN_OR_RETURN(HttpResponse r, SendWithRetries(get));
  if (r.status != 200) return ProblemStatus(r);
  const json upload = ParseJson(r.body);
  if (upload.is_object() && BoolAt(upload, "received")) return Status::OK();
  // Refused, yet not received: keep the state (no httpStatus detail) to resume.
  return Status::Unavailable("the PUT of upload " + upload_id + " answered HTTP " +
                             std::to_string(refused.status) +
                             " but the server has not received its bytes; the submission is "
                             "kept: finish it with `loam submit --resume`");
}

Status Submitter::UploadAll() {
  for (json& f : state_["files"]) {
    if (BoolAt(f, "uploaded")) continue;
    ASSIGN_OR_RETURN(auto file, MappedFile::Open(f["path"]));
    if (file->bytes().size() != f["size"].get<size_t>() ||
        Sha256Hex(file->bytes()) != f["sha256"]) {
      return Status::FailedPrecondition("'" + f["path"].get<std::string>() +
                                        "' changed since it was submitted");
    }
    if (!TicketUsable(f)) {
      const std::string ticket_body = json{{"size", f["size"]}, {"sha256", f["sha256"]}}.dump();
      HttpRequest create{"POST",
                         Url("/v1/pipelines/" + state_["pipeline"].get<std::string>() + "/uploads"),
                         Auth(), ticket_body};
      create.headers.emplace_back("Content-Type", "application/json");
      ASSIGN_OR_RETURN(HttpResponse t, SendWithRetries(create));
      if (t.status != 201) return ProblemStatus(t);
      f["ticket"] = json::parse(t.body);
      RETURN_NOT_OK(Persist(path_, state_));  // before the bytes go
    }
    const json& ticket = f["ticket"];
    HttpRequest put{ticket["method"], ticket["url"], {}, file->bytes()};
    for (const auto& [k, v] : ticket["headers"].items()) {
      if (k != "content-length") put.headers.emplace_back(k, v.get<std::string>());  // curl sets it
    }
    ASSIGN_OR_RETURN(HttpResponse sent, SendWithRetries(put));
    RETURN_NOT_OK(Fail("submit.after_upload_put"));  // crash tests: the answer is lost
    // 409 (loam serve) or 412 (S3, if-none-match): an earlier attempt's bytes
    // arrived, if the upload says it received them.
    if (sent.status == 409 || sent.status == 412) {
      RETURN_NOT_OK(ConfirmReceived(ticket["uploadId"], sent));
    } else if (sent.status != 200) {
      return ProblemStatus(sent);
    }
    f["uploadId"] = ticket["uploadId"];
    f["uploaded"] = true;
    f.erase("ticket");  // it was a capability; what is left is the upload id
    RETURN_NOT_OK(Persist(path_, state_));
  }
  return Status::OK();
}

Result<json> Submitter::Run(int64_t retry_for_seconds) {
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(retry_for_seconds);
  std::error_code ec;
  const bool validate_first = BoolAt(state_, "validateFirst");
  if (!state_.contains("request")) {
    if (Status up = UploadAll(); !up.ok()) {
      if (!KeepState(up)) fs::remove(path_, ec);  // nothing was submitted
      return up;
    }
    json body = {{"uploads", json::array()}};
    for (const json& f : state_["files"]) body["uploads"].push_back(f["uploadId"]);
    if (validate_first) {
      state_["validateRequest"] =
          json{{"uploads", body["uploads"]}, {"errorPolicy", "validationOnly"}}.dump();
    }
    if (!StringAt(state_, "sourceId").empty()) body["source"] = {{"id", state_["sourceId"]}};
    state_["request"] = body.dump();  // the exact bytes, resent on every retry
    RETURN_NOT_OK(Persist(path_, state_));
  }
  if (validate_first && !BoolAt(state_, "validated")) {
    ASSIGN_OR_RETURN(json checked, Validate());
    if (StringAt(checked, "state") != "succeeded") {
      fs::remove(path_, ec);  // settled: the data is not loaded
      return checked;
    }
    state_["validated"] = true;
    RETURN_NOT_OK(Persist(path_, state_));
  }
  ASSIGN_OR_RETURN(json run, SendRequest("request", state_["key"]));
  fs::remove(path_, ec);
  return run;
}

Result<json> Submitter::Validate() {
  const auto deadline = deadline_;
  ASSIGN_OR_RETURN(json run,
                   SendRequest("validateRequest", state_["key"].get<std::string>() + ":validate"));
  Result<json> done = Wait(run["id"], nullptr);
  deadline_ = deadline;  // the load's submission retries for --retry-for again
  return done;
}

Result<json> Submitter::SendRequest(const std::string& field, const std::string& key) {
  const std::string request = state_[field];
  HttpRequest submit{"POST",
                     Url("/v1/pipelines/" + state_["pipeline"].get<std::string>() + "/runs"),
                     Auth(), request};
  submit.headers.emplace_back("Content-Type", "application/json");
  submit.headers.emplace_back("Idempotency-Key", key);
  ASSIGN_OR_RETURN(HttpResponse r, SendWithRetries(submit));
  RETURN_NOT_OK(Fail("submit.after_send"));  // crash tests: the answer is lost
  if (r.status == 202) return json::parse(r.body);
  Status refused = ProblemStatus(r);
  if (KeepState(refused)) {
    return refused.WithMessage(refused.message() +
                               "; the submission is kept: finish it with `loam submit --resume` "
                               "and a valid token");
  }
  std::error_code ec;
  fs::remove(path_, ec);  // a non-retryable answer ends the submission
  return refused;
}

Result<json> Submitter::Wait(const std::string& run_id,
                             const std::function<void(const json& run)>& on_poll) {
  deadline_ = std::chrono::steady_clock::now() + std::chrono::hours(24);
  // Long-polls (the server answers when the run ends or after 20 s, within
  // the client's 30 s stall timeout); a server without ?wait answers 400,
  // and is polled with a growing pause instead.
  bool long_poll = true;
  std::chrono::milliseconds pause(100);
  for (;;) {
    const std::string target = "/v1/runs/" + run_id + (long_poll ? "?wait=20" : "");
    ASSIGN_OR_RETURN(HttpResponse r, SendWithRetries(HttpRequest{"GET", Url(target), Auth(), {}}));
    if (r.status == 400 && long_poll) {
      long_poll = false;
      continue;
    }
    if (r.status != 200) return ProblemStatus(r);
    json run = ParseJson(r.body);
    if (!run.is_object()) return Status::Internal("GET /v1/runs/" + run_id + ": not a JSON object");
    const std::optional<std::string> state = OptionalStringAt(run, "state");
    if (!state) return Status::Internal("GET /v1/runs/" + run_id + ": the run has no state");
    if (on_poll) on_poll(run);
    if (*state == "succeeded" || *state == "failed" || *state == "partial" ||
        *state == "cancelled") {
      return run;
    }
    if (long_poll) continue;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(2000));
  }
}

}  // namespace loam::client
