// Automatic compaction: one pass over a branch's tables that compacts those
// whose small fragments pass a threshold, through the write protocol
// (docs/operations.md, "Maintenance").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/workspace.h"

namespace loam {

struct CompactionPolicy {
  // A table is compacted once at least this many of its fragments are
  // Compactable under `options` (small, or with many rows deleted).
  uint64_t min_fragments = 16;
  CompactionOptions options;
};

struct MaintenanceReport {
  int tables = 0;     // looked at
  int compacted = 0;  // tables compacted
  int64_t fragments_removed = 0;
  int64_t fragments_added = 0;
  uint64_t bytes_written = 0;
  // Tables left for a later pass, each with why (a concurrent writer's
  // commit in progress, a table dropped meanwhile, ...).
  std::vector<std::string> deferred;
  // Fragments of each table looked at, after the pass ("table" on main,
  // "branch:table" elsewhere).
  std::map<std::string, uint64_t> fragments;
  // Of those, the ones a compaction may rewrite (Compactable; after a
  // compaction, counting every fragment it added).
  std::map<std::string, uint64_t> compactable;

  void Add(const MaintenanceReport& other);
};

// What passes learned of each table: the head version they last read it at
// and its fragments then, so a later pass reads no table whose head has not
// moved (a pass over idle tables makes no request for them).
struct MaintenanceMemo {
  struct Seen {
    int64_t table_version = 0;
    uint64_t fragments = 0;
    uint64_t compactable = 0;
  };
  std::map<std::pair<std::string, int64_t>, Seen> tables;  // (branch, table id)
};

// The fragments of `v` that a compaction under `options` may rewrite.
uint64_t CompactableFragments(const DatasetVersion& v, const CompactionOptions& options);

// One pass over `branch`: each table the branch owns with at least
// policy.min_fragments compactable fragments is compacted as `principal`
// (the workspace owner, or "" as the system actor). A compaction that meets
// a concurrent writer yields: the writer commits, and the table waits for
// the next pass (`deferred`). Fails only when the branch cannot be read.
// With `memo`, a table whose head is where the memo last saw it is not read.
Result<MaintenanceReport> CompactDueTables(WorkspaceEngine& ws, const std::string& branch,
                                           const CompactionPolicy& policy,
                                           const std::string& principal,
                                           MaintenanceMemo* memo = nullptr);

// CompactDueTables on main and on every branch.
Result<MaintenanceReport> CompactAllBranches(WorkspaceEngine& ws, const CompactionPolicy& policy,
                                             const std::string& principal,
                                             MaintenanceMemo* memo = nullptr);

// The workspace's maintenance lease (`_control/maintenance-lease.json`,
// docs/format/control.md): one holder at a time, by conditional writes, so
// one process of many compacts. A lease not renewed within its length
// passes to the next process that asks.
class MaintenanceLease {
 public:
  MaintenanceLease(std::shared_ptr<ObjectStore> store, const std::string& workspace_root,
                   std::string holder, Clock* clock, int64_t lease_micros);
  // Takes the lease, or renews it, until now + lease_micros. False when
  // another holder's lease is live (or took it first). While this holder's
  // lease has two thirds of its length to run, true at once, with no request:
  // nobody else may take it before then.
  Result<bool> Acquire();
  // Gives the lease up if this holder has it.
  Status Release();

 private:
  std::shared_ptr<ObjectStore> store_;
  std::string key_;
  std::string holder_;
  Clock* clock_;
  int64_t lease_micros_;
  int64_t held_until_ = 0;  // as this holder last wrote it; 0: not held
};

}  // namespace loam
