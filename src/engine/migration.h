// `loam migrate`: the offline, all-branch conversion of a workspace in an
// earlier format (the journal-only format 4, or heads written before the
// format stamp) to kWorkspaceFormat (docs/operations.md, "Migrating a
// workspace"; docs/format/manifest.md, "Workspace format").
//
//   claim (create-if-absent, owner token) -> recovery barrier (every sidecar
//   settled) -> per branch: pin tip and ref incarnation, fold the journal
//   once, publish heads + baselines + marker + audit record in one manifest
//   commit that revalidates the tip (no graph commit), verify through the
//   head reader, ledger record -> re-enumerate refs -> stamp main's format.
//
// The stamp is the commit point. Every step is idempotent and roll-forward
// only: re-running after a crash (with --take-over TOKEN) skips branches
// whose marker matches their heads and never stamps while one is missing.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/workspace.h"

namespace loam {

namespace failpoint {
inline constexpr std::string_view kMigrateAfterClaim = "migrate.after_claim";
inline constexpr std::string_view kMigrateBeforeBranchCommit = "migrate.before_branch_commit";
// Inside the branch commit: its tip and ref checked, its version not yet put.
inline constexpr std::string_view kMigrateBranchCommitChecked = "migrate.branch_commit_checked";
inline constexpr std::string_view kMigrateAfterBranchCommit = "migrate.after_branch_commit";
inline constexpr std::string_view kMigrateAfterBranch = "migrate.after_branch";
inline constexpr std::string_view kMigrateBeforeStamp = "migrate.before_stamp";
inline constexpr std::string_view kMigrateAfterStamp = "migrate.after_stamp";
}  // namespace failpoint

// The system actor that signs migration records.
inline constexpr std::string_view kMigrationActor = "loam:migration";

struct MigrateOptions {
  // The token of a claimed migration whose process is gone: resume it.
  std::string take_over;
  // With take_over: record the branch set as it is now (after branches were
  // created, deleted or recreated while the migration was stopped).
  bool repin_branches = false;
};

struct BranchMigration {
  std::string branch;       // "" = main
  std::string incarnation;  // the ref's id ("" for main)
  uint64_t source_version = 0;
  uint64_t produced_version = 0;
  int64_t heads = 0;  // table heads, tombstoned ones included
  std::string baseline_digest;
  std::string head_digest;
  bool already_done = false;  // a matching marker was there (a resumed migration)
  // Set when the branch's own directory held this migration's commit for an
  // earlier branch of the same name (deleted and recreated under it): that
  // version, withdrawn before the branch was migrated.
  std::optional<uint64_t> withdrawn_version;
};

struct MigrationReport {
  bool already_current = false;  // stamped kWorkspaceFormat before this call
  std::string from;              // what was found ("format 4", "unstamped heads", ...)
  std::string token;
  bool took_over = false;
  // A takeover's classification, before it touched anything: ledger records
  // of the current branches (done, pending) and write sidecars found.
  int ledger_done = 0;
  int ledger_pending = 0;
  int sidecars_found = 0;
  RecoveryReport recovery;
  std::vector<BranchMigration> branches;
  // Branches deleted during the migration from whose directory this
  // migration's commit was withdrawn (it landed while they were being
  // deleted): name -> the version withdrawn.
  std::map<std::string, uint64_t> withdrawn_in_deleted_branches;
  // Set when the identity counter lagged the highest id in use (its `next`
  // then); the migration advanced it past that id before stamping.
  std::optional<int64_t> identity_counter_was;
};

// Migrates the workspace at `root`. `options.failpoint` is called at the
// failpoints above (a non-OK status stops there, as a crash would).
Result<MigrationReport> MigrateWorkspace(std::shared_ptr<ObjectStore> store,
                                         const std::string& root, WorkspaceOptions options,
                                         const MigrateOptions& migrate = {});

}  // namespace loam
