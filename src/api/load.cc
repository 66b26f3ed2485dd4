#include "loam/load.h"

#include <filesystem>

#include "api/workspace_access.h"
#include "common/status_macros.h"
#include "ingest/csv_reader.h"
#include "ingest/loader.h"

namespace loam {
namespace {

// The public request as the run pipeline's own: the same fields every
// client (the CLI, the service) fills, so a load here is the same run.
Result<ingest::RunRequest> RunRequestOf(const Workspace& ws, const LoadRequest& l) {
  ingest::RunRequest r;
  r.table = l.table;
  r.branch = internal::EngineBranch(l.branch);
  r.mode = l.mode == LoadMode::kUpsert    ? ingest::LoadMode::kUpsert
           : l.mode == LoadMode::kReplace ? ingest::LoadMode::kReplace
                                          : ingest::LoadMode::kAppend;
  r.keys = l.keys;
  if (l.format == LoadFormat::kCsv) r.format = ingest::InputFormat::kCsv;
  if (l.format == LoadFormat::kJsonLines) r.format = ingest::InputFormat::kJsonLines;
  for (const std::string& file : l.files) {
    std::error_code ec;
    r.files.push_back(std::filesystem::absolute(file, ec).lexically_normal().string());
  }
  for (const std::string& c : l.coercions) RETURN_NOT_OK(r.policy.AddFlag(c));
  r.error_policy = l.bad_rows == BadRows::kSkipRows         ? ingest::ErrorPolicy::kSkipRows
                   : l.bad_rows == BadRows::kValidationOnly ? ingest::ErrorPolicy::kValidationOnly
                                                            : ingest::ErrorPolicy::kFailRun;
  if (l.max_rejected_rows < 0 || l.max_rejected_rows > (int64_t{1} << 40)) {
    return Status::InvalidArgument("LoadRequest::max_rejected_rows must be 0 to 2^40");
  }
  r.max_rejected_rows = l.max_rejected_rows;
  r.idempotency_key = l.idempotency_key;
  r.principal = internal::WorkspaceAccess::Principal(ws);
  RETURN_NOT_OK(
      ingest::CheckCsvDelimiter(std::string(1, l.csv_delimiter), "LoadRequest::csv_delimiter"));
  r.limits.csv_delimiter = l.csv_delimiter;
  r.expected_table_version = l.expected_table_version;
  return r;
}

LoadResult ResultOf(const ingest::RunRecord& rec, bool reused) {
  LoadResult out;
  out.run_id = rec.id;
  out.state = std::string(ingest::RunStateName(rec.state));
  out.reused = reused;
  out.rows_read = rec.counters.rows_read;
  out.inserted = rec.counters.inserted;
  out.updated = rec.counters.updated;
  out.unchanged = rec.counters.unchanged;
  out.deleted = rec.counters.deleted;
  out.rejected = rec.counters.rejected;
  out.error_code = rec.error_code;
  out.error = rec.error;
  for (const ingest::RunError& e : rec.errors) out.row_errors.push_back(e.file + ": " + e.reason);
  out.workspace_version = rec.manifest_version;
  out.table_version = rec.table_version;
  out.commit_id = rec.commit_id;
  return out;
}

}  // namespace

Result<LoadResult> Load(Workspace& ws, const LoadRequest& request,
                        const std::function<void(const LoadProgress&)>& progress) {
  ASSIGN_OR_RETURN(ingest::RunRequest run, RunRequestOf(ws, request));
  ingest::LoaderOptions options;
  // The embedding program chose the policy in its request.
  options.skip_rows_enabled = true;
  if (progress) {
    options.on_progress = [&progress](const ingest::RunRecord& r) {
      progress({r.id, std::string(ingest::RunStateName(r.state)), r.counters.rows_read,
                r.counters.bytes_read});
    };
  }
  ingest::Loader loader(internal::WorkspaceAccess::Shared(ws), options);
  bool reused = false;
  ASSIGN_OR_RETURN(ingest::RunRecord rec, loader.Run(run, &reused));
  return ResultOf(rec, reused);
}

}  // namespace loam
