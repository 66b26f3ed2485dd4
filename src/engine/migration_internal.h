// The pieces of `loam migrate` (migration.h) shared by its two files: the
// ledger under `_migration/<token>/` and the per-branch step.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/migration.h"

namespace loam::migration_internal {

// The ledger record of one branch: `_migration/<token>/branch-<id>.json`.
std::string LedgerKey(const std::string& root, const std::string& token,
                      const std::string& incarnation);
Status WriteLedger(ObjectStore& store, const std::string& key, const BranchMigration& b, bool done);
// Branch name -> ref incarnation, main ("") included.
using BranchRefs = std::map<std::string, std::string>;

// The records of `refs`' branches: done, and not done (pending or missing).
Result<std::pair<int, int>> CountLedger(ObjectStore& store, const std::string& root,
                                        const std::string& token, const BranchRefs& refs);
// HeadSetDigest of the heads stored at the branch's latest version; raises
// `*highest_id` (when given) to the highest stable id or incarnation there.
Result<std::string> StoredHeadDigest(const Manifest& manifest, const std::string& branch,
                                     int64_t* highest_id = nullptr);
Result<BranchRefs> ReadBranchRefs(const Manifest& manifest);

// Converts one branch (or confirms a matching marker there): pins its tip,
// folds its journal once, publishes heads, catalog, baselines, marker and the
// audit record in one commit that revalidates the tip and ref, verifies the
// result through the head reader, and records it in the ledger.
Result<BranchMigration> MigrateBranch(Workspace& ws, const std::string& token,
                                      const std::string& from, const std::string& branch,
                                      const std::string& incarnation,
                                      const std::function<Status(std::string_view)>& fail);

}  // namespace loam::migration_internal
