// The pieces of `loam migrate` (migration.h) shared by its two files: the
// ledger under `_migration/<token>/` and the per-branch step.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/migration.h"

namespace loam::migration_internal {

// The ledger record of one branch: `_migration/<token>/branch-<id>.json`.
std::string LedgerKey(const std::string& root, const std::string& token,
                      const std::string& incarnation);

// Writes the ledger records of one migrating process, fenced: each record
// carries the process (`owner`, the claim's owner), and is replaced only by
// put-if-match on the etag this process last read or wrote, so a process
// that was taken over cannot overwrite a record its successor wrote. A write
// that loses that race, or a claim that names another owner, stops it.
class LedgerWriter {
 public:
  // `still_owner`: OK while the claim names this process (migration.cc).
  LedgerWriter(ObjectStore& store, std::string owner, std::function<Status()> still_owner)
      : store_(store), owner_(std::move(owner)), still_owner_(std::move(still_owner)) {}
  Status Write(const std::string& key, const BranchMigration& b, bool done);
  // Refused when the claim no longer names this process.
  Status StillOwner() const { return still_owner_(); }

 private:
  ObjectStore& store_;
  const std::string owner_;
  const std::function<Status()> still_owner_;
  std::map<std::string, std::string> etags_;  // record key -> etag this process saw last
};

// The claim: `token` names the migration (its ledger), `owner` the process
// that holds it now; a takeover installs a new owner by compare-and-swap, so
// a process that outlived its takeover cannot stamp.
struct ClaimState {
  std::string token;
  std::string owner;
  std::string from;
  std::string claimed_at;
  // The source's workspace format: kPredecessorFormat for the journal-only
  // manifest (its barrier cannot publish), 0 for unstamped heads.
  int from_format = 0;
};

// The claim `text` read from `key`: DataLoss when it is not an object with
// a token and an owner (the token when absent; fields of the wrong type read
// as absent).
Result<ClaimState> ParseClaim(const std::string& key, const std::string& text);

// Branch name -> ref incarnation, main ("") included.
using BranchRefs = std::map<std::string, std::string>;

// The records of `refs`' branches: done, and not done (pending, missing, or
// when `owner` is given, written by another process).
Result<std::pair<int, int>> CountLedger(ObjectStore& store, const std::string& root,
                                        const std::string& token, const BranchRefs& refs,
                                        const std::string* owner = nullptr);
// HeadSetDigest of the heads stored at the branch's latest version; raises
// `*highest_id` (when given) to the highest stable id or incarnation there.
Result<std::string> StoredHeadDigest(const Manifest& manifest, const std::string& branch,
                                     int64_t* highest_id = nullptr);
Result<BranchRefs> ReadBranchRefs(const Manifest& manifest);
// For each record in this migration's ledger made for a branch that is not
// in `now` as it was (deleted since it was pinned, or deleted and made again
// under its name): withdraws that record's commit from the branch's
// directory if it landed there (a put that landed while the branch was being
// deleted), so the branch, or one made later under that name, does not start
// from it. Noted in `report` for deleted branches, in `recreated` (name ->
// version) for the others.
Status WithdrawStrayCommits(WorkspaceEngine& ws, const LedgerWriter& ledger,
                            const std::string& token, const BranchRefs& now,
                            std::map<std::string, uint64_t>* recreated, MigrationReport* report);

// Converts one branch (or confirms a matching marker there): pins its tip, folds its journal once,
// publishes heads, catalog, baselines, marker and the audit record in one commit that revalidates
// the tip and ref (and is withdrawn when the ref changed under it), verifies the result through the
// head reader, and records it in the ledger.
Result<BranchMigration> MigrateBranch(WorkspaceEngine& ws, LedgerWriter& ledger,
                                      const std::string& token, const std::string& from,
                                      const std::string& branch, const std::string& incarnation,
                                      const std::function<Status(std::string_view)>& fail);

}  // namespace loam::migration_internal
