// Runs: the request, its durable record and where records live.
//
// Records are JSON objects under "<workspace>/_control/runs/<run_id>.json",
// updated only by compare-and-swap on their etag, so two processes never both
// believe they own a run. An idempotency key maps to its run through
// "<workspace>/_control/idempotency/<hash of key>.json", created once.
// Records hold positions and reasons of rejected rows, never their values:
// the first kRecordErrors; a run with more keeps them all (up to its
// max_errors) in "<workspace>/_control/run-errors/<run_id>.jsonl".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ingest/row_source.h"
#include "loam/object_store.h"

namespace loam::ingest {

// kDelete removes rows: those matching `where`, or those whose key columns
// hold a key of its files (row_deletes.h).
enum class LoadMode { kAppend, kUpsert, kReplace, kDelete };
enum class ErrorPolicy { kFailRun, kValidationOnly, kSkipRows };
enum class RunState {
  kQueued,
  kValidating,
  kCommitting,
  kSucceeded,
  kFailed,
  kPartial,
  kCancelled,
};

std::string_view LoadModeName(LoadMode m);
Result<LoadMode> ParseLoadMode(std::string_view s);
std::string_view ErrorPolicyName(ErrorPolicy p);
Result<ErrorPolicy> ParseErrorPolicy(std::string_view s);  // "quarantine" is refused here
std::string_view RunStateName(RunState s);
bool IsTerminal(RunState s);
// Succeeded or partial: the run's rows reached its table.
bool HasCommitted(RunState s);

// The file name by which a request reads its record's `input_text`.
inline constexpr std::string_view kRecordInputFile = "@record";

struct RunRequest {
  std::string table;
  std::string branch;  // "" = main
  LoadMode mode = LoadMode::kAppend;
  // upsert, and a delete by keys: the key columns; empty = the table's declared keys
  std::vector<std::string> keys;
  // delete: "COL OP VALUE" filters (ParseWhere), ANDed; empty: by keys (`files`)
  std::vector<std::string> where;
  std::optional<InputFormat> format;  // nullopt = by file name
  std::vector<std::string> files;     // as the opener understands them (absolute paths)
  // What errors call each file (parallel to `files`); empty: its base name.
  std::vector<std::string> file_names;
  SchemaPolicy policy;
  ErrorPolicy error_policy = ErrorPolicy::kFailRun;
  std::string idempotency_key;
  std::string principal;
  // Additive: the admin who configured the load, checked again in the commit.
  std::string additive_admin;
  ParseLimits limits;
  int64_t max_rows = 100'000'000;      // per run
  int64_t time_budget_ms = 3'600'000;  // parsing and validation
  int64_t max_rejected_rows = 1000;    // skipRows only
  // Row errors a run keeps: failRun and validationOnly validate on after an
  // invalid row, up to this many; skipRows keeps this many positions.
  int64_t max_errors = kDefaultMaxErrors;
  static constexpr int64_t kDefaultMaxErrors = 1000;
  static constexpr int64_t kMaxErrorsCeiling = 100'000;
  // The commit fails precondition_failed unless the table is at this version.
  std::optional<int64_t> expected_table_version;

  // The exact serialisation kept in the record; equal requests give equal text.
  std::string ToJson() const;
  static Result<RunRequest> FromJson(std::string_view text);
};

struct RunCounters {
  int64_t rows_read = 0;
  int64_t inserted = 0;
  int64_t updated = 0;
  int64_t unchanged = 0;
  int64_t deleted = 0;
  int64_t rejected = 0;
  uint64_t bytes_read = 0;  // decoded input bytes
};

// Where and why a row was rejected or invalid (or, with line 0, why the
// run failed). `reason` repeats the position and never holds a value.
struct RunError {
  std::string file;
  std::string reason;
  int64_t line = 0;     // 1-based; 0: not about one row
  int64_t offset = -1;  // the byte of the decompressed input the row starts at; -1: unknown
  std::string column;   // the table column, if the error is about one
  std::string code;     // a stable error code (docs/errors.md), e.g. validation_failed
};
// The row error `s` (a RowError of a row source) names, found in `file`.
RunError RunErrorOf(const Status& s, const std::string& file);
// JSON Lines, one error per line, and back.
std::string RunErrorsToJsonLines(const std::vector<RunError>& errors);
Result<std::vector<RunError>> RunErrorsFromJsonLines(std::string_view text);

// The errors a run record holds itself.
inline constexpr size_t kRecordErrors = 10;

struct RunRecord {
  std::string id;       // ULID
  std::string request;  // RunRequest::ToJson(), exactly
  RunState state = RunState::kQueued;
  std::string table;
  int64_t table_sid = 0;  // resolved at validation
  RunCounters counters;
  std::vector<RunError> errors;  // the first kRecordErrors
  // Every error the run kept (up to its max_errors); more than `errors`
  // holds: the rest are in RunStore::GetErrors.
  int64_t error_count = 0;
  std::string error_code;  // failed runs: validation_failed, schema_conflict, conflict, ...
  std::string error;       // failed runs: the message
  bool validation_only = false;
  // Timings, µs since the epoch (0 = not reached).
  int64_t created_micros = 0;
  int64_t started_micros = 0;
  int64_t validated_micros = 0;
  int64_t finished_micros = 0;
  // Commit identity (succeeded runs that changed the table).
  uint64_t manifest_version = 0;
  std::string commit_id;
  int64_t table_version = 0;
  // The process working on the run, until the lease expires.
  std::string lease_owner;
  int64_t lease_expires_micros = 0;
  // Resumes of the run (Loader::Resume) and the resumable error that ended
  // the last one; after LoaderOptions::max_attempts the run fails with it.
  int attempts = 0;
  std::string last_error_code;
  std::string last_error;
  // Runs submitted through the service (src/service): the pipeline, the
  // uploads they load, their declared bytes and the source identity.
  std::string pipeline_id;
  std::vector<std::string> uploads;
  int64_t input_bytes = 0;
  std::string source_id;
  std::string source_sha256;   // "" until known
  bool source_reload = false;  // load it even if a run loaded it before
  // A small run's input carried by the record itself (the service's inline
  // runs: UTF-8 text, at most ServiceOptions::inline_record_bytes), read
  // through the file kRecordInputFile. A terminal record is saved without it.
  std::string input_text;
  // A cancel asked for once the run had started (RunStore::RequestCancel):
  // who asked and when (µs since the epoch). The lease holder ends the run
  // cancelled at its next check, unless its commit was already asked for.
  std::string cancel_requested_by;
  int64_t cancel_requested_micros = 0;

  std::string ToJson() const;
  static Result<RunRecord> FromJson(std::string_view text);
};

// The records of one workspace.
class RunStore {
 public:
  RunStore(std::shared_ptr<ObjectStore> store, std::string workspace_root)
      : store_(std::move(store)), root_(std::move(workspace_root)) {}

  Status Create(const RunRecord& record, std::string* etag);
  Result<RunRecord> Get(const std::string& run_id, std::string* etag = nullptr) const;
  // Replaces the record if it still has `etag` (Aborted otherwise); updates `etag`.
  Status Update(const RunRecord& record, std::string* etag);
  // The record's etag (one HEAD): a cheap "has anyone else written it?".
  Result<std::string> Etag(const std::string& run_id) const;
  // Asks the run's lease holder to cancel it: records `by` in the run's
  // record by compare-and-swap (again after a lost one). The record as
  // written; asked again, the first request stands. A terminal run is
  // precondition_failed.
  Result<RunRecord> RequestCancel(const std::string& run_id, const std::string& by,
                                  int64_t now_micros);
  // Newest first.
  Result<std::vector<RunRecord>> List() const;
  // Removes a record and its errors (retention: terminal runs only).
  // Missing is OK.
  Status Delete(const RunRecord& record);

  // Keeps every error of a run whose record holds only the first (written
  // before the terminal record that counts them).
  Status PutErrors(const std::string& run_id, const std::vector<RunError>& errors);
  // Every error `record` counts: its own, or those PutErrors kept (its own
  // again once Delete removed those).
  Result<std::vector<RunError>> GetErrors(const RunRecord& record) const;

  // The run an idempotency key names, if any.
  Result<std::optional<std::string>> FindKey(const std::string& key) const;
  // Binds `key` to `run_id` once; AlreadyExists when bound (to anyone).
  Status BindKey(const std::string& key, const std::string& run_id);

 private:
  std::string RunKey(const std::string& run_id) const;
  std::string ErrorsKey(const std::string& run_id) const;
  std::string KeyKey(const std::string& key) const;

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
};

}  // namespace loam::ingest
