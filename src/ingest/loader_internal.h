// What the loader's two sources share: loader.cc takes runs and holds their
// leases; loader_run.cc carries one run through validation and its commit.
#pragma once

#include <cstdint>
#include <string>

#include "ingest/loader.h"

namespace loam::ingest {

struct Loader::Active {
  RunRequest request;
  RunRecord record;
  std::string etag;
  bool resumed = false;
  // Set once the run has asked for its commit: from then on, a failure is
  // judged by the journal first (the commit may have landed).
  bool reached_commit = false;
  // Set when a check found a cancel request: the status that unwinds the
  // stager says nothing more (code never reads a message).
  bool cancelling = false;
  int64_t next_cancel_check = 0;  // µs since the epoch
  // WriteRequest::journal_floor: taken just before this call minted the
  // run's id; 0 when the id came from an earlier call or process.
  uint64_t journal_floor = 0;
};

namespace loader_internal {

int64_t NowMicros();  // µs since the epoch

// A run taken up from `queued` is recorded as validating by the same write
// that claims it.
void StartValidating(RunRecord& r, int64_t now_micros);

}  // namespace loader_internal
}  // namespace loam::ingest
