// The ingestion service in process: pipelines, loads submitted exactly once
// (one run per idempotency key), a shared queue worked by background
// threads or by the caller, cancel and revert — what `loam serve` offers
// over HTTP (docs/service.md), without HTTP.
//
//   auto svc = loam::Service::Start(*ws, {.workers = 2, .upload_secret = secret});
//   auto id = (*svc)->CreatePipeline(
//       R"({"name":"events","table":"events","mode":"append","format":"csv"})");
//   auto run = (*svc)->Submit(*id, "day-1", "text/csv", "id,what\n1,a\n");
//   ... (*svc)->GetRun(run->id) until run->terminal ...
//
// Every call acts as the Workspace's principal and is checked as the HTTP
// API checks it (grants, limits, admission). Several processes may run a
// service over one workspace: they share its queue through the store.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"
#include "loam/run.h"
#include "loam/status.h"
#include "loam/workspace.h"

namespace loam {

struct ServiceOptions {
  // Threads that take queued runs; 0: none (call WorkOnce, or let another
  // process's service work the shared queue). Either way a thread of the
  // service cleans finished runs' inputs and sweeps expired records.
  int workers = 2;
  // Local workspaces: the secret (32 bytes or more) that signs upload
  // tokens; unused on s3:// (uploads are presigned).
  std::string upload_secret;
};

class Service {
 public:
  // Fails when the workspace has no id (made before ids existed) or the
  // upload secret is missing or short on a local workspace. The Workspace
  // must outlive the Service.
  static Result<std::unique_ptr<Service>> Start(Workspace& ws, const ServiceOptions& options = {});
  ~Service();  // Stop()
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  // A pipeline from its JSON document, as POST /v1/pipelines takes it
  // (docs/service.md: name, table, mode, keyColumns, format, ...); returns
  // its id.
  Result<std::string> CreatePipeline(std::string_view spec_json);
  // A load whose data the call carries (`content_type` text/csv or
  // application/x-ndjson), queued as a run of the pipeline. The same key
  // with the same bytes returns the first run (exactly once); with other
  // bytes, idempotency_key_reused. `source_id` ("" = none) names what the
  // data is, so the same source is not loaded twice (source_already_loaded).
  // Large files load best through loam/load.h.
  Result<RunInfo> Submit(const std::string& pipeline_id, const std::string& idempotency_key,
                         const std::string& content_type, std::string_view data,
                         const std::string& source_id = "");
  Result<RunInfo> GetRun(const std::string& run_id);
  // Every error the run kept (RunInfo::error_count of them), in input order.
  Result<std::vector<RunInfo::Error>> RunErrors(const std::string& run_id);
  // The runs of `pipeline_id` ("" = every pipeline) the principal may see,
  // newest first, at most `limit` (1..1000).
  Result<std::vector<RunInfo>> ListRuns(const std::string& pipeline_id = "", int limit = 100);
  // A queued run only (precondition_failed once a worker has started it).
  Result<RunInfo> CancelRun(const std::string& run_id);
  // One new commit that undoes the succeeded run (docs/service.md, revert).
  Result<Commit> RevertRun(const std::string& run_id);

  // Runs the oldest due run of the queue to its end in the calling thread;
  // false when none was due.
  Result<bool> WorkOnce();
  // Stops taking runs and lets the running ones finish; queued runs stay
  // queued for the next service.
  void Stop();

  struct Rep;

 private:
  explicit Service(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace loam
