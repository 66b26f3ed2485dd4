// A run of the ingestion service as its callers see it (loam/service.h, the
// HTTP API's run documents, docs/service.md): its state, counters, errors,
// timings and commit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loam {

struct RunInfo {
  struct Counters {
    int64_t rows_read = 0;
    int64_t inserted = 0;
    int64_t updated = 0;
    int64_t unchanged = 0;
    int64_t deleted = 0;
    int64_t rejected = 0;
  };
  // Where and why a row was invalid or rejected (or, with line 0, why the
  // run failed); never the row's values.
  struct Error {
    std::string file;     // the upload or file
    std::string reason;   // a short message that repeats the position
    int64_t line = 0;     // 1-based; 0: not about one row
    int64_t offset = -1;  // the byte of the decompressed input the row starts at; -1: unknown
    std::string column;   // the table column, if the error is about one
    std::string code;     // a stable error code (docs/errors.md)
  };

  std::string id;
  // queued, validating, committing, succeeded, failed, partial or cancelled.
  std::string state;
  bool terminal = false;    // succeeded, failed, partial or cancelled: it changes no more
  std::string pipeline_id;  // "" for a delete (Service::SubmitDelete)
  std::string table;
  std::string mode;          // append, upsert, replace or delete
  std::string submitted_by;  // the principal whose request it is
  bool validation_only = false;
  std::vector<std::string> uploads;
  int64_t input_bytes = 0;
  std::string source_id;  // "" = none
  bool source_reload = false;
  Counters counters;
  std::vector<Error> errors;  // the first ten
  int64_t error_count = 0;    // all of them (Service::RunErrors lists each)
  std::string error_code;     // failed and cancelled runs (docs/errors.md)
  std::string error;
  // µs since the epoch (0 = not reached).
  int64_t created_micros = 0;
  int64_t started_micros = 0;
  int64_t validated_micros = 0;
  int64_t finished_micros = 0;
  // A succeeded run that changed its table: the commit.
  std::string commit_id;
  uint64_t manifest_version = 0;
  int64_t table_version = 0;
  // A cancel asked for after the run started (Service::CancelRun): who
  // asked, and when. The run ends cancelled at its next check unless it had
  // already asked for its commit (then it ends as that commit did).
  std::string cancel_requested_by;
  int64_t cancel_requested_micros = 0;
};

}  // namespace loam
