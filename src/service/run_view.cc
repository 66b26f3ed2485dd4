#include "service/run_view.h"

namespace loam::service {

std::vector<RunInfo::Error> ErrorsOf(const std::vector<ingest::RunError>& errors) {
  std::vector<RunInfo::Error> out;
  out.reserve(errors.size());
  for (const ingest::RunError& e : errors) {
    out.push_back({e.file, e.reason, e.line, e.offset, e.column, e.code});
  }
  return out;
}

nlohmann::json RunErrorJson(const RunInfo::Error& e) {
  nlohmann::json j = {{"file", e.file}, {"reason", e.reason}};
  if (!e.code.empty()) j["code"] = e.code;
  if (e.line > 0) j["line"] = e.line;
  if (e.offset >= 0) j["offset"] = e.offset;
  if (!e.column.empty()) j["column"] = e.column;
  return j;
}

RunInfo ViewOf(const ingest::RunRecord& run) {
  RunInfo v;
  v.id = run.id;
  v.state = std::string(ingest::RunStateName(run.state));
  v.terminal = ingest::IsTerminal(run.state);
  v.pipeline_id = run.pipeline_id;
  v.table = run.table;
  if (Result<ingest::RunRequest> req = ingest::RunRequest::FromJson(run.request); req.ok()) {
    v.mode = std::string(ingest::LoadModeName(req->mode));
    v.submitted_by = req->principal;
  }
  v.validation_only = run.validation_only;
  v.uploads = run.uploads;
  v.input_bytes = run.input_bytes;
  v.source_id = run.source_id;
  v.source_reload = run.source_reload;
  const ingest::RunCounters& c = run.counters;
  v.counters = {c.rows_read, c.inserted, c.updated, c.unchanged, c.deleted, c.rejected};
  v.errors = ErrorsOf(run.errors);
  v.error_count = run.error_count;
  v.error_code = run.error_code;
  v.error = run.error;
  v.created_micros = run.created_micros;
  v.started_micros = run.started_micros;
  v.validated_micros = run.validated_micros;
  v.finished_micros = run.finished_micros;
  v.commit_id = run.commit_id;
  v.manifest_version = run.manifest_version;
  v.table_version = run.table_version;
  v.cancel_requested_by = run.cancel_requested_by;
  v.cancel_requested_micros = run.cancel_requested_micros;
  return v;
}

Result<ingest::RunState> ParseRunState(std::string_view name) {
  std::string names;
  for (int s = 0; s <= static_cast<int>(ingest::RunState::kCancelled); ++s) {
    const auto state = static_cast<ingest::RunState>(s);
    if (ingest::RunStateName(state) == name) return state;
    names += (names.empty() ? "" : ", ") + std::string(ingest::RunStateName(state));
  }
  return Status::InvalidArgument("unknown run state '" + std::string(name) + "' (one of " + names +
                                 ")");
}

}  // namespace loam::service
