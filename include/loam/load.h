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
#include <vector>

#include "loam/result.h"
#include "loam/workspace.h"

namespace loam {

enum class LoadFormat { kByFileName, kCsv, kJsonLines };

enum class BadRows {
  kFailRun,         // the first invalid row fails the run; nothing is committed
  kValidationOnly,  // validate as a load would (the first invalid row fails the run); commit
                    // nothing
  kSkipRows,        // commit the valid rows; the run ends "partial"
};

struct LoadRequest {
  std::string table;
  std::string branch = "main";
  LoadMode mode = LoadMode::kAppend;
  std::vector<std::string> keys;                // upsert: empty = the table's declared key
  LoadFormat format = LoadFormat::kByFileName;  // by name: *.jsonl / *.ndjson, else CSV
  std::vector<std::string> files;               // local paths
  char csv_delimiter = ',';
  // "COLUMN:KIND" declared conversions, as `loam load --coerce` (docs/ingest.md).
  std::vector<std::string> coercions;
  BadRows bad_rows = BadRows::kFailRun;
  int64_t max_rejected_rows = 1000;  // kSkipRows: more fails the run
  std::string idempotency_key;       // empty: every call is a new run
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
  std::string state;    // succeeded, failed, partial
  bool reused = false;  // an earlier run with the same idempotency key
  int64_t rows_read = 0;
  int64_t inserted = 0;
  int64_t updated = 0;
  int64_t unchanged = 0;
  int64_t deleted = 0;
  int64_t rejected = 0;
  std::string error_code;
  std::string error;
  std::vector<std::string> row_errors;  // the first rejected rows: file, line, column, why
  uint64_t workspace_version = 0;       // a run that committed
  int64_t table_version = 0;
  std::string commit_id;
};

// Runs the load to its end. Errors are for requests refused before a run
// exists (an invalid request, an idempotency key used with another request)
// or runs left resumable by I/O trouble: loading again with the same key
// finishes them once their lease (30 s) is over; before that the call fails
// with request_in_flight. A load without a key cannot be resumed.
Result<LoadResult> Load(Workspace& ws, const LoadRequest& request,
                        const std::function<void(const LoadProgress&)>& progress = {});

}  // namespace loam
