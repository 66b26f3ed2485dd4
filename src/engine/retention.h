// Retention: the time-travel window (docs/operations.md, "Retention").
// Versions current at some moment inside the window stay readable; older
// table and manifest versions, and the files only they used, are removed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/workspace.h"

namespace loam {

inline constexpr int64_t kDefaultTimeTravelWindowSeconds = 7 * 24 * 3600;
// Shorter windows would expire the base of a load still in flight.
inline constexpr int64_t kMinTimeTravelWindowSeconds = 60;
inline constexpr int64_t kMaxTimeTravelWindowSeconds = 100LL * 365 * 24 * 3600;

// The workspace's retention setting (`_control/retention.json`,
// docs/format/control.md); the default window when the object is absent.
struct RetentionSetting {
  int64_t window_seconds = kDefaultTimeTravelWindowSeconds;
};

Result<RetentionSetting> ReadRetentionSetting(ObjectStore& store,
                                              const std::string& workspace_root);
// InvalidArgument outside [kMin, kMax]TimeTravelWindowSeconds.
Status WriteRetentionSetting(ObjectStore& store, const std::string& workspace_root,
                             const RetentionSetting& setting);

// The oldest manifest version time travel reaches on the branch with id
// `branch_id` ("" = main), as the last retention pass left it
// (`_control/retention-horizon.json`); 0 before any pass.
Result<uint64_t> ReadTimeTravelHorizon(ObjectStore& store, const std::string& workspace_root,
                                       const std::string& branch_id);
// version_expired for `version` of `branch` below `oldest`.
Status VersionExpired(const std::string& branch, uint64_t version, uint64_t oldest);

// Written before branch `name` is deleted
// (`_control/deleted-branches/<id>.json`, docs/format/control.md): the
// tables its newest version has, live or dropped, so that a pass after the
// deletion removes its forks of them, and the tables only it had.
Status RecordBranchDeletion(WorkspaceEngine& ws, const std::string& name, int64_t now_micros);
// Takes the record back (a deletion that was refused).
Status ForgetBranchDeletion(WorkspaceEngine& ws, const std::string& id);

// A deleted branch's record: its ref id and the tables (stable id,
// location) its newest version had, live or dropped.
struct DeletedBranch {
  std::string key, id;
  int64_t deleted_micros = 0;
  std::vector<std::pair<int64_t, std::string>> tables;
};
// The record stored at `key`; DataLoss when it is malformed.
Result<DeletedBranch> ParseDeletedBranch(const std::string& key, std::string_view text);

struct RetentionReport {
  int64_t cutoff_micros = 0;  // versions superseded before this went
  int manifest_versions_removed = 0;
  int table_versions_removed = 0;
  int files_removed = 0;  // data, deletion and index files of tables and manifest
  uint64_t bytes_removed = 0;
  int tables = 0;          // table datasets looked at
  int tables_removed = 0;  // datasets no branch keeps (dropped everywhere, or a deleted
                           // branch's own), removed whole
  int forks_removed = 0;   // a deleted branch's forks of tables other branches keep
  // Per branch ("" = main): the manifest version current at the cutoff,
  // the oldest one time travel reaches after the pass.
  std::map<std::string, uint64_t> oldest_manifest_version;
};

// One retention pass at `now_micros` with `window_seconds`. Kept, whatever
// their age: every version current at some moment since the cutoff (on
// every branch, for the manifest and for every table the manifest versions
// kept reference), each branch's newest version, tags and fork points, and
// unreferenced files younger than `grace_micros` (a write's staged files).
// The dataset of a table no kept version of any branch has live goes
// whole; so do what deleted branches alone kept (RecordBranchDeletion).
Result<RetentionReport> ExpireVersions(WorkspaceEngine& ws, int64_t now_micros,
                                       int64_t window_seconds, int64_t grace_micros);

}  // namespace loam
