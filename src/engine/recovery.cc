// Recovery of write sidecars (DESIGN.md "Write protocol"): a sidecar left by
// a crashed write is rolled forward when its table effect is confirmed and
// the head still expects it, otherwise rolled back; both publish as actor
// "loam:recovery", and both are idempotent.
#include "common/status_macros.h"
#include "engine/workspace.h"

namespace loam {

Result<RecoveryReport> Workspace::Recover(int64_t grace_micros) {
  RecoveryReport report;
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> sidecars, store_->ListAll(SidecarPrefix(root_)));
  const int64_t now = options_.manifest.dataset.clock->NowMicros();
  for (const ObjectInfo& o : sidecars) {
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;  // finished meanwhile
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(Sidecar s, DecodeSidecar(*text, o.key));
    if (now - s.created_micros < grace_micros) {
      report.left_to_live_writers++;
      continue;
    }
    RETURN_NOT_OK_CTX(RecoverOne(o.key, s, &report), "recovering '" + o.key + "'");
  }
  return report;
}

Status Workspace::RecoverOne(const std::string& key, const Sidecar& s, RecoveryReport* report) {
  Result<ManifestVersion> v = manifest_->Current(s.branch);
  if (v.status().IsNotFound()) {  // the branch is gone, and its heads with it
    report->without_effect++;
    return store_->Delete(key);
  }
  RETURN_NOT_OK(v.status());
  ASSIGN_OR_RETURN(std::optional<TableHead> cur, manifest_->ReadTableHead(*v, s.sid));
  if (cur && (cur->head_commit == s.commit_id || cur->head_commit == s.rollback_commit_id)) {
    report->already_published++;  // a stale sidecar: converge by deleting it
    return store_->Delete(key);
  }
  if (!cur) return Status::DataLoss("table id " + std::to_string(s.sid) + " has no head");
  OpenSpec spec;
  spec.branch = s.fork;
  Result<Dataset> fork = Dataset::Open(store_, TableRoot(cur->location), spec,
                                       options_.manifest.dataset);
  if (fork.status().IsNotFound() ||
      (fork.ok() && static_cast<int64_t>(fork->version()) == s.expected_version)) {
    report->without_effect++;
    return store_->Delete(key);
  }
  RETURN_NOT_OK(fork.status());
  const bool head_expects_us = cur->state == HeadState::kLive && cur->inc == s.inc &&
                               cur->table_version == s.expected_version &&
                               cur->owner_ref == s.expected_owner_ref;
  const int64_t latest = static_cast<int64_t>(fork->version());
  if (head_expects_us && latest == s.expected_version + 1 && fork->state().txn.id == s.planned_txn) {
    Result<WriteResult> r =
        PublishTableChange(s, *cur, latest, static_cast<int64_t>(fork->CountRows()), s.commit_id,
                           "loam:recovery", s.run_id, "rolled_forward");
    if (r.ok()) {
      report->rolled_forward++;
      return store_->Delete(key);
    }
    // The run committed elsewhere, or the head moved: this effect must go.
    if (!r.status().IsAlreadyExists() && !r.status().IsFailedPrecondition()) return r.status();
    ASSIGN_OR_RETURN(v, manifest_->Current(s.branch));
    ASSIGN_OR_RETURN(cur, manifest_->ReadTableHead(*v, s.sid));
    if (!cur) return Status::DataLoss("table id " + std::to_string(s.sid) + " lost its head");
  }
  RETURN_NOT_OK(RollBack(s, *cur, *fork));
  report->rolled_back++;
  return store_->Delete(key);
}

// Restores the fork to the expected content and, when the head still names
// that fork at the expected version, publishes the restored version.
Status Workspace::RollBack(const Sidecar& s, const TableHead& cur, const Dataset& fork) {
  const bool head_expects_us = cur.state == HeadState::kLive && cur.inc == s.inc &&
                               cur.table_version == s.expected_version &&
                               cur.owner_ref == s.expected_owner_ref;
  Dataset restored = fork;
  const Transaction& last = fork.state().txn;
  const bool already_restored = last.op == OpType::kRestore &&
                                static_cast<int64_t>(last.restore_version) == s.expected_version;
  if (!already_restored) {
    ASSIGN_OR_RETURN(restored, fork.Restore(static_cast<uint64_t>(s.expected_version),
                                            {.expected_version = fork.version()}));
    RETURN_NOT_OK(Fail(failpoint::kRecoveryAfterRestore));
  }
  if (head_expects_us && s.fork == s.expected_owner_ref) {
    Sidecar undo = s;
    undo.new_table_def.clear();  // the restored content has the old schema
    RETURN_NOT_OK(PublishTableChange(undo, cur, static_cast<int64_t>(restored.version()),
                                     static_cast<int64_t>(restored.CountRows()),
                                     s.rollback_commit_id, "loam:recovery", "", "rolled_back")
                      .status());
  }
  return Status::OK();
}

}  // namespace loam
