// Keeping a workspace healthy as it ages (docs/operations.md, "Maintenance"
// and "Retention"): compaction of small fragments, the time-travel window
// and versions past it, and the check (and offline repair) of the durable
// table heads. `loam serve` compacts and applies the window by itself; an
// embedding program calls these, or runs a Maintainer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loam/result.h"
#include "loam/status.h"
#include "loam/workspace.h"

namespace loam {

// One table `CompactTables` rewrote (or found nothing to do for).
struct TableCompaction {
  std::string table;
  bool compacted = false;  // false: nothing to compact
  int64_t table_version = 0;
};

// Rewrites the small fragments (and those with many deleted rows) of
// `table`, or of every table of main and then the manifest's own files
// ("" = all), now, whatever their count. Needs the writer role.
Result<std::vector<TableCompaction>> CompactTables(Workspace& ws, const std::string& table = "");

// What versions a retention pass removed.
struct ExpiryReport {
  int64_t window_seconds = 0;  // the workspace's window it applied
  int manifest_versions_removed = 0;
  int table_versions_removed = 0;
  int tables_removed = 0;  // dropped on every branch before the window, or of deleted branches
  int forks_removed = 0;   // a deleted branch's forks of tables other branches keep
  int files_removed = 0;
  uint64_t bytes_removed = 0;
  // Per branch: the oldest workspace version time travel reaches now.
  std::map<std::string, uint64_t> oldest_version;
};

// Removes the versions superseded before the time-travel window and the
// files no version references; unreferenced files younger than
// `grace_seconds` stay (a running load's staged files).
Result<ExpiryReport> ApplyRetention(Workspace& ws, int64_t grace_seconds = 86400);

struct RetentionInfo {
  int64_t window_seconds = 0;   // how long a superseded version stays readable
  uint64_t oldest_version = 1;  // the oldest workspace version of main time travel reaches
};
Result<RetentionInfo> GetRetention(const Workspace& ws);
// 60 s to 100 years (default 7 days); the next pass applies it.
Status SetRetentionWindow(Workspace& ws, int64_t window_seconds);

// The durable heads of a branch against its journal.
struct HeadsCheck {
  uint64_t workspace_version = 0;  // the version checked (or repair's commit)
  int tables_checked = 0;
  std::vector<std::string> problems;  // verify: one line per difference
  std::vector<std::string> repaired;  // repair: what it rewrote
  int pending_sidecars = 0;           // writes awaiting recovery
  int unindexed_journal_fragments = 0;
};
// Reads only (open the workspace with recover = false to change nothing).
Result<HeadsCheck> VerifyHeads(const Workspace& ws, const std::string& branch = "main");
// Rewrites heads and catalog from the journal as `loam:repair`. Every writer
// must be stopped: refused (precondition_failed) while a write's lease or a
// run's lease is live, unless `force`.
Result<HeadsCheck> RepairHeads(Workspace& ws, const std::string& branch = "main",
                               bool force = false);

struct MaintainerOptions {
  // A table is compacted once this many of its fragments are small (fewer
  // rows than half of target_rows) or hold many deleted rows.
  uint64_t min_fragments = 16;
  uint64_t target_rows = 1 << 20;
  // Unreferenced files younger than this stay (ApplyRetention).
  int64_t grace_seconds = 86400;
  // The maintenance lease lasts this long unless renewed by a pass.
  int64_t lease_seconds = 300;
};

// What one pass did.
struct MaintenancePass {
  bool lease_held = false;  // false: another process holds the lease; nothing was done
  int tables = 0;           // looked at
  int compacted = 0;
  int64_t fragments_removed = 0;
  int64_t fragments_added = 0;
  uint64_t bytes_written = 0;
  std::map<std::string, uint64_t> fragments;  // per table ("branch:table" off main), after
  std::vector<std::string> deferred;          // tables left for a later pass, with why
  ExpiryReport retention;                     // when the lease was held
};

// Passes of compaction (every branch) and retention under the workspace's
// maintenance lease, so that one process of many does them. A Maintainer
// remembers what it saw: a pass reads no table whose head has not moved.
class Maintainer {
 public:
  // The Workspace must outlive the Maintainer.
  static Result<std::unique_ptr<Maintainer>> Create(Workspace& ws,
                                                    const MaintainerOptions& options = {});
  ~Maintainer();
  Maintainer(const Maintainer&) = delete;
  Maintainer& operator=(const Maintainer&) = delete;

  Result<MaintenancePass> RunOnce();
  // Gives the lease up (a pass takes it again).
  Status Release();

  struct Rep;

 private:
  explicit Maintainer(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace loam
