// One branch of `loam migrate` (migration.h), and the migration ledger.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "engine/heads_check.h"
#include "engine/migration_internal.h"

namespace loam::migration_internal {
namespace {

using json = nlohmann::json;

std::string Named(const std::string& branch) {
  return "branch '" + (branch.empty() ? std::string("main") : branch) + "'";
}

// The rows of the migration commit: every head partition rewritten from the
// fold (graph heads included: no graph commit moves this branch's), the
// catalog mended from the journal, one baseline per identity, the marker and
// the audit record.
Result<PublishPlan> BranchPlan(const HeadsInspection& in, const BranchMigration& b,
                               const std::string& token, const std::string& from,
                               int64_t now_micros) {
  PublishPlan plan = HeadsRepairPlan(in, b.branch);
  plan.graph_commit = false;
  plan.journal_without_graph_commit = true;
  auto own = in.folded.graphs.find(b.branch);
  if (own != in.folded.graphs.end()) plan.upserts.push_back(GraphHeadRow(own->second));
  std::vector<std::string> catalog_problems;
  CheckCatalog(in, &catalog_problems, &plan);
  const bool had_catalog =
      std::any_of(in.catalog.begin(), in.catalog.end(),
                  [](const ManifestRow& r) { return r.object_type == object_type::kTableDef; });
  if (!had_catalog) {
    for (ManifestRow& g : GrantsFromJournal(in.journal, in.folded))
      plan.upserts.push_back(std::move(g));
  }
  for (const auto& [sid, h] : in.folded.tables) plan.journal.push_back(HeadBaselineRow(h));
  HeadsMarker marker;
  marker.workspace_format = kWorkspaceFormat;
  marker.heads_format = kManifestFormatVersion;
  marker.source_version = b.source_version;
  marker.head_count = b.heads;
  marker.baseline_digest = b.baseline_digest;
  marker.head_digest = b.head_digest;
  marker.migration = token;
  ManifestRow record;
  record.object_id = MigrationRecordId(token);
  record.object_type = std::string(object_type::kMigrationRecord);
  record.metadata = json{{"actor", kMigrationActor},      {"from", from},
                         {"to_format", kWorkspaceFormat}, {"branch", b.branch},
                         {"incarnation", b.incarnation},  {"source_version", b.source_version},
                         {"created_at", now_micros},      {"catalog_mended", catalog_problems}}
                        .dump();
  plan.journal.push_back(HeadsMarkerRow(marker));
  plan.journal.push_back(std::move(record));
  return plan;
}

// Reopens the produced version through the normal head reader and checks it
// against the fold it was built from and its marker's baselines.
Status VerifyProduced(const Manifest& manifest, const BranchMigration& b) {
  ASSIGN_OR_RETURN(ManifestVersion v, manifest.At(b.branch, b.produced_version));
  RETURN_NOT_OK(ReadSnapshot(manifest, v).status());
  ASSIGN_OR_RETURN(HeadsInspection in, InspectHeads(manifest, b.branch, b.produced_version));
  in.problems.insert(in.problems.end(), in.baseline_problems.begin(), in.baseline_problems.end());
  if (!in.problems.empty()) {
    return Status::DataLoss(Named(b.branch) + " after migration: " + in.problems.front());
  }
  if (HeadSetDigest(in.stored.tables, in.stored.graphs) != b.head_digest) {
    return Status::DataLoss(Named(b.branch) + " after migration: heads differ from the fold");
  }
  return Status::OK();
}

// A marker already on the branch (a run stopped after its commit): complete
// when the heads there still match it and its version verifies; a loud
// refusal otherwise, and the workspace is never stamped over it.
Result<BranchMigration> ConfirmMarker(const Manifest& manifest, const ManifestRow& row,
                                      BranchMigration b) {
  ASSIGN_OR_RETURN(HeadsMarker marker, ParseHeadsMarker(row));
  b.source_version = marker.source_version;
  b.produced_version = marker.produced_version;
  b.heads = marker.head_count;
  b.baseline_digest = marker.baseline_digest;
  b.head_digest = marker.head_digest;
  b.already_done = true;
  ASSIGN_OR_RETURN(std::string now, StoredHeadDigest(manifest, b.branch));
  if (now != b.head_digest) {
    return Status::FailedPrecondition(
               Named(b.branch) + " carries a heads marker (migration " + marker.migration +
               ", from manifest version " + std::to_string(b.source_version) +
               ") that does not match its heads: something committed on it after its "
               "migration commit (manifest version " +
               std::to_string(b.produced_version) + "); the workspace will not be stamped over it")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  RETURN_NOT_OK(VerifyProduced(manifest, b));
  return b;
}

// The transaction id of migration `token`'s commit of the branch whose ref
// id is `incarnation`: derived, so the commit's version file names the branch
// it was made for, readable without its rows (which a deletion may have
// removed) and the same for every process that carries the migration on.
std::string MigrationCommitTxn(const std::string& token, const std::string& incarnation) {
  return "migration-" +
         Sha256Hex("loam migration commit\n" + token + "\n" + incarnation).substr(0, 32);
}

// Withdraws `branch`'s own version file `version` when it is migration
// `token`'s commit for incarnation `incarnation` of the branch, made for a
// branch deleted (and perhaps recreated) under it: a Loam from before the
// stamp deletes and makes a branch without a condition, so the commit's put
// can land on the new branch or in the deleted one's directory (what this
// leaves: docs/format/manifest.md, "A branch recreated under its migration
// commit"). Only while the claim is this process's; true when withdrawn.
Result<bool> WithdrawStrayCommit(Manifest& manifest, const LedgerWriter& ledger,
                                 const std::string& token, const std::string& branch,
                                 const std::string& incarnation, uint64_t version) {
  if (branch.empty()) return false;  // main is never deleted
  const std::string ours = MigrationCommitTxn(token, incarnation);
  ASSIGN_OR_RETURN(std::optional<std::string> txn, manifest.OwnVersionTxn(branch, version));
  if (txn != ours) return false;
  RETURN_NOT_OK(ledger.StillOwner());
  RETURN_NOT_OK(manifest.WithdrawVersion(branch, version, ours));
  LOAM_LOG_WARN(
      "{}: withdrew manifest version {}, migration {}'s commit of an earlier branch of that "
      "name (ref {}, deleted during the migration)",
      Named(branch), version, token, incarnation);
  return true;
}

// A marker from a commit in `b`'s own directory must come from a commit made
// for this incarnation of the branch: a stray commit of an earlier branch of
// that name that the takeover's ledger pass did not withdraw (its record
// gone, or a migration begun by a Loam that gave its commits random
// transaction ids) is refused, never confirmed. A marker whose version is
// not in the branch's own directory is the parent's, inherited.
Status CheckMarkerIsThisBranchs(const Manifest& manifest, const std::string& token,
                                const BranchMigration& b, const HeadsMarker& marker) {
  if (b.branch.empty()) return Status::OK();  // main is never deleted
  ASSIGN_OR_RETURN(std::optional<std::string> txn,
                   manifest.OwnVersionTxn(b.branch, marker.produced_version));
  if (!txn) return Status::OK();
  bool foreign = false;
  std::string made_for;  // the ref id it was made for, when its record says
  if (txn->starts_with("migration-")) {
    foreign = *txn != MigrationCommitTxn(marker.migration, b.incarnation);
  } else {
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows,
                     manifest.CommitRows(b.branch, marker.produced_version));
    for (const ManifestRow& r : rows) {
      if (r.object_id != MigrationRecordId(marker.migration)) continue;
      json j = ParseJson(r.metadata);
      if (!j.is_object() || !j.contains("incarnation")) continue;
      made_for = StringAt(j, "incarnation");
      foreign = made_for != b.incarnation;
    }
  }
  if (!foreign) return Status::OK();
  return Status::FailedPrecondition(
             Named(b.branch) + " holds migration " + marker.migration +
             "'s commit (manifest version " + std::to_string(marker.produced_version) +
             ") of an earlier branch of that name" +
             (made_for.empty() ? std::string() : " (ref " + made_for + ")") +
             ", deleted and made again during the migration; the workspace will not be stamped "
             "over it: run 'loam migrate --take-over " +
             token + " --repin-branches', or remove that version from the branch's directory")
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

// A version file in `branch`'s own directory numbered at or below its fork
// point is never one of its own commits (those follow the fork), yet as the
// newest file there it is read for the branch's latest state: a commit of an
// earlier branch of that name that no withdrawal found. Refused, so the
// workspace is never stamped over it.
Status CheckNoStrayAtOrBelowFork(const Manifest& manifest, const std::string& token,
                                 const std::string& branch) {
  if (branch.empty()) return Status::OK();
  ASSIGN_OR_RETURN(ManifestVersion tip, manifest.Current(branch));
  ASSIGN_OR_RETURN(BranchInfo fork, manifest.BranchParent(branch));
  if (tip.version > fork.parent_version) return Status::OK();
  ASSIGN_OR_RETURN(std::optional<std::string> txn, manifest.OwnVersionTxn(branch, tip.version));
  if (!txn) return Status::OK();  // the parent's version, read through the fork
  return Status::FailedPrecondition(
             Named(branch) + " holds version " + std::to_string(tip.version) +
             " in its own directory, at or below its fork point (version " +
             std::to_string(fork.parent_version) +
             "): a commit of an earlier branch of that name, deleted and made again during the "
             "migration; the workspace will not be stamped over it: run 'loam migrate "
             "--take-over " +
             token + " --repin-branches', or remove that version from the branch's directory")
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

// The ref id of `branch` now; nullopt when it is gone.
Result<std::optional<std::string>> RefNow(const Manifest& manifest, const std::string& branch) {
  Result<std::string> ref = manifest.BranchId(branch);
  if (ref.status().IsNotFound()) return std::optional<std::string>();
  RETURN_NOT_OK(ref.status());
  return std::optional<std::string>(*std::move(ref));
}

}  // namespace

std::string LedgerKey(const std::string& root, const std::string& token,
                      const std::string& incarnation) {
  return MigrationPrefix(root) + token + "/branch-" +
         (incarnation.empty() ? std::string("main") : incarnation) + ".json";
}

Status LedgerWriter::Write(const std::string& key, const BranchMigration& b, bool done) {
  const std::string body = json{
      {"format", 1},
      {"state", done ? "done" : "pending"},
      {"owner", owner_},
      {"branch", b.branch},
      {"incarnation", b.incarnation},
      {"source_version", b.source_version},
      {"produced_version", b.produced_version},
      {"head_count", b.heads},
      {"baseline_digest", b.baseline_digest},
      {"head_digest",
       b.head_digest}}.dump();
  auto seen = etags_.find(key);
  if (seen == etags_.end()) {
    // First write here: replace what is there, as read now, but only while
    // the claim is this process's (a successor may have written it).
    RETURN_NOT_OK(StillOwner());
    ObjectMeta meta;
    Result<std::string> there = store_.Get(key, &meta);
    if (!there.ok() && !there.status().IsNotFound()) return there.status();
    seen = etags_.emplace(key, there.ok() ? meta.etag : "").first;
  }
  Result<ObjectMeta> put = seen->second.empty() ? store_.PutIfAbsent(key, body)
                                                : store_.PutIfMatch(key, body, seen->second);
  if (put.status().IsAborted() || put.status().IsAlreadyExists() || put.status().IsNotFound()) {
    return Status::FailedPrecondition("migration ledger record " + key +
                                      " was written by another process since this one read it: "
                                      "this migration was taken over; this process stops")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  RETURN_NOT_OK(put.status());
  seen->second = put->etag;
  return Status::OK();
}

Result<std::pair<int, int>> CountLedger(ObjectStore& store, const std::string& root,
                                        const std::string& token, const BranchRefs& refs,
                                        const std::string* owner) {
  std::pair<int, int> counts{0, 0};
  for (const auto& [name, inc] : refs) {
    Result<std::string> text = store.Get(LedgerKey(root, token, inc));
    if (!text.ok() && !text.status().IsNotFound()) return text.status();
    json j = ParseJson(text.ok() ? *text : "");
    const bool done = j.is_object() && StringAt(j, "state") == "done" &&
                      (owner == nullptr || StringAt(j, "owner") == *owner);
    (done ? counts.first : counts.second)++;
  }
  return counts;
}

Result<std::string> StoredHeadDigest(const Manifest& manifest, const std::string& branch,
                                     int64_t* highest_id) {
  ASSIGN_OR_RETURN(ManifestVersion tip, manifest.Current(branch));
  std::vector<std::string> problems;
  FoldedHeads stored = ReadStoredHeads(manifest, tip, &problems);
  if (!problems.empty()) return Status::DataLoss(Named(branch) + ": " + problems.front());
  for (const auto& [sid, h] : stored.tables) {
    if (highest_id) *highest_id = std::max({*highest_id, sid, h.inc});
  }
  return HeadSetDigest(stored.tables, stored.graphs);
}

Status WithdrawStrayCommits(WorkspaceEngine& ws, const LedgerWriter& ledger,
                            const std::string& token, const BranchRefs& now,
                            std::map<std::string, uint64_t>* recreated, MigrationReport* report) {
  const std::string prefix = MigrationPrefix(ws.root()) + token + "/";
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> records, ws.store()->ListAll(prefix));
  for (const ObjectInfo& o : records) {
    if (o.key.find("/branch-") == std::string::npos) continue;
    Result<std::string> text = ws.store()->Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    json j = ParseJson(*text);
    if (!j.is_object()) continue;
    const std::string name = StringAt(j, "branch");
    const std::string incarnation = StringAt(j, "incarnation");
    const int64_t source = IntegerAt(j, "source_version").value_or(0);
    auto there = now.find(name);
    if (name.empty() || source <= 0 || (there != now.end() && there->second == incarnation)) {
      continue;  // main, or the branch it was made for
    }
    // The branch's commit is its pinned tip's next version, or none.
    const uint64_t version = static_cast<uint64_t>(source) + 1;
    ASSIGN_OR_RETURN(bool withdrawn,
                     WithdrawStrayCommit(ws.manifest(), ledger, token, name, incarnation, version));
    if (withdrawn) {  // the newest, if several earlier branches of that name left one
      uint64_t& noted =
          (there == now.end() ? report->withdrawn_in_deleted_branches : *recreated)[name];
      noted = std::max(noted, version);
    }
  }
  return Status::OK();
}

Result<BranchRefs> ReadBranchRefs(const Manifest& manifest) {
  BranchRefs refs{{"", ""}};
  ASSIGN_OR_RETURN(std::vector<std::string> names, manifest.ListBranches());
  for (const std::string& name : names) {
    ASSIGN_OR_RETURN(refs[name], manifest.BranchId(name));
  }
  return refs;
}

Result<BranchMigration> MigrateBranch(WorkspaceEngine& ws, LedgerWriter& ledger_writer,
                                      const std::string& token, const std::string& from,
                                      const std::string& branch, const std::string& incarnation,
                                      const std::function<Status(std::string_view)>& fail) {
  Manifest& manifest = ws.manifest();
  const std::string ledger = LedgerKey(ws.root(), token, incarnation);
  BranchMigration b;
  b.branch = branch;
  b.incarnation = incarnation;
  RETURN_NOT_OK(CheckNoStrayAtOrBelowFork(manifest, token, branch));
  ASSIGN_OR_RETURN(std::optional<ManifestRow> marker,
                   manifest.FindJournalRow(branch, HeadsMarkerId(kWorkspaceFormat)));
  if (marker) {
    ASSIGN_OR_RETURN(HeadsMarker parsed, ParseHeadsMarker(*marker));
    RETURN_NOT_OK(CheckMarkerIsThisBranchs(manifest, token, b, parsed));
    ASSIGN_OR_RETURN(b, ConfirmMarker(manifest, *marker, std::move(b)));
    RETURN_NOT_OK(ledger_writer.Write(ledger, b, /*done=*/true));
    return b;
  }
  // Pin the tip and fold it once.
  ASSIGN_OR_RETURN(ManifestVersion tip, manifest.Current(branch));
  ASSIGN_OR_RETURN(HeadsInspection in, InspectHeads(manifest, branch, tip.version));
  b.source_version = tip.version;
  b.heads = static_cast<int64_t>(in.folded.tables.size());
  b.baseline_digest = HeadSetDigest(in.folded.tables);
  b.head_digest = HeadSetDigest(in.folded.tables, in.folded.graphs);
  RETURN_NOT_OK(ledger_writer.Write(ledger, b, /*done=*/false));
  ASSIGN_OR_RETURN(PublishPlan plan,
                   BranchPlan(in, b, token, from, manifest.options().dataset.clock->NowMicros()));
  RETURN_NOT_OK(fail(failpoint::kMigrateBeforeBranchCommit));
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = std::string(kMigrationActor);
  spec.commit_id = token;
  spec.txn_id = MigrationCommitTxn(token, incarnation);
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    RETURN_NOT_OK(ledger_writer.StillOwner());  // as late as a check can be
    ASSIGN_OR_RETURN(std::string ref, manifest.BranchId(branch));
    if (view.base().version != tip.version || ref != incarnation) {
      return Status::FailedPrecondition(
                 Named(branch) + " changed during migration (pinned at manifest version " +
                 std::to_string(tip.version) + ", ref " + incarnation + "; now version " +
                 std::to_string(view.base().version) + ", ref " + ref +
                 "): a writer is active, or the branch was recreated; stop every writer and run "
                 "'loam migrate --take-over " +
                 token + "'")
          .WithErrorCode(ErrorCode::kPreconditionFailed);
    }
    RETURN_NOT_OK(fail(failpoint::kMigrateBranchCommitChecked));
    return plan;
  };
  ASSIGN_OR_RETURN(PublishResult published, manifest.Publish(spec));
  b.produced_version = published.manifest_version;
  RETURN_NOT_OK(fail(failpoint::kMigrateAfterBranchCommit));
  ASSIGN_OR_RETURN(std::optional<std::string> ref, RefNow(manifest, branch));
  if (ref != incarnation) {
    // The commit may have landed on a new branch, or in a deleted one's
    // directory: withdrawn if so.
    ASSIGN_OR_RETURN(bool withdrawn, WithdrawStrayCommit(manifest, ledger_writer, token, branch,
                                                         incarnation, b.produced_version));
    return Status::FailedPrecondition(
               Named(branch) + " was deleted" + (ref ? " and recreated" : "") +
               " during its migration commit" +
               (withdrawn ? " (manifest version " + std::to_string(b.produced_version) +
                                (ref ? ", which landed on the new branch, was withdrawn)"
                                     : ", which landed in its directory, was withdrawn)")
                          : "") +
               ": a writer is active; stop every writer and run 'loam migrate --take-over " +
               token + " --repin-branches'")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  RETURN_NOT_OK(VerifyProduced(manifest, b));
  RETURN_NOT_OK(ledger_writer.Write(ledger, b, /*done=*/true));
  return b;
}

}  // namespace loam::migration_internal
