// Service: the maintenance threads. One runs the cleaner, the staging and
// record sweeps and compaction passes (every interval, and whenever this
// process's commits may have brought a table to the threshold); retention
// passes have a thread of their own, so a long one delays no compaction.
// Both passes run only in the process holding the workspace's maintenance
// lease.
#include <algorithm>

#include "common/logging.h"
#include "service/service.h"

namespace loam::service {
namespace {

int64_t MaintenanceClockMicros() { return Clock::System()->NowMicros(); }

}  // namespace

void Service::MaintenanceLoop() {
  constexpr int64_t kSweepEveryMicros = 3'600'000'000;
  int64_t next_sweep = 0;
  int64_t next_compaction = 0;
  int64_t last_pass_end = 0, last_pass_took = 0;  // µs
  for (;;) {
    {
      std::unique_lock lock(mu_);
      if (stopping_) return;
    }
    Result<CleanupReport> cleaned = RunCleanerOnce();
    if (!cleaned.ok()) LOAM_LOG_WARN("cleaner: {}", cleaned.status().ToString());
    // Hourly: the staging sweep, and a pass over the records, which then
    // takes a page of each kind per round until it ends.
    const bool start_pass = MaintenanceClockMicros() >= next_sweep;
    if (start_pass) {
      next_sweep = MaintenanceClockMicros() + kSweepEveryMicros;
      Result<SweepReport> swept = SweepStaging();
      if (!swept.ok()) LOAM_LOG_WARN("staging sweep: {}", swept.status().ToString());
    }
    if (start_pass || RecordSweepUnderway()) {
      Result<int64_t> records = SweepRecords();
      if (!records.ok()) LOAM_LOG_WARN("record sweep: {}", records.status().ToString());
    }
    bool compact = Due(options_.compaction_interval_micros, &next_compaction);
    // Commits may have brought a table to compaction: a pass at once, after
    // a pause as long as the last pass took, so passes asked for by commits
    // keep at most half of this thread busy (a table whose plans go stale
    // under a stream of commits is not rewritten back to back).
    if (!compact && options_.compaction_interval_micros > 0 && compaction_trigger_.Wanted() &&
        MaintenanceClockMicros() >= last_pass_end + last_pass_took) {
      compact = true;
      next_compaction = MaintenanceClockMicros() + options_.compaction_interval_micros;
    }
    if (compact) {
      if (HoldsMaintenanceLease()) {
        const int64_t began = MaintenanceClockMicros();
        CompactNow();
        last_pass_end = MaintenanceClockMicros();
        last_pass_took = last_pass_end - began;
      } else {
        compaction_trigger_.Forget();  // the holder's passes see these commits
      }
    }
    std::unique_lock lock(mu_);
    const uint64_t seen = wakeups_;
    wake_.wait_for(lock, std::chrono::microseconds(options_.cleaner_interval_micros),
                   [&] { return stopping_ || wakeups_ != seen; });
  }
}

void Service::NoteCommit(const ingest::RunRecord& run) {
  if (options_.compaction_interval_micros <= 0 || run.table_version <= 0 ||
      !ingest::HasCommitted(run.state)) {
    return;
  }
  Result<ingest::RunRequest> req = ingest::RunRequest::FromJson(run.request);
  if (req.ok()) compaction_trigger_.NoteCommit(req->branch, run.table, run.table_version);
}

// Retention has a thread of its own: a pass over a long history takes
// seconds, and compaction passes asked for meanwhile must not wait for it.
void Service::RetentionLoop() {
  int64_t next_retention = 0;
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    if (Due(options_.retention_interval_micros, &next_retention) && HoldsMaintenanceLease()) {
      ExpireNow();
    }
    std::unique_lock lock(mu_);
    const int64_t wait = std::max<int64_t>(next_retention - MaintenanceClockMicros(), 0);
    if (wake_.wait_for(lock, std::chrono::microseconds(wait), [&] { return stopping_; })) return;
  }
}

bool Service::Due(int64_t interval_micros, int64_t* next_micros) const {
  if (interval_micros <= 0 || MaintenanceClockMicros() < *next_micros) return false;
  *next_micros = MaintenanceClockMicros() + interval_micros;
  return true;
}

bool Service::HoldsMaintenanceLease() {
  std::lock_guard lock(lease_mu_);
  Result<bool> held = maintenance_lease_->Acquire();
  if (!held.ok()) LOAM_LOG_WARN("maintenance lease: {}", held.status().ToString());
  return held.ok() && *held;  // otherwise another process maintains the workspace
}

void Service::CompactNow() {
  compaction_trigger_.PassStarted();
  Result<MaintenanceReport> pass =
      CompactAllBranches(*ws_, options_.compaction, ws_->owner(), &compaction_memo_);
  if (!pass.ok()) {
    LOAM_LOG_WARN("compaction: {}", pass.status().ToString());
    return;
  }
  compaction_trigger_.PassEnded(*pass);
  for (const std::string& why : pass->deferred) LOAM_LOG_INFO("compaction deferred: {}", why);
  if (pass->compacted > 0) {
    LOAM_LOG_INFO("compaction: {} tables, {} fragments into {}, {} bytes written", pass->compacted,
                  pass->fragments_removed, pass->fragments_added, pass->bytes_written);
  }
  if (options_.on_compaction_pass) options_.on_compaction_pass(*pass);
}

void Service::ExpireNow() {
  Result<RetentionSetting> setting = ReadRetentionSetting(*ws_->store(), ws_->root());
  Result<RetentionReport> pass =
      setting.ok() ? ExpireVersions(*ws_, MaintenanceClockMicros(), setting->window_seconds,
                                    options_.retention_grace_micros)
                   : Result<RetentionReport>(setting.status());
  if (!pass.ok()) {
    LOAM_LOG_WARN("retention: {}", pass.status().ToString());
    return;
  }
  if (pass->manifest_versions_removed + pass->table_versions_removed + pass->files_removed > 0) {
    LOAM_LOG_INFO(
        "retention: {} manifest and {} table versions past the window, {} files ({} bytes)",
        pass->manifest_versions_removed, pass->table_versions_removed, pass->files_removed,
        pass->bytes_removed);
  }
  if (options_.on_retention_pass) options_.on_retention_pass(*pass);
}

}  // namespace loam::service
