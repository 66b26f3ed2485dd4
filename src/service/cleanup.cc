#include "service/cleanup.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/backoff.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

constexpr int64_t kBackoffBaseMicros = 1'000'000;
constexpr int64_t kBackoffMaxMicros = 300'000'000;
constexpr std::string_view kStaging = "ingestion-staging/v1/";

// The upload id of a key in one day of the staging tree (`day_prefix`), laid
// out as StagingUploadPrefix writes it:
// "workspaces/<id>/subjects/<principal>/pipelines/<id>/targets/<sid>/uploads/<id>/...";
// "" for any other key. Anchored at the day: "/uploads/" elsewhere never counts.
std::string UploadIdOf(std::string_view day_prefix, std::string_view key) {
  if (!key.starts_with(day_prefix)) return "";
  std::string_view rest = key.substr(day_prefix.size());
  for (std::string_view name : {"workspaces", "subjects", "pipelines", "targets"}) {
    const size_t slash = rest.find('/');
    if (rest.substr(0, slash) != name || slash == std::string_view::npos) return "";
    const size_t next = rest.find('/', slash + 1);
    if (next == std::string_view::npos || next == slash + 1) return "";
    rest.remove_prefix(next + 1);
  }
  if (!rest.starts_with("uploads/")) return "";
  rest.remove_prefix(8);
  const std::string_view id = rest.substr(0, rest.find('/'));
  return Ulid::Parse(id).ok() ? std::string(id) : "";
}

// Micros at the end of the UTC day "YYYY-MM-DD"; nullopt when malformed.
std::optional<int64_t> DayEndMicros(std::string_view day) {
  int y = 0;
  unsigned m = 0, d = 0;
  if (day.size() != 10 || std::sscanf(std::string(day).c_str(), "%4d-%2u-%2u", &y, &m, &d) != 3) {
    return std::nullopt;
  }
  const std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(m),
                                        std::chrono::day(d)};
  if (!ymd.ok()) return std::nullopt;
  const std::chrono::sys_days next = std::chrono::sys_days(ymd) + std::chrono::days(1);
  return std::chrono::duration_cast<std::chrono::microseconds>(next.time_since_epoch()).count();
}

}  // namespace

std::string EncodeCleanupEntry(const CleanupEntry& e) {
  return json{
      {"format", 1}, {"runId", e.run_id}, {"prefixes", e.prefixes}, {"uploads", e.upload_ids}}
      .dump();
}

Result<CleanupEntry> DecodeCleanupEntry(std::string_view text) {
  Result<json> j = ParseJsonObject(text, "cleanup entry");
  if (!j.ok()) return Status::DataLoss("malformed cleanup entry: " + j.status().message());
  CleanupEntry e;
  const auto strings = [&](const char* key, std::vector<std::string>* out) {
    auto it = j->find(key);
    if (it == j->end() || !it->is_array()) return false;
    for (const json& v : *it) {
      if (!v.is_string()) return false;
      out->push_back(v.get<std::string>());
    }
    return true;
  };
  auto run = j->find("runId");
  if (IntegerAt(*j, "format") != 1 || run == j->end() || !run->is_string() ||
      !strings("prefixes", &e.prefixes) || !strings("uploads", &e.upload_ids)) {
    return Status::DataLoss("malformed cleanup entry: format 1 with runId, prefixes and uploads");
  }
  e.run_id = run->get<std::string>();
  return e;
}

Cleaner::Cleaner(std::shared_ptr<ObjectStore> store, std::string workspace_root, Clock* clock)
    : store_(std::move(store)),
      root_(std::move(workspace_root)),
      prefix_((root_.empty() ? "" : root_ + "/") + "_control/cleanup/"),
      clock_(clock),
      rng_(std::random_device{}()) {}

Status Cleaner::Enqueue(const CleanupEntry& e) {
  const std::string text = EncodeCleanupEntry(e);
  // Put-if-absent: a repeated enqueue (a retry, the queue pass) keeps the
  // entry's first age, which the backlog metric reports.
  Status s = store_->PutIfAbsent(prefix_ + e.run_id + ".json", text).status();
  return s.IsAlreadyExists() ? Status::OK() : s;
}

int64_t Cleaner::BackoffMicros(int attempts) {
  std::lock_guard lock(mu_);
  return Backoff{kBackoffBaseMicros, kBackoffMaxMicros, 0.5}.WaitMicros(attempts, rng_);
}

Status Cleaner::DeletePrefix(const std::string& prefix, int64_t* deleted) {
  // One upload's exact prefix only: "<staging>/.../uploads/<ULID>/", a valid
  // key prefix (no "." or ".." segments) under the staging tree.
  const std::string staging = (root_.empty() ? "" : root_ + "/") + std::string(kStaging);
  const size_t at = prefix.rfind("/uploads/");
  const bool shaped =
      prefix.rfind(staging, 0) == 0 && prefix.back() == '/' && at != std::string::npos &&
      ValidateListPrefix(prefix).ok() &&
      Ulid::Parse(std::string_view(prefix).substr(at + 9, prefix.size() - at - 10)).ok();
  if (!shaped) {
    return Status::DataLoss("cleanup entry names '" + prefix +
                            "', which is not one upload's prefix in the staging tree");
  }
  for (;;) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(prefix, "", 1000));
    for (const ObjectInfo& o : page.objects) {
      RETURN_NOT_OK(store_->Delete(o.key));
      ++*deleted;
    }
    if (page.objects.empty() || !page.truncated) return Status::OK();
  }
}

Status Cleaner::DeleteUploadRecord(const std::string& upload_id) {
  if (!Ulid::Parse(upload_id).ok()) return Status::OK();
  return store_->Delete((root_.empty() ? "" : root_ + "/") + "_control/uploads/" + upload_id +
                        ".json");
}

Result<CleanupReport> Cleaner::RunOnce(const std::function<Result<bool>(const std::string&)>& due) {
  CleanupReport report;
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> entries, store_->ListAll(prefix_));
  const int64_t now = clock_->NowMicros();
  for (const ObjectInfo& o : entries) {
    if (due) {
      const std::string name = o.key.substr(prefix_.size());
      ASSIGN_OR_RETURN(bool ready, due(name.substr(0, name.find('.'))));
      if (!ready) {
        ++report.entries_pending;
        continue;
      }
    }
    {
      std::lock_guard lock(mu_);
      auto it = retries_.find(o.key);
      if (it != retries_.end() && it->second.due_micros > now) {
        ++report.entries_pending;
        continue;
      }
    }
    int64_t deleted = 0;
    Status s = [&]() -> Status {
      Result<std::string> text = store_->Get(o.key);
      if (text.status().IsNotFound()) return Status::OK();  // another cleaner finished it
      RETURN_NOT_OK(text.status());
      Result<CleanupEntry> entry = DecodeCleanupEntry(*text);
      if (!entry.ok()) return entry.status().WithContext(o.key);
      for (const std::string& p : entry->prefixes) RETURN_NOT_OK(DeletePrefix(p, &deleted));
      for (const std::string& u : entry->upload_ids) RETURN_NOT_OK(DeleteUploadRecord(u));
      return store_->Delete(o.key);
    }();
    report.objects_deleted += deleted;
    if (s.ok()) {
      ++report.entries_done;
      std::lock_guard lock(mu_);
      retries_.erase(o.key);
      continue;
    }
    ++report.entries_failed;
    int attempts = 0;
    {
      std::lock_guard lock(mu_);
      attempts = retries_[o.key].attempts;
    }
    const int64_t wait = BackoffMicros(attempts);
    {
      std::lock_guard lock(mu_);
      retries_[o.key] = Retry{attempts + 1, now + wait};
    }
    LOAM_LOG_WARN("cleanup of {} failed (attempt {}), retrying in {} ms: {}", o.key, attempts + 1,
                  wait / 1000, s.ToString());
  }
  return report;
}

Result<int64_t> Cleaner::Backlog() const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> entries, store_->ListAll(prefix_));
  int64_t oldest = 0;
  for (const ObjectInfo& o : entries) {
    if (oldest == 0 || o.meta.mtime_micros < oldest) oldest = o.meta.mtime_micros;
  }
  return oldest == 0 ? 0 : std::max<int64_t>(0, clock_->NowMicros() - oldest);
}

Result<SweepReport> Cleaner::Sweep(int64_t grace_micros,
                                   const std::function<Result<bool>(const std::string&)>& keep) {
  SweepReport report;
  const std::string staging = (root_.empty() ? "" : root_ + "/") + std::string(kStaging);
  std::string after;  // skip-scan: one LIST finds the next day
  for (;;) {
    ASSIGN_OR_RETURN(ListPage first, store_->List(staging, after, 1));
    if (first.objects.empty()) return report;
    const std::string rest = first.objects[0].key.substr(staging.size());
    const std::string day = rest.substr(0, rest.find('/'));
    const std::optional<int64_t> end = DayEndMicros(day);
    if (end && *end + grace_micros > clock_->NowMicros()) return report;  // days ascend
    ++report.days_visited;
    const std::string day_prefix = staging + day + "/";
    std::string start;
    for (;;) {
      ASSIGN_OR_RETURN(ListPage page, store_->List(day_prefix, start, 1000));
      for (const ObjectInfo& o : page.objects) {
        ++report.objects_seen;
        const std::string upload = UploadIdOf(day_prefix, o.key);
        bool needed = false;
        if (!upload.empty()) {
          ASSIGN_OR_RETURN(needed, keep(upload));
        }
        if (needed) {
          ++report.objects_kept;
          continue;
        }
        RETURN_NOT_OK(store_->Delete(o.key));
        if (!upload.empty()) RETURN_NOT_OK(DeleteUploadRecord(upload));
        ++report.objects_deleted;
      }
      if (!page.truncated || page.objects.empty()) break;
      start = page.objects.back().key;
    }
    // "<day>0" sorts after every "<day>/..." key and before the next day.
    after = staging + day + "0";
  }
}

}  // namespace loam::service
