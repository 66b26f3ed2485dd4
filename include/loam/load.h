// Loading files: a load is a run that reads CSV or JSON Lines files (gzip or
// zstd by suffix), validates all of them against the table's schema before it
// changes anything, then commits every row in one table version, exactly
// once: the same idempotency key with the same request returns the first
// run instead of loading again, also after a crash.
//
//   loam::LoadRequest load;
//   load.table = "events";
//   load.files = {"/tmp/events.csv"};
//   auto run = loam::Load(*ws, load);
//   if (run.ok() && run->state == "succeeded") { ... run->inserted ... }
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"
#include "loam/run.h"
#include "loam/workspace.h"

namespace loam {

enum class LoadFormat { kByFileName, kCsv, kJsonLines };

enum class BadRows {
  kFailRun,         // the first invalid row fails the run; nothing is committed
  kValidationOnly,  // validate as a load would (the first invalid row fails the run); commit
                    // nothing
  kSkipRows,        // commit the valid rows; the run ends "partial"
};

// How a run's input is bounded (docs/ingest.md, "Limits"): a run past one
// fails as a whole. Unset: the loader's default (in brackets).
struct LoadLimits {
  std::optional<int64_t> max_rows;            // per run [100,000,000]
  std::optional<int64_t> max_columns;         // fields per CSV record, keys per JSON object [1,024]
  std::optional<int64_t> max_field_bytes;     // one value, after unquoting [1 MiB]
  std::optional<int64_t> max_json_depth;      // nesting of a value bound for a json column [64]
  std::optional<int64_t> max_decoded_bytes;   // decoded bytes per file [64 GiB]
  std::optional<double> max_expansion_ratio;  // decoded / compressed bytes [200]
  std::optional<int64_t> time_budget_ms;      // parsing and validation [1 h]
};

// How a CSV input is written beyond its delimiter (docs/ingest.md, "CSV
// options"); the defaults read RFC 4180 with a header.
struct CsvFormat {
  char quote = '"';
  bool header = true;                // false: `columns` names the fields, in order
  std::vector<std::string> columns;  // only without a header
  std::string null_marker;           // an unquoted field equal to it is a missing value ("" = none)
  int64_t skip_lines = 0;            // lines skipped before the header (or the first record)
  std::string comment_prefix;        // a line starting with it is skipped ("" = none)
};

struct LoadRequest {
  std::string table;
  std::string branch = "main";
  LoadMode mode = LoadMode::kAppend;
  std::vector<std::string> keys;                // upsert: empty = the table's declared key
  LoadFormat format = LoadFormat::kByFileName;  // by name: *.jsonl / *.ndjson, else CSV
  std::vector<std::string> files;               // local paths
  char csv_delimiter = ',';
  CsvFormat csv;
  // "COLUMN:KIND" declared conversions, as `loam load --coerce` (docs/ingest.md).
  std::vector<std::string> coercions;
  // "SOURCE=TARGET": the input's column SOURCE loads the table's TARGET, as
  // `loam load --map` (docs/ingest.md, "Column mapping").
  std::vector<std::string> column_map;
  // The strict schema policy's conversions as JSON, as `loam load
  // --schema-policy FILE` reads it (docs/ingest.md); "" = none. The
  // coercions above are added to it.
  std::string schema_policy_json;
  LoadLimits limits;
  // Memory for a keyed run's key checks; past it they spill to TMPDIR (0: 512 MiB).
  uint64_t key_memory_bytes = 0;
  BadRows bad_rows = BadRows::kFailRun;
  int64_t max_rejected_rows = 1000;  // kSkipRows: more fails the run
  // kFailRun and kValidationOnly validate on after an invalid row and list
  // up to this many (then stop); kSkipRows keeps this many positions.
  int64_t max_errors = 1000;
  std::string idempotency_key;  // empty: every call is a new run
  // The commit fails (precondition_failed) unless the table is at this version.
  std::optional<int64_t> expected_table_version;
};

// Where a run is: after each parsed batch and at each change of state. The
// callback may be called from the loader's lease thread during a long
// commit: keep it thread-safe.
struct LoadProgress {
  std::string run_id;
  std::string state;  // queued, validating, committing, succeeded, failed, partial
  int64_t rows_read = 0;
  uint64_t bytes_read = 0;
};

// A finished run. A run that failed is a result, not an error: `state` is
// "failed" and `error_code` (docs/errors.md) and `error` say why.
struct LoadResult {
  std::string run_id;
  std::string state;    // succeeded, failed, partial, cancelled (CancelRun: the run's state now)
  bool reused = false;  // an earlier run with the same idempotency key
  std::string table;
  std::string mode;  // append, upsert, replace or delete
  bool validation_only = false;
  int64_t rows_read = 0;
  uint64_t bytes_read = 0;  // decoded input bytes
  int64_t inserted = 0;
  int64_t updated = 0;
  int64_t unchanged = 0;
  int64_t deleted = 0;
  int64_t rejected = 0;
  std::string error_code;
  std::string error;
  std::vector<std::string> row_errors;  // the first rejected rows: file, line, column, why
  int64_t error_count = 0;              // every error kept (GetRunErrors lists them)
  uint64_t workspace_version = 0;       // a run that committed
  int64_t table_version = 0;
  std::string commit_id;
  int64_t started_micros = 0;  // µs since the epoch (0 = not reached)
  int64_t finished_micros = 0;
  // The run's record as stored (docs/format/control.md, "Run record"): its
  // request, counters, timings and errors, for tools that keep it.
  std::string record_json;
};

// Runs the load to its end. Errors are for requests refused before a run
// exists (an invalid request, an idempotency key used with another request)
// or runs left resumable by I/O trouble: loading again with the same key
// finishes them once their lease (30 s) is over; before that the call fails
// with request_in_flight. A load without a key cannot be resumed.
Result<LoadResult> Load(Workspace& ws, const LoadRequest& request,
                        const std::function<void(const LoadProgress&)>& progress = {});

// Every run of the workspace (loads made here, by `loam load` and by the
// ingestion service), newest first; and one by its id (not_found). Like
// every read, not checked against grants: records show every principal's
// runs and requests (loam/service.h's ListRuns shows a principal its own).
Result<std::vector<LoadResult>> ListRuns(const Workspace& ws);
Result<LoadResult> GetRun(const Workspace& ws, const std::string& run_id);
// Every error a run kept (LoadResult::error_count of them), in input order.
Result<std::vector<RunInfo::Error>> GetRunErrors(const Workspace& ws, const std::string& run_id);
// Asks the process that holds the run (a `Load` elsewhere, a service worker)
// to stop it: recorded in the run's record, which that process reads
// between batches and before its commit, never after it asked for the
// commit. The run as recorded, not yet finished; a run no process holds ends
// cancelled when it is resumed. Allowed to the run's own principal and to
// anyone who may write its table; a finished run is precondition_failed.
Result<LoadResult> CancelRun(const Workspace& ws, const std::string& run_id);

// Deleting rows is a run too (docs/ingest.md, "Deleting rows"): validated
// first, exactly once under its idempotency key, one commit recorded as the
// run's (the service reverts it), counted in `deleted`. Its rows are those
// matching every filter, or those whose key columns hold a key of its files.
struct DeleteRequest {
  std::string table;
  std::string branch = "main";
  // "COL OP VALUE" filters as `loam scan --where` takes them, ANDed.
  std::vector<std::string> where;
  // Or: local files of keys (CSV with a header, or JSON Lines) holding
  // exactly the key columns: the table's declared keys, or `key_columns`.
  std::vector<std::string> key_files;
  std::vector<std::string> key_columns;
  LoadFormat format = LoadFormat::kByFileName;
  char csv_delimiter = ',';
  bool validation_only = false;  // count the rows it would delete; delete none
  // Keys one run reads, at most 1,000,000 (the default).
  std::optional<int64_t> max_keys;
  int64_t max_errors = 1000;  // invalid key rows listed
  std::string idempotency_key;
  std::optional<int64_t> expected_table_version;
};
Result<LoadResult> DeleteRows(Workspace& ws, const DeleteRequest& request,
                              const std::function<void(const LoadProgress&)>& progress = {});

// The names `loam load` and the HTTP API take: "csv" / "jsonl" (or
// "ndjson"); "failRun" / "validationOnly" / "skipRows" ("quarantine" is
// refused: Loam never keeps rejected rows).
Result<LoadFormat> ParseLoadFormat(std::string_view name);
Result<BadRows> ParseBadRows(std::string_view name);

}  // namespace loam
