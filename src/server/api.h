// Api: the HTTP API of `loam serve` (docs/server.md, docs/openapi.yaml).
// Maps each route onto one Service call and nothing else: it authenticates
// the bearer token, reads the request's JSON or data, calls the service and
// writes its answer, or the error as an RFC 9457 problem with the stable
// code. Every request is counted in the metrics and written to the access
// log (never a token or row data).
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>

#include "loam/workspace.h"
#include "server/http_server.h"
#include "server/jwt.h"
#include "server/metrics.h"
#include "server/router.h"
#include "server/run_waiters.h"
#include "service/service.h"

namespace loam::server {

// Bounds of one SQL statement (POST /v1/sql; docs/sql.md, "Limits").
struct SqlLimits {
  int64_t time_budget_millis = 30'000;
  int64_t max_rows = 1'000'000;  // and the largest `limit` a request may ask for
  int64_t max_value_bytes = 64 << 20;
};

struct ApiOptions {
  std::shared_ptr<JwtVerifier> verifier;  // required
  // Where clients reach this server ("http://127.0.0.1:8080"): the base of
  // local upload URLs.
  std::string public_url;
  uint64_t json_body_limit = 1 << 20;
  int max_json_depth = 32;               // deeper request bodies are refused unparsed
  uint64_t inline_body_limit = 8 << 20;  // data sent with a submission
  // A rows answer up to this size goes whole (Content-Length); a larger one
  // in chunks of about this size as the scan produces them.
  size_t rows_chunk = 256 << 10;
  // Streamed (chunked) answers one principal reads at once; more are 429.
  int max_streams_per_principal = 2;
  std::string openapi_json;  // served at /v1/openapi.json
  // The tables POST /v1/sql reads (the workspace the service runs on);
  // nullptr: the route answers 501.
  std::shared_ptr<const Workspace> workspace;
  SqlLimits sql;
  // One JSON line per request; nullptr: no access log.
  std::function<void(const std::string&)> access_log;
  // Requests being served now (the in-flight gauge).
  std::function<int64_t()> in_flight;
  // GET /v1/runs/{id}?wait=N: the longest wait a request may ask for, and
  // how often a waited run is read again (runs another process finishes).
  int64_t max_run_wait_seconds = 60;
  std::chrono::milliseconds run_wait_poll{1000};
};

// The request's id: the client's Request-Id when it is 1 to 128 characters
// of letters, digits and - _ . : + / =, else a new ULID. Every answer
// carries it, as does its access-log line and its problem body.
std::string RequestIdOf(const RequestHeader& header);

// The media type of a request's Content-Type, lower-cased and without its
// parameters ("Text/CSV; charset=utf-8" is "text/csv"); "" when absent.
std::string MediaType(const RequestHeader& header);

// The value of a header a request may send at most once ("" when absent);
// InvalidArgument when sent twice (Idempotency-Key, If-Match).
Result<std::string> OneHeader(const RequestHeader& header, std::string_view name);

class Api : public HttpHandler {
 public:
  Api(service::Service* service, ApiOptions options);

  BodyPlan PlanBody(const RequestHeader& header) override;
  // `context`: the caller PlanBody verified, if it did.
  Response Handle(const Request& request, ChunkedBody& out, const std::any& context) override;
  Response HandleStream(const RequestHeader& header, ByteSource& body,
                        const std::any& context) override;
  Response Refuse(const RequestHeader& header, http::status status, const Status& why) override;

  ServerMetrics& metrics() { return metrics_; }
  // A run of this process changed state: requests waiting for it hear now.
  void RunChanged(const std::string& run_id) { waiters_.Changed(run_id); }
  // Before the HTTP server drains: every waiting request is answered now.
  void StopWaiting() { waiters_.Stop(); }
  // Requests parked until their run ends (GET /v1/runs/{id}?wait=N).
  size_t parked_requests() const { return waiters_.parked(); }
  // Before serving: the base of local upload URLs.
  void set_public_url(std::string url) { options_.public_url = std::move(url); }

 private:
  // What a route handler gets.
  struct Call {
    const RequestHeader& header;
    const std::string& body;  // "" for streamed requests
    ByteSource* stream;       // streamed requests only
    ChunkedBody* out;         // nullptr for streamed requests
    Target target;
    std::map<std::string, std::string> params;
    service::CallContext ctx;  // empty for routes without a bearer token
    std::string run_id;        // for the access log
    std::string cut_short;     // a chunked answer that ended early: the error code
    std::string request_id;    // RequestIdOf the request: on the answer, in the log
    std::string_view route;    // the matched pattern (metrics, access log)
    std::chrono::steady_clock::time_point start;
    bool parked = false;  // the answer goes later, through a LaterAnswer
  };
  // What an answer's metrics and access-log line say of its request.
  struct AnswerFacts {
    std::string method;
    std::string route;
    std::string request_id;
    std::string principal;
    std::string run_id;
    std::string cut_short;
    std::chrono::steady_clock::time_point start;
  };
  using RouteFn = Response (Api::*)(Call&);
  struct RouteSpec {
    RouteFn fn;
    bool authenticated;
    std::vector<std::string> query;  // the query parameters it takes; any other is 400
    bool keyed = false;              // takes Idempotency-Key: a retry with it gets the first answer
  };

  void AddRoutes();
  // `fn`'s answer under the request's Idempotency-Key, if it has one
  // (service::OperationKeyStore): a replay answers the kept answer.
  Response WithOperationKey(Call& c, RouteFn fn);
  Response Dispatch(const RequestHeader& header, const std::string& body, ByteSource* stream,
                    ChunkedBody* out, const std::any& context);
  Response Guarded(const RequestHeader& header, const std::function<Response()>& fn);
  static bool IsInlineSubmission(const RequestHeader& header);
  Result<service::CallContext> Authenticate(const RequestHeader& header) const;
  // The problem answer for `s` (and its Retry-After / RateLimit fields).
  Response Problem(const Status& s);
  // The Retry-After field for a refusal with "retryAfterMillis"; its seconds, or 0.
  static int64_t SetRetryAfter(const Status& s, Response& r);
  // A refused token's answer (401 or 403, with WWW-Authenticate).
  Response AuthRefusal(const RequestHeader& header, std::string_view route, const Status& s,
                       std::chrono::steady_clock::time_point start);
  Response Finish(const RequestHeader& header, std::string_view route, Call* call, Response r,
                  std::chrono::steady_clock::time_point start);
  // Counts, logs and labels (Request-Id) an answer.
  Response Seal(const AnswerFacts& facts, Response r);

  // Routes (api_routes.cc, api_runs.cc).
  Response Healthz(Call& c);
  Response Readyz(Call& c);
  Response Metrics(Call& c);
  Response OpenApi(Call& c);
  // The web console's files (console.cc). ConsoleFileAnswer answers a GET
  // of one without a query on the I/O thread (PlanBody): fixed bytes wait on
  // nothing, so the console answers while every handler thread is busy.
  Response RedirectToConsole(Call& c);
  Response ServeConsole(Call& c);
  std::optional<Response> ConsoleFileAnswer(const RequestHeader& header);
  Response ConsoleFileNamed(const RequestHeader& header, const std::string& name);
  Response GetLimits(Call& c);
  Response GetUsage(Call& c);
  Response CreateTable(Call& c);
  Response ListTables(Call& c);
  Response GetTable(Call& c);
  Response GetRows(Call& c);
  Response GetHistory(Call& c);
  Response PutGrant(Call& c);
  Response DeleteGrant(Call& c);
  Response CreatePipeline(Call& c);
  Response ListPipelines(Call& c);
  Response GetPipeline(Call& c);
  Response PatchPipeline(Call& c);
  Response DeletePipeline(Call& c);
  Response CreateUpload(Call& c);
  Response PutUpload(Call& c);
  Response GetUpload(Call& c);
  Response SubmitRun(Call& c);
  Response SubmitDelete(Call& c);
  // A submission's answer: 202 with the run, its Location, and whether
  // the key replayed an earlier request.
  Response Submitted(Call& c, const Result<service::Submission>& sub);
  Response ListRuns(Call& c);
  Response GetRun(Call& c);
  Response GetRunErrors(Call& c);
  Response CancelRun(Call& c);
  Response RevertRun(Call& c);
  Response RunSql(Call& c);  // api_sql.cc
  // api_branches.cc
  Response ListBranches(Call& c);
  Response GetBranch(Call& c);
  Response CreateBranch(Call& c);
  Response DeleteBranch(Call& c);
  Response PatchBranch(Call& c);
  Response MergeBranch(Call& c);
  Response RevertMerge(Call& c);

  // A principal's place among its streamed answers, held until destroyed.
  class StreamSlot {
   public:
    StreamSlot(Api* api, std::string principal) : api_(api), principal_(std::move(principal)) {}
    ~StreamSlot();
    StreamSlot(const StreamSlot&) = delete;
    StreamSlot& operator=(const StreamSlot&) = delete;
    // OK and held, or `overloaded` (limit maxRowStreamsPerPrincipal).
    Status Take();

   private:
    Api* api_;
    std::string principal_;
    bool held_ = false;
  };

  service::Service* svc_;
  ApiOptions options_;
  std::mutex streams_mu_;
  std::map<std::string, int> streams_per_principal_;
  ServerMetrics metrics_;
  Router<RouteSpec> router_;
  RunWaiters waiters_;  // last: stopped before what its answers use
};

// Shared by the route files.
Response JsonResponse(int status, const nlohmann::json& body);
Response EmptyResponse(int status);
nlohmann::json RunJson(const RunInfo& run, int64_t queue_position = -1);
std::string Rfc3339(int64_t micros);

}  // namespace loam::server
