#include "loam/load.h"

#include <filesystem>

#include "api/workspace_access.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "ingest/csv_reader.h"
#include "ingest/loader.h"
#include "ingest/row_deletes.h"
#include "service/run_view.h"

namespace loam {

using internal::WorkspaceAccess;

namespace {

// A size limit: set and positive, or the loader's default.
Status SizeLimit(const std::optional<int64_t>& value, const char* name, size_t* out) {
  if (!value) return Status::OK();
  if (*value <= 0) {
    return Status::InvalidArgument("LoadRequest::limits." + std::string(name) +
                                   " must be positive");
  }
  *out = static_cast<size_t>(*value);
  return Status::OK();
}

Status ApplyLimits(const LoadLimits& l, ingest::RunRequest* r) {
  RETURN_NOT_OK(SizeLimit(l.max_columns, "max_columns", &r->limits.max_columns));
  RETURN_NOT_OK(SizeLimit(l.max_field_bytes, "max_field_bytes", &r->limits.max_field_bytes));
  size_t depth = static_cast<size_t>(r->limits.max_json_depth);
  RETURN_NOT_OK(SizeLimit(l.max_json_depth, "max_json_depth", &depth));
  if (depth > 1'000'000)
    return Status::InvalidArgument("LoadRequest::limits.max_json_depth is at most 1000000");
  r->limits.max_json_depth = static_cast<int>(depth);
  size_t decoded = static_cast<size_t>(r->limits.decode.max_decoded_bytes);
  RETURN_NOT_OK(SizeLimit(l.max_decoded_bytes, "max_decoded_bytes", &decoded));
  r->limits.decode.max_decoded_bytes = decoded;
  if (l.max_expansion_ratio) {
    if (!(*l.max_expansion_ratio > 0)) {
      return Status::InvalidArgument("LoadRequest::limits.max_expansion_ratio must be positive");
    }
    r->limits.decode.max_expansion_ratio = *l.max_expansion_ratio;
  }
  if (l.max_rows) r->max_rows = *l.max_rows;
  if (l.time_budget_ms) r->time_budget_ms = *l.time_budget_ms;
  return Status::OK();
}

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
  if (!l.schema_policy_json.empty()) {
    ASSIGN_OR_RETURN(r.policy, ingest::SchemaPolicy::FromJson(l.schema_policy_json));
  }
  for (const std::string& c : l.coercions) RETURN_NOT_OK(r.policy.AddFlag(c));
  for (const std::string& m : l.column_map) RETURN_NOT_OK(r.policy.AddRenameFlag(m));
  RETURN_NOT_OK(ApplyLimits(l.limits, &r));
  r.error_policy = l.bad_rows == BadRows::kSkipRows         ? ingest::ErrorPolicy::kSkipRows
                   : l.bad_rows == BadRows::kValidationOnly ? ingest::ErrorPolicy::kValidationOnly
                                                            : ingest::ErrorPolicy::kFailRun;
  if (l.max_rejected_rows < 0 || l.max_rejected_rows > (int64_t{1} << 40)) {
    return Status::InvalidArgument("LoadRequest::max_rejected_rows must be 0 to 2^40");
  }
  r.max_rejected_rows = l.max_rejected_rows;
  if (l.max_errors < 1 || l.max_errors > ingest::RunRequest::kMaxErrorsCeiling) {
    return Status::InvalidArgument("LoadRequest::max_errors must be 1 to " +
                                   std::to_string(ingest::RunRequest::kMaxErrorsCeiling));
  }
  r.max_errors = l.max_errors;
  r.idempotency_key = l.idempotency_key;
  r.principal = internal::WorkspaceAccess::Principal(ws);
  RETURN_NOT_OK(CheckCsvDelimiter(std::string(1, l.csv_delimiter), "LoadRequest::csv_delimiter"));
  r.limits.csv_delimiter = l.csv_delimiter;
  ingest::CsvDialect& csv = r.limits.csv;
  csv.quote = l.csv.quote;
  csv.header = l.csv.header;
  csv.columns = l.csv.columns;
  csv.null_marker = l.csv.null_marker;
  csv.skip_lines = l.csv.skip_lines;
  csv.comment_prefix = l.csv.comment_prefix;
  RETURN_NOT_OK(csv.Check(l.csv_delimiter, r.limits.max_columns, "LoadRequest::csv"));
  if (!csv.IsDefault() && l.format == LoadFormat::kJsonLines) {
    return Status::InvalidArgument("LoadRequest::csv: the CSV options are for CSV input only");
  }
  r.expected_table_version = l.expected_table_version;
  return r;  // the loader refuses what its record could not read back
}

LoadResult ResultOf(const ingest::RunRecord& rec, bool reused) {
  LoadResult out;
  out.run_id = rec.id;
  out.state = std::string(ingest::RunStateName(rec.state));
  out.reused = reused;
  out.table = rec.table;
  // The mode as requested; a record whose request cannot be read says "".
  if (Result<ingest::RunRequest> req = ingest::RunRequest::FromJson(rec.request); req.ok()) {
    out.mode = std::string(ingest::LoadModeName(req->mode));
  }
  out.validation_only = rec.validation_only;
  out.rows_read = rec.counters.rows_read;
  out.bytes_read = rec.counters.bytes_read;
  out.inserted = rec.counters.inserted;
  out.updated = rec.counters.updated;
  out.unchanged = rec.counters.unchanged;
  out.deleted = rec.counters.deleted;
  out.rejected = rec.counters.rejected;
  out.error_code = rec.error_code;
  out.error = rec.error;
  for (const ingest::RunError& e : rec.errors) out.row_errors.push_back(e.file + ": " + e.reason);
  out.error_count = rec.error_count;
  out.workspace_version = rec.manifest_version;
  out.table_version = rec.table_version;
  out.commit_id = rec.commit_id;
  out.started_micros = rec.started_micros;
  out.finished_micros = rec.finished_micros;
  out.record_json = rec.ToJson();
  return out;
}

}  // namespace

namespace internal {

namespace {

// `run` carried to its end by a loader of this process.
Result<LoadResult> RunWith(Workspace& ws, const ingest::RunRequest& run, const LoadTuning& tuning,
                           uint64_t key_memory_bytes,
                           const std::function<void(const LoadProgress&)>& progress) {
  ingest::LoaderOptions options;
  if (tuning.lease_micros > 0) options.lease_micros = tuning.lease_micros;
  options.skip_rows_enabled = tuning.skip_rows_enabled;
  options.failpoint = tuning.failpoint;
  if (key_memory_bytes > 0) options.key_memory_bytes = key_memory_bytes;
  if (progress) {
    options.on_progress = [&progress](const ingest::RunRecord& r) {
      progress({r.id, std::string(ingest::RunStateName(r.state)), r.counters.rows_read,
                r.counters.bytes_read});
    };
  }
  ingest::Loader loader(WorkspaceAccess::Shared(ws), options);
  bool reused = false;
  ASSIGN_OR_RETURN(ingest::RunRecord rec, loader.Run(run, &reused));
  return ResultOf(rec, reused);
}

// The delete as the run pipeline's request.
Result<ingest::RunRequest> DeleteRunRequestOf(const Workspace& ws, const DeleteRequest& d) {
  ingest::RunRequest r;
  r.table = d.table;
  r.branch = internal::EngineBranch(d.branch);
  r.mode = ingest::LoadMode::kDelete;
  r.where = d.where;
  r.keys = d.key_columns;
  if (d.format == LoadFormat::kCsv) r.format = ingest::InputFormat::kCsv;
  if (d.format == LoadFormat::kJsonLines) r.format = ingest::InputFormat::kJsonLines;
  for (const std::string& file : d.key_files) {
    std::error_code ec;
    r.files.push_back(std::filesystem::absolute(file, ec).lexically_normal().string());
  }
  RETURN_NOT_OK(CheckCsvDelimiter(std::string(1, d.csv_delimiter), "DeleteRequest::csv_delimiter"));
  r.limits.csv_delimiter = d.csv_delimiter;
  if (d.max_keys) {
    if (*d.max_keys < 1 || *d.max_keys > ingest::kMaxDeleteKeys) {
      return Status::InvalidArgument("DeleteRequest::max_keys must be 1 to " +
                                     std::to_string(ingest::kMaxDeleteKeys));
    }
    r.max_rows = *d.max_keys;
  }
  if (d.max_errors < 1 || d.max_errors > ingest::RunRequest::kMaxErrorsCeiling) {
    return Status::InvalidArgument("DeleteRequest::max_errors must be 1 to " +
                                   std::to_string(ingest::RunRequest::kMaxErrorsCeiling));
  }
  r.max_errors = d.max_errors;
  if (d.validation_only) r.error_policy = ingest::ErrorPolicy::kValidationOnly;
  r.idempotency_key = d.idempotency_key;
  r.principal = internal::WorkspaceAccess::Principal(ws);
  r.expected_table_version = d.expected_table_version;
  return r;
}

}  // namespace

Result<LoadResult> LoadWith(Workspace& ws, const LoadRequest& request, const LoadTuning& tuning,
                            const std::function<void(const LoadProgress&)>& progress) {
  ASSIGN_OR_RETURN(ingest::RunRequest run, RunRequestOf(ws, request));
  return RunWith(ws, run, tuning, request.key_memory_bytes, progress);
}

Result<LoadResult> DeleteWith(Workspace& ws, const DeleteRequest& request, const LoadTuning& tuning,
                              const std::function<void(const LoadProgress&)>& progress) {
  ASSIGN_OR_RETURN(ingest::RunRequest run, DeleteRunRequestOf(ws, request));
  return RunWith(ws, run, tuning, 0, progress);
}

}  // namespace internal

Result<LoadResult> Load(Workspace& ws, const LoadRequest& request,
                        const std::function<void(const LoadProgress&)>& progress) {
  // The embedding program chose the bad-rows policy in its request.
  return internal::LoadWith(ws, request, internal::LoadTuning{}, progress);
}

Result<LoadResult> DeleteRows(Workspace& ws, const DeleteRequest& request,
                              const std::function<void(const LoadProgress&)>& progress) {
  return internal::DeleteWith(ws, request, internal::LoadTuning{}, progress);
}

Result<std::vector<LoadResult>> ListRuns(const Workspace& ws) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(std::vector<ingest::RunRecord> runs,
                   ingest::RunStore(engine.store(), engine.root()).List());
  std::vector<LoadResult> out;
  for (const ingest::RunRecord& r : runs) out.push_back(ResultOf(r, false));
  return out;
}

Result<LoadResult> GetRun(const Workspace& ws, const std::string& run_id) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(ingest::RunRecord r,
                   ingest::RunStore(engine.store(), engine.root()).Get(run_id));
  return ResultOf(r, false);
}

Result<std::vector<RunInfo::Error>> GetRunErrors(const Workspace& ws, const std::string& run_id) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  const ingest::RunStore runs(engine.store(), engine.root());
  ASSIGN_OR_RETURN(ingest::RunRecord r, runs.Get(run_id));
  ASSIGN_OR_RETURN(std::vector<ingest::RunError> errors, runs.GetErrors(r));
  return service::ErrorsOf(errors);
}

Result<LoadResult> CancelRun(const Workspace& ws, const std::string& run_id) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  const std::string& who = WorkspaceAccess::Principal(ws);
  if (!Ulid::Parse(run_id).ok()) return Status::NotFound("no run '" + run_id + "'");
  ingest::RunStore runs(engine.store(), engine.root());
  ASSIGN_OR_RETURN(ingest::RunRecord r, runs.Get(run_id));
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(r.request));
  if (req.principal != who) {
    ASSIGN_OR_RETURN(Snapshot snap, engine.Current(req.branch));
    const TableState* t = r.table_sid != 0 ? snap.FindSid(r.table_sid) : snap.Find(req.table);
    if (t == nullptr) {
      return Status::PermissionDenied("run " + run_id + " loads table '" + req.table +
                                      "', which is gone: only its submitter may cancel it");
    }
    RETURN_NOT_OK(engine.Authorize(snap, *t, who, WriteMode::kAppend));
  }
  const int64_t now = Clock::System()->NowMicros();
  ASSIGN_OR_RETURN(ingest::RunRecord asked, runs.RequestCancel(run_id, who, now));
  return ResultOf(asked, false);
}

Result<LoadFormat> ParseLoadFormat(std::string_view name) {
  ASSIGN_OR_RETURN(ingest::InputFormat f, ingest::ParseInputFormat(name));
  return f == ingest::InputFormat::kCsv ? LoadFormat::kCsv : LoadFormat::kJsonLines;
}

Result<BadRows> ParseBadRows(std::string_view name) {
  ASSIGN_OR_RETURN(ingest::ErrorPolicy p, ingest::ParseErrorPolicy(name));
  return p == ingest::ErrorPolicy::kSkipRows         ? BadRows::kSkipRows
         : p == ingest::ErrorPolicy::kValidationOnly ? BadRows::kValidationOnly
                                                     : BadRows::kFailRun;
}

}  // namespace loam
