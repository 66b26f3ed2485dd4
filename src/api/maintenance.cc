#include "loam/maintenance.h"

#include <algorithm>

#include "api/workspace_access.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/retention.h"
#include "engine/table_maintenance.h"
#include "ingest/run_record.h"

namespace loam {

using internal::EngineBranch;
using internal::WorkspaceAccess;

namespace {

constexpr int64_t kMaxSeconds = int64_t{1} << 40;  // µs of it fit an int64

ExpiryReport ExpiryOf(const RetentionReport& r, int64_t window_seconds) {
  ExpiryReport out;
  out.window_seconds = window_seconds;
  out.manifest_versions_removed = r.manifest_versions_removed;
  out.table_versions_removed = r.table_versions_removed;
  out.tables_removed = r.tables_removed;
  out.forks_removed = r.forks_removed;
  out.files_removed = r.files_removed;
  out.bytes_removed = r.bytes_removed;
  for (const auto& [branch, v] : r.oldest_manifest_version) {
    out.oldest_version[branch.empty() ? "main" : branch] = v;
  }
  return out;
}

HeadsCheck CheckOf(const HeadsReport& r) {
  return {r.manifest_version, r.tables_checked,   r.problems,
          r.changes,          r.pending_sidecars, r.unindexed_journal_fragments};
}

// Signs that a writer still runs: sidecars not yet due for recovery (lease
// not over, younger than the grace period) and runs whose lease is live.
// "" when there are none.
Result<std::string> LiveWriters(const WorkspaceEngine& ws) {
  const WorkspaceOptions& options = ws.options();
  ASSIGN_OR_RETURN(int young, ws.SidecarsNotYetDue(options.recovery_grace_micros));
  ASSIGN_OR_RETURN(std::vector<ingest::RunRecord> runs,
                   ingest::RunStore(ws.store(), ws.root()).List());
  const int64_t now = options.manifest.dataset.clock->NowMicros();
  std::vector<std::string> leased;
  for (const ingest::RunRecord& r : runs) {
    if (!ingest::IsTerminal(r.state) && r.lease_expires_micros > now) leased.push_back(r.id);
  }
  if (young == 0 && leased.empty()) return std::string();
  std::string found = std::to_string(young) +
                      " write sidecars whose lease is not over (at most the recovery grace "
                      "period, " +
                      std::to_string(options.recovery_grace_micros / 1'000'000) + " s) and " +
                      std::to_string(leased.size()) + " runs with a live lease";
  if (!leased.empty()) found += " (" + leased.front() + (leased.size() > 1 ? ", ..." : "") + ")";
  return found;
}

}  // namespace

Result<std::vector<TableCompaction>> CompactTables(Workspace& ws, const std::string& table) {
  WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(Snapshot snap, engine.Current());
  std::vector<TableCompaction> out;
  for (const auto& [name, t] : snap.tables) {
    if (!table.empty() && name != table) continue;
    WriteRequest w;
    w.table = name;
    w.table_sid = t.def.sid;
    w.mode = WriteMode::kCompact;
    w.principal = WorkspaceAccess::Principal(ws);
    ASSIGN_OR_RETURN(WriteResult r, engine.Write(w));
    out.push_back({name, r.changed, r.table_version});
  }
  if (!table.empty() && out.empty()) {
    return Status::NotFound("table '" + table + "' does not exist on branch 'main'");
  }
  if (table.empty()) RETURN_NOT_OK(engine.manifest().Compact(""));
  return out;
}

Result<ExpiryReport> ApplyRetention(Workspace& ws, int64_t grace_seconds) {
  if (grace_seconds < 0 || grace_seconds > kMaxSeconds) {
    return Status::InvalidArgument("the grace period is 0 s to 2^40 s");
  }
  WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(RetentionSetting setting, ReadRetentionSetting(*engine.store(), engine.root()));
  ASSIGN_OR_RETURN(RetentionReport r,
                   ExpireVersions(engine, Clock::System()->NowMicros(), setting.window_seconds,
                                  grace_seconds * 1'000'000));
  return ExpiryOf(r, setting.window_seconds);
}

Result<RetentionInfo> GetRetention(const Workspace& ws) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(RetentionSetting setting, ReadRetentionSetting(*engine.store(), engine.root()));
  ASSIGN_OR_RETURN(uint64_t oldest, ReadTimeTravelHorizon(*engine.store(), engine.root(), ""));
  return RetentionInfo{setting.window_seconds, std::max<uint64_t>(oldest, 1)};
}

Status SetRetentionWindow(Workspace& ws, int64_t window_seconds) {
  const WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  return WriteRetentionSetting(*engine.store(), engine.root(), {window_seconds});
}

Result<HeadsCheck> VerifyHeads(const Workspace& ws, const std::string& branch) {
  ASSIGN_OR_RETURN(HeadsReport r, WorkspaceAccess::Engine(ws).VerifyHeads(EngineBranch(branch)));
  return CheckOf(r);
}

Result<HeadsCheck> RepairHeads(Workspace& ws, const std::string& branch, bool force) {
  WorkspaceEngine& engine = WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(std::string live, LiveWriters(engine));
  if (!live.empty() && !force) {
    return Status::FailedPrecondition(
               "heads repair found " + live +
               ": a writer may still be running, and repair would roll its write back. Stop "
               "every writer and wait for the grace period, or pass --force if you know they "
               "are gone")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  ASSIGN_OR_RETURN(HeadsReport r, engine.RepairHeads(EngineBranch(branch)));
  return CheckOf(r);
}

struct Maintainer::Rep {
  std::shared_ptr<WorkspaceEngine> engine;
  std::string principal;
  MaintainerOptions options;
  std::unique_ptr<MaintenanceLease> lease;
  MaintenanceMemo memo;
};

Maintainer::Maintainer(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Maintainer::~Maintainer() = default;

Result<std::unique_ptr<Maintainer>> Maintainer::Create(Workspace& ws,
                                                       const MaintainerOptions& options) {
  if (options.min_fragments < 2 || options.target_rows < 2 || options.grace_seconds < 0 ||
      options.grace_seconds > kMaxSeconds || options.lease_seconds < 1 ||
      options.lease_seconds > kMaxSeconds) {
    return Status::InvalidArgument(
        "maintainer options: min_fragments and target_rows are 2 or more, grace_seconds 0 to "
        "2^40, lease_seconds 1 to 2^40");
  }
  auto rep = std::make_unique<Rep>();
  rep->engine = WorkspaceAccess::Shared(ws);
  rep->principal = WorkspaceAccess::Principal(ws);
  rep->options = options;
  rep->lease = std::make_unique<MaintenanceLease>(
      rep->engine->store(), rep->engine->root(), "loam maintain " + NewUlidString(),
      Clock::System(), options.lease_seconds * 1'000'000);
  return std::unique_ptr<Maintainer>(new Maintainer(std::move(rep)));
}

Result<MaintenancePass> Maintainer::RunOnce() {
  MaintenancePass pass;
  ASSIGN_OR_RETURN(pass.lease_held, rep_->lease->Acquire());
  if (!pass.lease_held) return pass;
  CompactionPolicy policy;
  policy.min_fragments = rep_->options.min_fragments;
  policy.options.target_rows = rep_->options.target_rows;
  ASSIGN_OR_RETURN(MaintenanceReport r,
                   CompactAllBranches(*rep_->engine, policy, rep_->principal, &rep_->memo));
  pass.tables = r.tables;
  pass.compacted = r.compacted;
  pass.fragments_removed = r.fragments_removed;
  pass.fragments_added = r.fragments_added;
  pass.bytes_written = r.bytes_written;
  pass.fragments = r.fragments;
  pass.deferred = r.deferred;
  ASSIGN_OR_RETURN(RetentionSetting setting,
                   ReadRetentionSetting(*rep_->engine->store(), rep_->engine->root()));
  ASSIGN_OR_RETURN(RetentionReport expired,
                   ExpireVersions(*rep_->engine, Clock::System()->NowMicros(),
                                  setting.window_seconds, rep_->options.grace_seconds * 1'000'000));
  pass.retention = ExpiryOf(expired, setting.window_seconds);
  return pass;
}

Status Maintainer::Release() { return rep_->lease->Release(); }

}  // namespace loam
