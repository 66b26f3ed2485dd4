// Cleanup of staging: exact-prefix deletion of a terminal run's uploads, and
// a dated sweeper for uploads no live run references.
//
// A terminal run first writes "<root>/_control/cleanup/<run_id>.json" (the
// prefixes and upload ids to delete), then reports terminal. The cleaner
// pages through each exact prefix (LIST, DELETE), deletes the upload records
// and finally the entry; it is idempotent and retries with exponential
// backoff and jitter, and an entry survives any restart. It never lists
// tables/, and readers never list ingestion-staging/.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "loam/object_store.h"

namespace loam::service {

struct CleanupEntry {
  std::string run_id;
  std::vector<std::string> prefixes;    // each ends in '/'
  std::vector<std::string> upload_ids;  // their _control/uploads records
};

// An entry's JSON (docs/format/control.md). The decoder refuses, with
// DataLoss, anything but format 1 with arrays of strings.
std::string EncodeCleanupEntry(const CleanupEntry& e);
Result<CleanupEntry> DecodeCleanupEntry(std::string_view text);

struct CleanupReport {
  int entries_done = 0;
  int entries_failed = 0;  // retried later
  int64_t objects_deleted = 0;
  int entries_pending = 0;  // waiting for their backoff
};

struct SweepReport {
  int days_visited = 0;
  int64_t objects_seen = 0;
  int64_t objects_deleted = 0;
  int64_t objects_kept = 0;  // referenced by a run that is not terminal
};

class Cleaner {
 public:
  Cleaner(std::shared_ptr<ObjectStore> store, std::string workspace_root, Clock* clock);

  // Durable: the entry exists when this returns OK. Idempotent.
  Status Enqueue(const CleanupEntry& entry);
  // One pass over the due entries; with `due`, only entries whose run it
  // calls due (the service: runs that are terminal, or gone).
  Result<CleanupReport> RunOnce(const std::function<Result<bool>(const std::string&)>& due = {});
  // Age in µs of the oldest entry (0 when there is none).
  Result<int64_t> Backlog() const;

  // Deletes staging objects under days that ended more than `grace_micros`
  // ago, unless `keep(upload_id)` says a run that is not terminal still
  // needs that upload; deletes the upload records of what it removes.
  Result<SweepReport> Sweep(int64_t grace_micros,
                            const std::function<Result<bool>(const std::string&)>& keep);

  // Backoff of the n-th failed attempt: min(base * 2^n, max) scaled by a
  // random factor in [0.5, 1].
  int64_t BackoffMicros(int attempts);

 private:
  Status DeletePrefix(const std::string& prefix, int64_t* deleted);
  Status DeleteUploadRecord(const std::string& upload_id);

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::string prefix_;  // "<root>/_control/cleanup/"
  Clock* clock_;
  std::mutex mu_;
  struct Retry {
    int attempts = 0;
    int64_t due_micros = 0;
  };
  std::map<std::string, Retry> retries_;  // by entry key (this process only)
  std::mt19937_64 rng_;
};

}  // namespace loam::service
