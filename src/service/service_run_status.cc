// Service: a run's status, its errors, and cancel (of a queued run here;
// of a started one through its record, which its worker reads).
#include "common/clock.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "service/run_view.h"
#include "service/service.h"

namespace loam::service {

using ingest::RunRecord;
using ingest::RunState;

Result<RunRecord> Service::ReadableRun(const CallContext& ctx, const std::string& run_id) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (!Ulid::Parse(run_id).ok()) return Status::NotFound("no run '" + run_id + "'");
  ASSIGN_OR_RETURN(RunRecord run, loader_->runs().Get(run_id));
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(run.request));
  if (req.principal != ctx.principal) {
    RETURN_NOT_OK(AuthorizeRead(run.table_sid, ctx.principal, req.branch));
  }
  return run;
}

Result<std::vector<RunInfo::Error>> Service::RunErrors(const CallContext& ctx,
                                                       const std::string& run_id) {
  ASSIGN_OR_RETURN(RunRecord run, ReadableRun(ctx, run_id));
  ASSIGN_OR_RETURN(std::vector<ingest::RunError> errors, loader_->runs().GetErrors(run));
  return ErrorsOf(errors);
}

Result<RunStatus> Service::GetRun(const CallContext& ctx, const std::string& run_id) {
  ASSIGN_OR_RETURN(RunRecord run, ReadableRun(ctx, run_id));
  RunStatus out{ViewOf(run), -1};
  if (run.state == RunState::kQueued) {
    ASSIGN_OR_RETURN(out.queue_position, QueuePosition(run_id));
  }
  return out;
}

Result<RunInfo> Service::RequestCancel(const CallContext& ctx, const std::string& run_id) {
  Result<RunRecord> asked =
      loader_->runs().RequestCancel(run_id, ctx.principal, options_.clock->NowMicros());
  if (asked.status().IsAborted()) {
    return Status::Conflict("run " + run_id +
                            " kept changing while its cancel was recorded; ask again");
  }
  RETURN_NOT_OK(asked.status());
  return ViewOf(*asked);
}

Result<RunInfo> Service::CancelRun(const CallContext& ctx, const std::string& run_id) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (!Ulid::Parse(run_id).ok()) return Status::NotFound("no run '" + run_id + "'");
  std::string etag;
  ASSIGN_OR_RETURN(RunRecord run, loader_->runs().Get(run_id, &etag));
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(run.request));
  if (req.principal != ctx.principal && req.mode == ingest::LoadMode::kDelete) {
    // A delete: anyone who may delete from its table.
    ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(req.branch));
    const TableState* t = snap.FindSid(run.table_sid);
    if (t == nullptr)
      return Status::NotFound("the table run " + run_id + " deletes from was dropped");
    RETURN_NOT_OK(ws_->Authorize(snap, *t, ctx.principal, WriteMode::kDelete));
  } else if (req.principal != ctx.principal) {
    ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(run.pipeline_id));
    RETURN_NOT_OK(AuthorizeLoad(p, ctx.principal).status());
  }
  // Leases run on the wall clock (the loader's). A run a worker holds is
  // asked to stop: its worker ends it at its next check.
  if (run.state != RunState::kQueued || run.lease_expires_micros > Clock::System()->NowMicros()) {
    return RequestCancel(ctx, run_id);
  }
  run.state = RunState::kCancelled;
  run.finished_micros = options_.clock->NowMicros();
  run.error = "cancelled by " + ctx.principal;
  // Decide first: a cleanup entry written before a lost compare-and-swap
  // would delete the inputs of the run a worker just claimed. A crash after
  // the decision leaves the queue entry, whose removal writes the cleanup
  // entry first (the worker's queue pass).
  Status s = loader_->runs().Update(run, &etag);
  if (s.IsAborted()) return RequestCancel(ctx, run_id);  // a worker claimed it meanwhile
  RETURN_NOT_OK(s);
  // The run is cancelled whatever happens next; a cleanup entry that could
  // not be written now is written by the queue pass.
  if (Status cleanup = BeforeTerminal(run); !cleanup.ok()) {
    LOAM_LOG_WARN("run {} cancelled; its cleanup waits for the queue pass: {}", run_id,
                  cleanup.ToString());
  }
  Wake();  // a worker drops its queue entry
  return ViewOf(run);
}

}  // namespace loam::service
