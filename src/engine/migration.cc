// `loam migrate` (migration.h): the claim, the recovery barrier, the branch
// loop, finalization and the stamp. One branch's step: migration_branch.cc.
#include "engine/migration.h"

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/migration_internal.h"

namespace loam {
namespace {

using json = nlohmann::json;
using migration_internal::BranchRefs;
using migration_internal::ClaimState;
using migration_internal::ParseClaim;

std::string RefsKey(const std::string& root, const std::string& token) {
  return MigrationPrefix(root) + token + "/refs.json";
}

std::string Describe(const FormatFinding& f) {
  switch (f.found) {
    case FoundFormat::kJournalOnly:
      return "format " + std::to_string(kPredecessorFormat) + " (journal-only manifest)";
    case FoundFormat::kUnstampedHeads:
      if (f.head_directory == 0) return "unstamped, no commit yet";
      return "unstamped heads (head directory format " + std::to_string(f.head_directory) + ")";
    case FoundFormat::kPartiallyMigrated:
      return "a partial migration";
    default:
      return "format " + std::to_string(f.stamped_format);
  }
}

Status Held(const std::string& token, const std::string& since) {
  return Status::FailedPrecondition(
             "migration " + token + (since.empty() ? "" : " (claimed at " + since + ")") +
             " holds this workspace; if its process is gone, run 'loam migrate --take-over " +
             token + "'")
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

Status Refused(std::string message) {
  return Status::FailedPrecondition(std::move(message))
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

Status PutClaim(ObjectStore& store, const std::string& key, const ClaimState& c, int64_t now,
                PutOptions put, const json& extra = json::object()) {
  json j = {{"format", 1},
            {"operation", "migrate"},
            {"from", c.from},
            {"from_format", c.from_format},
            {"to_format", kWorkspaceFormat},
            {"token", c.token},
            {"owner", c.owner},
            {"claimed_at", FormatUtcSeconds(now)},
            {"claimed_micros", now}};
  j.update(extra);
  const std::string body = j.dump();
  StringSource src(body);
  return store.Write(key, src, put).status();
}

// Create-if-absent claim; a held claim is taken over only by its token.
Result<ClaimState> Claim(ObjectStore& store, const std::string& root, const std::string& from,
                         int from_format, const MigrateOptions& m, int64_t now) {
  const std::string key = MigrationClaimKey(root);
  for (int attempt = 0; attempt < 2; ++attempt) {
    ObjectMeta meta;
    Result<std::string> held = store.Get(key, &meta);
    if (held.ok()) {
      ASSIGN_OR_RETURN(ClaimState c, ParseClaim(key, *held));
      if (m.take_over.empty()) return Held(c.token, c.claimed_at);
      if (m.take_over != c.token) {
        return Refused("--take-over " + m.take_over + " does not name the claimed migration, " +
                       c.token);
      }
      return c;
    }
    if (!held.status().IsNotFound()) return held.status();
    if (!m.take_over.empty()) {
      return Refused("no migration is claimed: run 'loam migrate' without --take-over");
    }
    ClaimState c{NewUlidString(), "", from, "", from_format};
    c.owner = c.token;
    Status put = PutClaim(store, key, c, now, {PutCondition::kIfAbsent});
    if (put.ok()) return c;
    if (!put.IsAlreadyExists()) return put;
  }
  return Status::Conflict("the migration claim changed twice while it was read");
}

// A takeover, once the ledger and the sidecars are classified: a new owner
// replaces the old one by compare-and-swap, with the classification.
Status TakeOver(ObjectStore& store, const std::string& root, ClaimState* c, int64_t now,
                const MigrationReport& report) {
  const std::string key = MigrationClaimKey(root);
  ObjectMeta meta;
  ASSIGN_OR_RETURN(std::string text, store.Get(key, &meta));
  ASSIGN_OR_RETURN(ClaimState held, ParseClaim(key, text));
  if (held.owner != c->owner) return Held(held.token, "");
  c->owner = NewUlidString();
  PutOptions put{PutCondition::kIfMatch, meta.etag};
  json found = {{"taken_over_micros", now},
                {"ledger_done", report.ledger_done},
                {"ledger_pending", report.ledger_pending},
                {"sidecars_found", report.sidecars_found}};
  Status s = PutClaim(store, key, *c, now, put, found);
  if (s.IsFailedPrecondition() || s.IsAlreadyExists()) return Held(c->token, "");
  return s;
}

Status StillOwner(ObjectStore& store, const std::string& root, const ClaimState& c) {
  const std::string key = MigrationClaimKey(root);
  Result<std::string> got = store.Get(key);
  if (got.status().IsNotFound()) {  // a successor finished and released it
    return Refused(
        "this migration was taken over by another process, which finished it (migration " +
        c.token + "); this one stops");
  }
  ASSIGN_OR_RETURN(std::string text, std::move(got));
  ASSIGN_OR_RETURN(ClaimState held, ParseClaim(key, text));
  if (held.owner != c.owner) {
    return Refused("this migration was taken over by another process (migration " + c.token +
                   "); this one stops");
  }
  return Status::OK();
}

// The branch refs captured by the first run of this migration (or re-pinned
// by a takeover with --repin-branches); every later run and finalization
// must find the same set.
Result<BranchRefs> PinRefs(ObjectStore& store, const std::string& root, const std::string& token,
                           const BranchRefs& now, bool repin) {
  json refs = json::object();
  for (const auto& [name, inc] : now) refs[name.empty() ? std::string("main") : name] = inc;
  const std::string body = json{{"format", 1}, {"refs", refs}}.dump();
  StringSource src(body);
  PutOptions put;
  if (!repin) put.condition = PutCondition::kIfAbsent;
  Status written = store.Write(RefsKey(root, token), src, put).status();
  if (written.ok()) return now;
  if (!written.IsAlreadyExists()) return written;
  ASSIGN_OR_RETURN(std::string text, store.Get(RefsKey(root, token)));
  json j = ParseJson(text);
  if (!j.is_object() || !j.contains("refs") || !j["refs"].is_object()) {
    return Status::DataLoss(RefsKey(root, token) + " is malformed");
  }
  BranchRefs pinned;
  for (const auto& [name, inc] : j["refs"].items()) {
    pinned[name == "main" ? std::string() : name] = inc.is_string() ? inc.get<std::string>() : "";
  }
  return pinned;
}

Status SameRefs(const BranchRefs& pinned, const BranchRefs& now, const std::string& when,
                const std::string& token) {
  const std::string next =
      "; the migration stops. Stop every writer; once the branch set is "
      "settled, 'loam migrate --take-over " +
      token + " --repin-branches' records the new set and goes on";
  for (const auto& [name, inc] : pinned) {
    auto it = now.find(name);
    if (it == now.end() || it->second != inc) {
      return Refused("branch '" + (name.empty() ? std::string("main") : name) + "' " +
                     (it == now.end() ? "was deleted" : "was deleted and recreated") + " " + when +
                     next);
    }
  }
  for (const auto& [name, inc] : now) {
    if (!pinned.count(name)) return Refused("branch '" + name + "' was created " + when + next);
  }
  return Status::OK();
}

// Every pinned branch's record is done, and its heads are still the ones the
// migration published (a writer that ignored the claim is caught here).
Status CheckBeforeStamp(WorkspaceEngine& ws, const std::string& token, const std::string& owner,
                        const BranchRefs& pinned, const std::vector<BranchMigration>& branches,
                        int64_t* highest_id) {
  ASSIGN_OR_RETURN(auto counts,
                   migration_internal::CountLedger(*ws.store(), ws.root(), token, pinned, &owner));
  if (counts.second != 0) {
    return Refused("migration ledger holds " + std::to_string(counts.second) +
                   " records not done by this process; not stamping");
  }
  for (const BranchMigration& b : branches) {
    ASSIGN_OR_RETURN(std::string digest,
                     migration_internal::StoredHeadDigest(ws.manifest(), b.branch, highest_id));
    if (digest != b.head_digest) {
      return Refused("branch '" + (b.branch.empty() ? std::string("main") : b.branch) +
                     "' changed after its migration commit (a writer is still running); not "
                     "stamping. Stop every writer and run 'loam migrate --take-over " +
                     token + "'");
    }
  }
  return Status::OK();
}

using FailFn = std::function<Status(std::string_view)>;

// Up to the barrier: the format, the claim, a takeover's classification.
// False when there is nothing to migrate (`report` says why).
Result<bool> Begin(ObjectStore& store, const std::string& root, WorkspaceEngine& ws,
                   const MigrateOptions& m, const Clock& clock, ClaimState* claim,
                   MigrationReport* report) {
  ASSIGN_OR_RETURN(FormatFinding found, FindFormat(store, root, ws.manifest()));
  report->from = Describe(found);
  if (found.found == FoundFormat::kNewer || found.found == FoundFormat::kOlderStamped) {
    return ServableOrRefusal(found, root);
  }
  if (found.found == FoundFormat::kCurrent) {
    report->already_current = true;
    // A run that stamped and then stopped leaves its claim: release it.
    Status gone = store.Delete(MigrationClaimKey(root));
    if (!gone.ok() && !gone.IsNotFound()) return gone;
    return false;
  }
  const int from_format = found.found == FoundFormat::kJournalOnly ? kPredecessorFormat : 0;
  ASSIGN_OR_RETURN(*claim, Claim(store, root, report->from, from_format, m, clock.NowMicros()));
  report->token = claim->token;
  report->took_over = !m.take_over.empty();
  if (!claim->from.empty()) report->from = claim->from;
  if (ReadFormatStamp(store, root).ok()) {  // another run stamped meanwhile
    if (!report->took_over) RETURN_NOT_OK(store.Delete(MigrationClaimKey(root)));
    report->already_current = true;
    return false;
  }
  return true;
}

// After the branches: the same refs, every ledger record done, heads
// untouched since their commit, the claim still ours; then the stamp, the
// commit point, and the claim released.
Status Finish(WorkspaceEngine& ws, const BranchRefs& pinned, const ClaimState& claim,
              const Clock& clock, const FailFn& fail, MigrationReport& report) {
  ObjectStore& store = *ws.store();
  const std::string& root = ws.root();
  ASSIGN_OR_RETURN(BranchRefs after, migration_internal::ReadBranchRefs(ws.manifest()));
  RETURN_NOT_OK(SameRefs(pinned, after, "during the migration", report.token));
  int64_t highest_id = 0;
  RETURN_NOT_OK(
      CheckBeforeStamp(ws, report.token, claim.owner, pinned, report.branches, &highest_id));
  RETURN_NOT_OK(StillOwner(store, root, claim));
  // A counter that lags the ids in use would mint one again.
  ASSIGN_OR_RETURN(report.identity_counter_was, AdvanceIdentityCounter(store, root, highest_id));
  RETURN_NOT_OK(fail(failpoint::kMigrateBeforeStamp));
  FormatStamp stamp{kWorkspaceFormat, "migrate", report.token, clock.NowMicros()};
  Status stamped = WriteFormatStamp(store, root, stamp);
  if (stamped.IsAlreadyExists()) {
    ASSIGN_OR_RETURN(FormatStamp there, ReadFormatStamp(store, root));
    if (there.format != kWorkspaceFormat) return ServableOrRefusal(FindingOf(there), root);
  } else {
    RETURN_NOT_OK(stamped);
  }
  RETURN_NOT_OK(fail(failpoint::kMigrateAfterStamp));
  Status released = store.Delete(MigrationClaimKey(root));
  return released.IsNotFound() ? Status::OK() : released;
}

// The journal-index folds the branch commits held back while they could
// still be withdrawn, where a publish would have made them (more than
// `index_tail` fragments outside the index). Best effort, as after any
// publish: a look-up without the fold is correct, only slower.
void FoldAfterStamp(Manifest& manifest, const std::vector<BranchMigration>& branches,
                    size_t index_tail) {
  if (index_tail == 0) return;
  for (const BranchMigration& b : branches) {
    Result<int> tail = manifest.JournalIndexTail(b.branch);
    Status folded = tail.status();
    if (tail.ok() && static_cast<size_t>(*tail) > index_tail) folded = manifest.Reconcile(b.branch);
    if (!folded.ok()) LOAM_LOG_WARN("journal index fold after migration: {}", folded.ToString());
  }
}

}  // namespace

Result<MigrationReport> MigrateWorkspace(std::shared_ptr<ObjectStore> store,
                                         const std::string& root, WorkspaceOptions options,
                                         const MigrateOptions& migrate) {
  const FailFn fail = [&options](std::string_view point) {
    return options.failpoint ? options.failpoint(point) : Status::OK();
  };
  options.any_format = true;
  options.recover_on_open = false;
  options.system_actor = true;
  // A branch's migration commit is the one version the migration adds to it
  // before the stamp (no merge or index fold after it; the folds come after
  // the stamp), so a commit that landed on a branch recreated under it is
  // withdrawn whole (migration_branch.cc).
  const size_t index_tail = options.manifest.index_tail_fragments;
  options.manifest.merge_fanout = 0;
  options.manifest.index_tail_fragments = 0;
  const Clock& clock = *options.manifest.dataset.clock;
  if (migrate.repin_branches && migrate.take_over.empty()) {
    return Refused("--repin-branches needs --take-over TOKEN");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<WorkspaceEngine> ws,
                   WorkspaceEngine::Open(store, root, options));
  MigrationReport report;
  ClaimState claim;
  ASSIGN_OR_RETURN(bool go_on, Begin(*store, root, *ws, migrate, clock, &claim, &report));
  if (!go_on) return report;
  RETURN_NOT_OK(fail(failpoint::kMigrateAfterClaim));
  ASSIGN_OR_RETURN(BranchRefs refs, migration_internal::ReadBranchRefs(ws->manifest()));
  if (report.took_over) {
    // Classified before anything is touched: the ledger and the sidecars.
    ASSIGN_OR_RETURN(auto counts, migration_internal::CountLedger(*store, root, claim.token, refs));
    report.ledger_done = counts.first;
    report.ledger_pending = counts.second;
    ASSIGN_OR_RETURN(report.sidecars_found, ws->PendingSidecars());
    RETURN_NOT_OK(TakeOver(*store, root, &claim, clock.NowMicros(), report));
  }
  // The barrier: every write settled before any tip is pinned (against the
  // journal's fold where there are no heads to read or publish).
  ASSIGN_OR_RETURN(report.recovery, claim.from_format == kPredecessorFormat
                                        ? ws->RecoverAgainstJournal()
                                        : ws->Recover(0));
  if (!report.recovery.failures.empty()) {
    return Refused("write sidecars could not be settled (" + report.recovery.failures.front() +
                   "); the workspace stays claimed by migration " + report.token);
  }
  ASSIGN_OR_RETURN(BranchRefs pinned,
                   PinRefs(*store, root, report.token, refs, migrate.repin_branches));
  RETURN_NOT_OK(SameRefs(pinned, refs, "since the migration began", report.token));
  migration_internal::LedgerWriter ledger(
      *store, claim.owner, [&store, &root, &claim] { return StillOwner(*store, root, claim); });
  // Only a takeover's ledger can name a branch deleted since (a first run's
  // token is new).
  std::map<std::string, uint64_t> withdrawn;
  if (report.took_over) {
    RETURN_NOT_OK(migration_internal::WithdrawStrayCommits(*ws, ledger, report.token, refs,
                                                           &withdrawn, &report));
  }
  for (const auto& [name, inc] : pinned) {
    ASSIGN_OR_RETURN(
        BranchMigration b,
        migration_internal::MigrateBranch(*ws, ledger, report.token, report.from, name, inc, fail));
    if (auto w = withdrawn.find(name); w != withdrawn.end()) b.withdrawn_version = w->second;
    report.branches.push_back(std::move(b));
    RETURN_NOT_OK(fail(failpoint::kMigrateAfterBranch));
  }
  RETURN_NOT_OK(Finish(*ws, pinned, claim, clock, fail, report));
  FoldAfterStamp(ws->manifest(), report.branches, index_tail);
  return report;
}

namespace migration_internal {

Result<ClaimState> ParseClaim(const std::string& key, const std::string& text) {
  json j = ParseJson(text);
  ClaimState c;
  if (j.is_object()) {
    c.token = StringAt(j, "token");
    c.owner = StringAt(j, "owner", c.token);
    c.from = StringAt(j, "from");
    c.claimed_at = StringAt(j, "claimed_at");
    c.from_format = static_cast<int>(IntegerAt(j, "from_format").value_or(0));
  }
  if (c.token.empty() || c.owner.empty()) return Status::DataLoss(key + " is malformed");
  return c;
}

}  // namespace migration_internal
}  // namespace loam
