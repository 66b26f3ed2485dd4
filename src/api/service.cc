#include "loam/service.h"

#include "api/workspace_access.h"
#include "common/status_macros.h"
#include "service/service.h"

namespace loam {

struct Service::Rep {
  std::unique_ptr<service::Service> svc;
  service::CallContext ctx;
};

Service::Service(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

Service::~Service() { Stop(); }

Result<std::unique_ptr<Service>> Service::Start(Workspace& ws, const ServiceOptions& options) {
  if (options.workers < 0) return Status::InvalidArgument("workers must be 0 or more");
  service::ServiceOptions so;
  so.workers = options.workers;
  so.upload_secret = options.upload_secret;
  auto rep = std::make_unique<Rep>();
  const std::shared_ptr<WorkspaceEngine>& engine = internal::WorkspaceAccess::Shared(ws);
  ASSIGN_OR_RETURN(rep->svc, service::Service::Open(engine, std::move(so)));
  rep->ctx = {engine->id(), internal::WorkspaceAccess::Principal(ws)};
  // With no workers only the service's own upkeep runs (the cleaner of
  // finished runs' inputs, the sweeps of expired records and staging).
  rep->svc->StartWorkers();
  return std::unique_ptr<Service>(new Service(std::move(rep)));
}

Result<std::string> Service::CreatePipeline(std::string_view spec_json) {
  ASSIGN_OR_RETURN(service::Pipeline p, rep_->svc->CreatePipeline(rep_->ctx, spec_json));
  return p.id;
}

Result<RunInfo> Service::Submit(const std::string& pipeline_id, const std::string& idempotency_key,
                                const std::string& content_type, std::string_view data,
                                const std::string& source_id) {
  service::InlineLoad load;
  load.content_type = content_type;
  load.data = data;
  load.source_id = source_id;
  ASSIGN_OR_RETURN(service::Submission sub,
                   rep_->svc->SubmitInline(rep_->ctx, pipeline_id, idempotency_key, load));
  return std::move(sub.run);
}

Result<RunInfo> Service::GetRun(const std::string& run_id) {
  ASSIGN_OR_RETURN(service::RunStatus status, rep_->svc->GetRun(rep_->ctx, run_id));
  return std::move(status.run);
}

Result<std::vector<RunInfo::Error>> Service::RunErrors(const std::string& run_id) {
  return rep_->svc->RunErrors(rep_->ctx, run_id);
}

Result<std::vector<RunInfo>> Service::ListRuns(const std::string& pipeline_id, int limit) {
  service::RunFilter filter;
  filter.pipeline_id = pipeline_id;
  filter.limit = limit;
  std::vector<RunInfo> runs;
  // A page may hold fewer runs than asked while more follow (the runs of
  // one LIST page the principal may not see): read on to the limit.
  do {
    ASSIGN_OR_RETURN(service::RunPage page, rep_->svc->ListRuns(rep_->ctx, filter));
    for (RunInfo& r : page.runs) runs.push_back(std::move(r));
    filter.cursor = page.next_cursor;
    filter.limit = limit - static_cast<int>(runs.size());
  } while (!filter.cursor.empty() && filter.limit > 0);
  return runs;
}

Result<RunInfo> Service::CancelRun(const std::string& run_id) {
  return rep_->svc->CancelRun(rep_->ctx, run_id);
}

Result<Commit> Service::RevertRun(const std::string& run_id) {
  ASSIGN_OR_RETURN(WriteResult w, rep_->svc->RevertRun(rep_->ctx, run_id));
  return internal::CommitOf(w);
}

Result<bool> Service::WorkOnce() { return rep_->svc->RunWorkerOnce(); }

void Service::Stop() {
  if (rep_ && rep_->svc) rep_->svc->Stop();
}

}  // namespace loam
