// RunView: a run as the service shows it to its callers (the HTTP routes,
// metrics, an embedder): what a user may see of the loader's run record,
// without its lease, request text or inline input. The service's API
// returns views only, so its callers never depend on the loader's record.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ingest/run_record.h"

namespace loam::service {

struct RunView {
  struct Counters {
    int64_t rows_read = 0;
    int64_t inserted = 0;
    int64_t updated = 0;
    int64_t unchanged = 0;
    int64_t deleted = 0;
    int64_t rejected = 0;
  };
  struct Error {
    std::string file;
    std::string reason;
  };

  std::string id;
  // queued, validating, committing, succeeded, failed, partial or cancelled.
  std::string state;
  bool terminal = false;  // succeeded, failed, partial or cancelled: it changes no more
  std::string pipeline_id;
  std::string table;
  bool validation_only = false;
  std::vector<std::string> uploads;
  int64_t input_bytes = 0;
  std::string source_id;  // "" = none
  bool source_reload = false;
  Counters counters;
  std::vector<Error> errors;  // the first few
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
};

RunView ViewOf(const ingest::RunRecord& run);

// A run state's name (as RunView::state), or InvalidArgument naming the
// states for an unknown one.
Result<ingest::RunState> ParseRunState(std::string_view name);

}  // namespace loam::service
