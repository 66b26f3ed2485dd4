#include "server/api.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <set>

#include "common/json_depth.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "server/problem.h"

namespace loam::server {

using nlohmann::json;

Response JsonResponse(int status, const json& body) {
  Response r{static_cast<http::status>(status), 11};
  r.set(http::field::content_type, "application/json");
  // Request bytes (names, ids, headers) can reach a message: invalid UTF-8
  // is replaced, never thrown.
  r.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
  r.body() += "\n";
  return r;
}

Response EmptyResponse(int status) { return Response{static_cast<http::status>(status), 11}; }

std::string Rfc3339(int64_t micros) {
  const std::time_t secs = static_cast<std::time_t>(micros / 1'000'000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[40];
  const size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  char frac[16];
  std::snprintf(frac, sizeof(frac), ".%06lldZ", static_cast<long long>(micros % 1'000'000));
  return std::string(buf, n) + frac;
}

json RunJson(const RunInfo& run, int64_t queue_position) {
  const auto at = [](int64_t micros) { return micros > 0 ? json(Rfc3339(micros)) : json(); };
  json errors = json::array();
  for (const RunInfo::Error& e : run.errors) errors.push_back(service::RunErrorJson(e));
  json j = {{"id", run.id},
            {"state", run.state},
            {"pipelineId", run.pipeline_id},
            {"table", run.table},
            {"mode", run.mode},
            {"submittedBy", run.submitted_by},
            {"submittedAt", at(run.created_micros)},
            {"validationOnly", run.validation_only},
            {"uploads", run.uploads},
            {"inputBytes", run.input_bytes},
            {"counters",
             {{"rowsRead", run.counters.rows_read},
              {"inserted", run.counters.inserted},
              {"updated", run.counters.updated},
              {"unchanged", run.counters.unchanged},
              {"deleted", run.counters.deleted},
              {"rejected", run.counters.rejected},
              {"errors", errors},
              {"errorCount", run.error_count}}},
            {"timings",
             {{"submittedAt", at(run.created_micros)},
              {"startedAt", at(run.started_micros)},
              {"validatedAt", at(run.validated_micros)},
              {"finishedAt", at(run.finished_micros)}}}};
  if (!run.source_id.empty()) j["source"] = {{"id", run.source_id}, {"reload", run.source_reload}};
  if (!run.error_code.empty()) j["errorCode"] = run.error_code;
  if (!run.error.empty()) j["error"] = run.error;
  if (!run.commit_id.empty()) {
    j["commit"] = {{"commitId", run.commit_id},
                   {"manifestVersion", run.manifest_version},
                   {"tableVersion", run.table_version}};
  }
  if (!run.cancel_requested_by.empty()) {
    j["cancelRequest"] = {{"by", run.cancel_requested_by}, {"at", at(run.cancel_requested_micros)}};
  }
  if (queue_position >= 0) j["queuePosition"] = queue_position;
  return j;
}

Api::Api(service::Service* service, ApiOptions options)
    : svc_(service), options_(std::move(options)), waiters_(options_.run_wait_poll) {
  AddRoutes();
}

void Api::AddRoutes() {
  using Names = std::vector<std::string>;
  const auto open = [this](const char* m, const char* p, RouteFn fn, Names query = {}) {
    router_.Add(m, p, RouteSpec{fn, false, std::move(query)});
  };
  const auto authed = [this](const char* m, const char* p, RouteFn fn, Names query = {}) {
    router_.Add(m, p, RouteSpec{fn, true, std::move(query)});
  };
  const auto keyed = [this](const char* m, const char* p, RouteFn fn) {
    router_.Add(m, p, RouteSpec{fn, true, {}, /*keyed=*/true});
  };
  open("GET", "/healthz", &Api::Healthz);
  open("GET", "/readyz", &Api::Readyz);
  open("GET", "/metrics", &Api::Metrics);
  open("GET", "/console", &Api::RedirectToConsole);
  open("GET", "/console/", &Api::ServeConsole);
  open("GET", "/console/{file}", &Api::ServeConsole);
  // The upload capability in the URL authorises this one /v1 route: the
  // client sends exactly the method, headers and bytes it was given.
  open("PUT", "/v1/uploads/{uploadId}", &Api::PutUpload, {"token"});
  authed("GET", "/v1/openapi.json", &Api::OpenApi);
  authed("GET", "/v1/limits", &Api::GetLimits);
  authed("GET", "/v1/usage", &Api::GetUsage);
  authed("POST", "/v1/tables", &Api::CreateTable);
  authed("GET", "/v1/tables", &Api::ListTables, {"limit", "cursor"});
  authed("GET", "/v1/tables/{name}", &Api::GetTable);
  authed("GET", "/v1/tables/{name}/rows", &Api::GetRows, {"limit", "where", "version", "branch"});
  authed("GET", "/v1/tables/{name}/history", &Api::GetHistory);
  authed("POST", "/v1/tables/{name}/deletes", &Api::SubmitDelete);
  authed("POST", "/v1/sql", &Api::RunSql);
  authed("GET", "/v1/branches", &Api::ListBranches, {"limit", "cursor"});
  authed("POST", "/v1/branches", &Api::CreateBranch);
  authed("GET", "/v1/branches/{name}", &Api::GetBranch);
  authed("DELETE", "/v1/branches/{name}", &Api::DeleteBranch);
  authed("PATCH", "/v1/branches/{name}", &Api::PatchBranch);
  keyed("POST", "/v1/branches/{name}/merge", &Api::MergeBranch);
  authed("POST", "/v1/merges/{id}/revert", &Api::RevertMerge);
  authed("PUT", "/v1/tables/{name}/grants/{principal}", &Api::PutGrant);
  authed("DELETE", "/v1/tables/{name}/grants/{principal}", &Api::DeleteGrant);
  keyed("POST", "/v1/pipelines", &Api::CreatePipeline);
  authed("GET", "/v1/pipelines", &Api::ListPipelines, {"limit", "cursor"});
  authed("GET", "/v1/pipelines/{id}", &Api::GetPipeline);
  authed("PATCH", "/v1/pipelines/{id}", &Api::PatchPipeline);
  authed("DELETE", "/v1/pipelines/{id}", &Api::DeletePipeline);
  keyed("POST", "/v1/pipelines/{id}/uploads", &Api::CreateUpload);
  authed("GET", "/v1/uploads/{uploadId}", &Api::GetUpload);
  authed("POST", "/v1/pipelines/{id}/runs", &Api::SubmitRun);
  authed("GET", "/v1/runs", &Api::ListRuns,
         {"pipeline", "table", "state", "idempotencyKey", "since", "until", "order", "cursor",
          "limit"});
  authed("GET", "/v1/runs/{id}", &Api::GetRun, {"wait"});
  authed("GET", "/v1/runs/{id}/errors", &Api::GetRunErrors);
  keyed("POST", "/v1/runs/{id}/cancel", &Api::CancelRun);
  keyed("POST", "/v1/runs/{id}/revert", &Api::RevertRun);
}

HttpHandler::BodyPlan Api::PlanBody(const RequestHeader& header) {
  const std::string_view target = header.target();
  if (header.method() == http::verb::put && target.substr(0, 12) == "/v1/uploads/") {
    return {true, static_cast<uint64_t>(svc_->limits().max_run_bytes), {}};
  }
  BodyPlan plan{false,
                IsInlineSubmission(header) ? options_.inline_body_limit : options_.json_body_limit,
                {}};
  if (std::optional<Response> file = ConsoleFileAnswer(header)) {
    plan.answer = std::move(file);
    plan.answer_keeps_connection = true;
    return plan;
  }
  // A body is read only for a caller whose token holds: a refused one is
  // answered from its header.
  const std::string_view length = header[http::field::content_length];
  const bool framed = !header[http::field::transfer_encoding].empty();
  if (!framed && (length.empty() || length == "0")) return plan;
  Result<Target> parsed = ParseTarget(target);
  if (!parsed.ok()) return plan;
  auto match = router_.Find(header.method_string(), parsed->path);
  if (match.handler == nullptr || !match.handler->authenticated) return plan;
  Result<service::CallContext> ctx = Authenticate(header);
  if (!ctx.ok()) {
    plan.answer =
        AuthRefusal(header, match.pattern, ctx.status(), std::chrono::steady_clock::now());
  } else {
    plan.context = std::move(*ctx);  // Dispatch does not verify the token again
  }
  return plan;
}

std::string RequestIdOf(const RequestHeader& header) {
  const std::string_view given = header["Request-Id"];
  const bool valid =
      !given.empty() && given.size() <= 128 && std::all_of(given.begin(), given.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("-_.:+/=").find(c) != std::string_view::npos;
      });
  return valid ? std::string(given) : NewUlidString();
}

Result<std::string> OneHeader(const RequestHeader& header, std::string_view name) {
  auto range = header.equal_range(name);
  if (range.first == range.second) return std::string();
  if (std::next(range.first) != range.second) {
    return Status::InvalidArgument("send one " + std::string(name) + " header, not several");
  }
  return std::string(range.first->value());
}

std::string MediaType(const RequestHeader& header) {
  std::string_view type = header[http::field::content_type];
  type = type.substr(0, type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  while (!type.empty() && (type.front() == ' ' || type.front() == '\t')) type.remove_prefix(1);
  std::string media(type);
  for (char& c : media) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return media;
}

// A run submission carrying its data (the one route whose body may be CSV or
// JSON Lines rather than one JSON document).
bool Api::IsInlineSubmission(const RequestHeader& header) {
  const std::string_view target = header.target();
  const std::string_view path = target.substr(0, target.find('?'));
  if (header.method() != http::verb::post || path.substr(0, 14) != "/v1/pipelines/" ||
      path.size() <= 19 || path.substr(path.size() - 5) != "/runs") {
    return false;
  }
  const std::string media = MediaType(header);
  return media == "text/csv" || media == "application/x-ndjson";
}

Response Api::Handle(const Request& request, ChunkedBody& out, const std::any& context) {
  return Guarded(request.base(),
                 [&] { return Dispatch(request.base(), request.body(), nullptr, &out, context); });
}

Response Api::HandleStream(const RequestHeader& header, ByteSource& body, const std::any& context) {
  static const std::string kNoBody;
  return Guarded(header, [&] { return Dispatch(header, kNoBody, &body, nullptr, context); });
}

// No exception leaves a handler thread (it would end the process): one is
// a bug, answered 500.
Response Api::Guarded(const RequestHeader& header, const std::function<Response()>& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Finish(header, "(error)", nullptr,
                  Problem(Status::Internal(std::string("unexpected: ") + e.what())),
                  std::chrono::steady_clock::now());
  }
}

Response Api::Refuse(const RequestHeader& header, http::status status, const Status& why) {
  const auto start = std::chrono::steady_clock::now();
  Response r =
      JsonResponse(static_cast<int>(status), ProblemDocument(why, static_cast<int>(status)));
  r.set(http::field::content_type, "application/problem+json");
  SetRetryAfter(why, r);
  return Finish(header, "(refused)", nullptr, std::move(r), start);
}

Response Api::AuthRefusal(const RequestHeader& header, std::string_view route, const Status& s,
                          std::chrono::steady_clock::time_point start) {
  Response r = Problem(s);
  r.set(http::field::www_authenticate, s.Is(ErrorCode::kUnauthenticated)
                                           ? "Bearer realm=\"loam\", error=\"invalid_token\""
                                           : "Bearer realm=\"loam\"");
  return Finish(header, route, nullptr, std::move(r), start);
}

Response Api::Dispatch(const RequestHeader& header, const std::string& body, ByteSource* stream,
                       ChunkedBody* out, const std::any& context) {
  const auto start = std::chrono::steady_clock::now();
  Result<Target> target = ParseTarget(header.target());
  if (!target.ok()) return Finish(header, "(unmatched)", nullptr, Problem(target.status()), start);
  auto match = router_.Find(header.method_string(), target->path);
  if (match.handler == nullptr) {
    if (!match.path_known) {
      return Finish(header, "(unmatched)", nullptr,
                    Problem(Status::NotFound("no route " + target->path)), start);
    }
    Response r = Problem(Status::InvalidArgument(std::string(header.method_string()) +
                                                 " is not allowed on " + target->path)
                             .WithErrorCode(ErrorCode::kMethodNotAllowed));
    r.set(http::field::allow, router_.Allowed(target->path));
    return Finish(header, match.pattern, nullptr, std::move(r), start);
  }
  // Copying, comparing and printing a document recurse per level: deep
  // bodies are refused before any parse.
  if (stream == nullptr && !IsInlineSubmission(header) &&
      JsonNestingDepth(body) > options_.max_json_depth) {
    return Finish(
        header, match.pattern, nullptr,
        Problem(Status::InvalidArgument("the request body nests deeper than " +
                                        std::to_string(options_.max_json_depth) + " levels")),
        start);
  }
  Call call{header,
            body,
            stream,
            out,
            std::move(*target),
            std::move(match.params),
            {},
            {},
            {},
            RequestIdOf(header),
            match.pattern,
            start};
  if (match.handler->authenticated) {
    if (const auto* verified = std::any_cast<service::CallContext>(&context)) {
      call.ctx = *verified;
    } else {
      Result<service::CallContext> ctx = Authenticate(header);
      if (!ctx.ok()) return AuthRefusal(header, match.pattern, ctx.status(), start);
      call.ctx = std::move(*ctx);
    }
  }
  // After the token: a caller without one learns nothing of a route's parameters.
  if (Status names = CheckQueryNames(call.target.query, match.handler->query); !names.ok()) {
    return Finish(header, match.pattern, &call, Problem(names), start);
  }
  Response r = match.handler->keyed ? WithOperationKey(call, match.handler->fn)
                                    : (this->*(match.handler->fn))(call);
  if (call.parked) return r;  // ignored: the parked answer is sealed when it goes
  return Finish(header, match.pattern, &call, std::move(r), start);
}

Result<service::CallContext> Api::Authenticate(const RequestHeader& header) const {
  auto range = header.equal_range(http::field::authorization);
  if (range.first == range.second) {
    return Status::Unauthenticated("this route needs Authorization: Bearer <token>");
  }
  if (std::next(range.first) != range.second) {
    return Status::Unauthenticated("more than one Authorization header");
  }
  const std::string_view value = range.first->value();
  if (value.size() < 7 || (value.substr(0, 7) != "Bearer " && value.substr(0, 7) != "bearer ")) {
    return Status::Unauthenticated("the Authorization header must be \"Bearer <token>\"");
  }
  const int64_t now = Clock::System()->NowMicros() / 1'000'000;
  ASSIGN_OR_RETURN(JwtClaims claims, options_.verifier->Verify(value.substr(7), now));
  if (claims.workspace != svc_->workspace_id()) {
    return Status::Unauthenticated("bearer token is for workspace '" + claims.workspace +
                                   "', not this one ('" + svc_->workspace_id() + "')");
  }
  return service::CallContext{svc_->workspace_id(), claims.subject};
}

Response Api::Problem(const Status& s) {
  const int status = HttpStatusFor(s.error_code());
  Response r = JsonResponse(status, ProblemDocument(s, status));
  r.set(http::field::content_type, "application/problem+json");
  if (const int64_t secs = SetRetryAfter(s, r); secs > 0) {
    const std::string limit(s.detail("limit"));
    if (s.Is(ErrorCode::kOverloaded) && !limit.empty()) {
      metrics_.Overloaded(limit);
      // The limit's value travels with the refusal (a pipeline's own
      // concurrency limit included), so the policy is never rebuilt here.
      std::string policy = "\"" + limit + "\";q=" + std::string(s.detail("quota"));
      if (const std::string_view w = s.detail("windowSeconds"); !w.empty()) {
        policy += ";w=" + std::string(w);
      }
      r.set("RateLimit-Policy", policy);
      r.set("RateLimit", "\"" + limit + "\";r=0;t=" + std::to_string(secs));
    }
  }
  return r;
}

int64_t Api::SetRetryAfter(const Status& s, Response& r) {
  const std::string_view retry_ms = s.detail("retryAfterMillis");
  if (retry_ms.empty()) return 0;
  const int64_t ms = std::atoll(std::string(retry_ms).c_str());
  const int64_t secs = std::max<int64_t>(1, (ms + 999) / 1000);
  r.set(http::field::retry_after, std::to_string(secs));
  return secs;
}

Response Api::Finish(const RequestHeader& header, std::string_view route, Call* call, Response r,
                     std::chrono::steady_clock::time_point start) {
  AnswerFacts facts{std::string(header.method_string()), std::string(route), {}, {}, {}, {}, start};
  // A streamed answer's head went out with its id (the route set it).
  facts.request_id = call != nullptr ? call->request_id : RequestIdOf(header);
  if (call != nullptr) {
    facts.principal = call->ctx.principal;
    facts.run_id = call->run_id;
    facts.cut_short = call->cut_short;
  }
  return Seal(facts, std::move(r));
}

Response Api::Seal(const AnswerFacts& facts, Response r) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - facts.start).count();
  const int status = static_cast<int>(r.result_int());
  // Methods are the client's text: unknown ones share one label.
  static const std::set<std::string_view> kMethods = {"GET",   "HEAD",   "POST",   "PUT",
                                                      "PATCH", "DELETE", "OPTIONS"};
  const std::string_view method =
      kMethods.count(facts.method) ? std::string_view(facts.method) : std::string_view("other");
  metrics_.ObserveRequest(method, facts.route, status, seconds);
  r.set("Request-Id", facts.request_id);
  if (r[http::field::content_type] == "application/problem+json") {
    json doc = json::parse(r.body(), nullptr, false);
    if (doc.is_object()) {
      doc["requestId"] = facts.request_id;
      r.body() = doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    }
  }
  if (options_.access_log) {
    json line = {{"time", Rfc3339(Clock::System()->NowMicros())},
                 {"method", facts.method},
                 {"route", facts.route},
                 {"status", status},
                 {"latencyMs", seconds * 1000},
                 {"requestId", facts.request_id}};
    if (!facts.principal.empty()) line["principal"] = facts.principal;
    if (!facts.run_id.empty()) line["runId"] = facts.run_id;
    if (!facts.cut_short.empty()) line["cutShort"] = facts.cut_short;
    options_.access_log(line.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return r;
}

}  // namespace loam::server
