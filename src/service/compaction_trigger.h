// CompactionTrigger: asks for a compaction pass as soon as this process's
// commits may have brought a table to the pass's threshold, instead of
// waiting for the pass's interval, so a table fed by small runs holds at
// most about the threshold's fragments at any moment, not what a whole
// interval of commits adds.
//
// It counts, per table, the distinct table versions runs committed since the
// last pass began (runs of one group commit share a version; each version an
// append commits adds at least one fragment), on top of the compactable
// fragments that pass left. A count that reaches the policy's minimum
// wants a pass. An estimate only: other processes' commits are not seen
// (the interval still covers them), and a pass that finds fewer fragments
// than counted compacts nothing.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "common/thread_annotations.h"
#include "engine/table_maintenance.h"

namespace loam::service {

class CompactionTrigger {
 public:
  explicit CompactionTrigger(uint64_t min_fragments) : min_fragments_(min_fragments) {}

  // A run committed `table_version` of `table` on `branch` ("" = main).
  void NoteCommit(const std::string& branch, const std::string& table, int64_t table_version);
  // Whether the commits noted since the last pass began want one now.
  bool Wanted() const;
  // A pass begins: it reads every table as it is now, so the commits noted
  // so far are its to count.
  void PassStarted();
  // The pass left these compactable fragments (MaintenanceReport::compactable).
  // Only a commit after it wants the next pass: a table the pass could not
  // bring under the threshold (its compaction deferred by a plan gone stale,
  // or nothing to merge) wants one at its next commit (the service pauses
  // between such passes as long as the last one took).
  void PassEnded(const MaintenanceReport& pass);
  // This process does not hold the maintenance lease: what it counted is
  // the holder's to compact (its interval's pass sees every commit).
  void Forget() { PassStarted(); }

 private:
  struct Table {
    uint64_t left = 0;  // compactable fragments the last pass left
    uint64_t new_versions = 0;
    int64_t last_version = 0;
  };
  static std::string Label(const std::string& branch, const std::string& table);

  const uint64_t min_fragments_;
  mutable std::mutex mu_;
  std::map<std::string, Table> tables_ LOAM_GUARDED_BY(mu_);  // by MaintenanceReport label
  bool wanted_ LOAM_GUARDED_BY(mu_) = false;
};

}  // namespace loam::service
