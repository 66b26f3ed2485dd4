// `loam migrate` (migration.h): the claim, the recovery barrier, the branch
// loop, finalization and the stamp. One branch's step: migration_branch.cc.
#include "engine/migration.h"

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/migration_internal.h"

namespace loam {
namespace {

using json = nlohmann::json;
using migration_internal::BranchRefs;

std::string RefsKey(const std::string& root, const std::string& token) {
  return MigrationPrefix(root) + token + "/refs.json";
}

std::string Describe(const FormatFinding& f) {
  switch (f.found) {
    case FoundFormat::kJournalOnly:
      return "format " + std::to_string(kPredecessorFormat) + " (journal-only manifest)";
    case FoundFormat::kUnstampedHeads:
      return "unstamped heads (head directory format " + std::to_string(f.head_directory) + ")";
    case FoundFormat::kPartiallyMigrated:
      return "a partial migration";
    default:
      return "format " + std::to_string(f.stamped_format);
  }
}

Status Held(const std::string& token, const std::string& since) {
  return Status::FailedPrecondition(
             "migration " + token + " (claimed at " + since +
             ") holds this workspace; if its process is gone, run 'loam migrate --take-over " +
             token + "'")
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

// Create-if-absent claim; a held claim is taken over only by its token.
Status Claim(ObjectStore& store, const std::string& root, const std::string& from,
             const MigrateOptions& m, int64_t now, MigrationReport* report) {
  const std::string key = MigrationClaimKey(root);
  for (int attempt = 0; attempt < 2; ++attempt) {
    Result<std::string> held = store.Get(key);
    if (held.ok()) {
      json j = json::parse(*held, nullptr, /*allow_exceptions=*/false);
      const std::string token = j.is_object() ? j.value("token", "") : "";
      if (token.empty()) return Status::DataLoss(key + " is malformed");
      if (m.take_over != token) {
        if (!m.take_over.empty()) {
          return Status::FailedPrecondition("--take-over " + m.take_over + " does not name the " +
                                            "claimed migration, " + token)
              .WithErrorCode(ErrorCode::kPreconditionFailed);
        }
        return Held(token, j.value("claimed_at", ""));
      }
      report->token = token;
      report->took_over = true;
      return Status::OK();
    }
    if (!held.status().IsNotFound()) return held.status();
    if (!m.take_over.empty()) {
      return Status::FailedPrecondition(
                 "no migration is claimed: run 'loam migrate' without "
                 "--take-over")
          .WithErrorCode(ErrorCode::kPreconditionFailed);
    }
    report->token = NewUlidString();
    const std::string body = json{
        {"format", 1},
        {"operation", "migrate"},
        {"from", from},
        {"to_format", kWorkspaceFormat},
        {"token", report->token},
        {"claimed_at", FormatUtcSeconds(now)},
        {"claimed_micros", now}}.dump();
    StringSource src(body);
    Status put = store.Write(key, src, {PutCondition::kIfAbsent}).status();
    if (!put.IsAlreadyExists()) return put;  // OK, or an I/O error
  }
  return Status::Conflict("the migration claim changed twice while it was read");
}

// The branch refs captured by the first run of this migration; every later
// run (and finalization) must find the same set.
Result<BranchRefs> PinRefs(ObjectStore& store, const std::string& root, const std::string& token,
                           const BranchRefs& now) {
  json refs = json::object();
  for (const auto& [name, inc] : now) refs[name.empty() ? std::string("main") : name] = inc;
  const std::string body = json{{"format", 1}, {"refs", refs}}.dump();
  StringSource src(body);
  Status put = store.Write(RefsKey(root, token), src, {PutCondition::kIfAbsent}).status();
  if (put.ok()) return now;
  if (!put.IsAlreadyExists()) return put;
  ASSIGN_OR_RETURN(std::string text, store.Get(RefsKey(root, token)));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("refs") || !j["refs"].is_object()) {
    return Status::DataLoss(RefsKey(root, token) + " is malformed");
  }
  BranchRefs pinned;
  for (const auto& [name, inc] : j["refs"].items()) {
    pinned[name == "main" ? std::string() : name] = inc.is_string() ? inc.get<std::string>() : "";
  }
  return pinned;
}

Status SameRefs(const BranchRefs& pinned, const BranchRefs& now, const std::string& when) {
  for (const auto& [name, inc] : pinned) {
    auto it = now.find(name);
    if (it == now.end() || it->second != inc) {
      return Status::Conflict("branch '" + name + "' " +
                              (it == now.end() ? "was deleted" : "was deleted and recreated") +
                              " " + when +
                              "; the migration stops: stop every writer and run "
                              "'loam migrate --take-over TOKEN' once the branch set is settled")
          .WithErrorCode(ErrorCode::kConflict);
    }
  }
  for (const auto& [name, inc] : now) {
    if (!pinned.count(name)) {
      return Status::Conflict("branch '" + name + "' was created " + when + "; the migration stops")
          .WithErrorCode(ErrorCode::kConflict);
    }
  }
  return Status::OK();
}

}  // namespace

Result<MigrationReport> MigrateWorkspace(std::shared_ptr<ObjectStore> store,
                                         const std::string& root, WorkspaceOptions options,
                                         const MigrateOptions& migrate) {
  auto fail = [&options](std::string_view point) {
    return options.failpoint ? options.failpoint(point) : Status::OK();
  };
  options.any_format = true;
  options.recover_on_open = false;
  options.system_actor = true;
  ASSIGN_OR_RETURN(std::shared_ptr<Workspace> ws, Workspace::Open(store, root, options));
  ASSIGN_OR_RETURN(FormatFinding found, FindFormat(*store, root, ws->manifest()));
  MigrationReport report;
  report.from = Describe(found);
  if (found.found == FoundFormat::kNewer) return ServableOrRefusal(found, root);
  if (found.found == FoundFormat::kCurrent) {
    report.already_current = true;
    // A run that stamped and then stopped leaves its claim: release it.
    Status gone = store->Delete(MigrationClaimKey(root));
    if (!gone.ok() && !gone.IsNotFound()) return gone;
    return report;
  }
  const int64_t now = options.manifest.dataset.clock->NowMicros();
  RETURN_NOT_OK(Claim(*store, root, report.from, migrate, now, &report));
  RETURN_NOT_OK(fail(failpoint::kMigrateAfterClaim));

  // The barrier: every write settled before any tip is pinned.
  ASSIGN_OR_RETURN(report.recovery, ws->Recover(0));
  if (!report.recovery.failures.empty()) {
    return Status::FailedPrecondition("write sidecars could not be settled (" +
                                      report.recovery.failures.front() +
                                      "); the workspace stays claimed by migration " + report.token)
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  ASSIGN_OR_RETURN(BranchRefs refs, migration_internal::ReadBranchRefs(ws->manifest()));
  ASSIGN_OR_RETURN(BranchRefs pinned, PinRefs(*store, root, report.token, refs));
  RETURN_NOT_OK(SameRefs(pinned, refs, "since the migration began"));
  for (const auto& [name, inc] : pinned) {
    ASSIGN_OR_RETURN(BranchMigration b, migration_internal::MigrateBranch(
                                            *ws, report.token, report.from, name, inc, fail));
    report.branches.push_back(std::move(b));
    RETURN_NOT_OK(fail(failpoint::kMigrateAfterBranch));
  }

  // Finalize: the same refs, every ledger record done, then the stamp.
  ASSIGN_OR_RETURN(BranchRefs after, migration_internal::ReadBranchRefs(ws->manifest()));
  RETURN_NOT_OK(SameRefs(pinned, after, "during the migration"));
  ASSIGN_OR_RETURN(auto counts, migration_internal::CountLedger(*store, root, report.token));
  if (counts.second != 0 || counts.first != static_cast<int>(pinned.size())) {
    return Status::Internal("migration ledger holds " + std::to_string(counts.first) +
                            " complete and " + std::to_string(counts.second) +
                            " incomplete records for " + std::to_string(pinned.size()) +
                            " branches; not stamping");
  }
  RETURN_NOT_OK(fail(failpoint::kMigrateBeforeStamp));
  FormatStamp stamp{kWorkspaceFormat, "migrate", report.token,
                    options.manifest.dataset.clock->NowMicros()};
  Status stamped = WriteFormatStamp(*store, root, stamp);
  if (!stamped.ok() && !stamped.IsAlreadyExists()) return stamped;
  RETURN_NOT_OK(fail(failpoint::kMigrateAfterStamp));
  Status released = store->Delete(MigrationClaimKey(root));
  if (!released.ok() && !released.IsNotFound()) return released;
  return report;
}

}  // namespace loam
