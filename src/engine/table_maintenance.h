// Automatic compaction: one pass over a branch's tables that compacts those
// whose small fragments pass a threshold, through the write protocol
// (docs/operations.md, "Maintenance").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

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
};

// The fragments of `v` that a compaction under `options` may rewrite.
uint64_t CompactableFragments(const DatasetVersion& v, const CompactionOptions& options);

// One pass over `branch`: each table the branch owns with at least
// policy.min_fragments compactable fragments is compacted as `principal`
// (the workspace owner, or "" as the system actor). A compaction that meets
// a concurrent writer yields: the writer commits, and the table waits for
// the next pass (`deferred`). Fails only when the branch cannot be read.
Result<MaintenanceReport> CompactDueTables(Workspace& ws, const std::string& branch,
                                           const CompactionPolicy& policy,
                                           const std::string& principal);

}  // namespace loam
