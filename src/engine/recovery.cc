// Recovery of write sidecars (docs/format/manifest.md, "Write protocol and recovery"): a sidecar
// left by a crashed write is rolled forward when its table effect is confirmed and the head still
// expects it, otherwise rolled back; both publish as actor "loam:recovery", and both are
// idempotent. The migration's barrier on a journal-only workspace (RecoverAgainstJournal) judges by
// the journal's fold and only rolls back, publishing nothing.
#include <algorithm>
#include <limits>

#include "common/logging.h"
#include "common/status_macros.h"
#include "engine/workspace.h"

namespace loam {

Result<RecoveryReport> WorkspaceEngine::Recover(int64_t grace_micros) {
  const int64_t now = options_.manifest.dataset.clock->NowMicros();
  return RecoverWhere([&](const Sidecar& s) { return now >= SidecarDueAt(s, grace_micros); },
                      StoredHeads());
}

// A sidecar is due once its lease is over or the grace period after it was
// created (SidecarDueAt). One created after a listing started is due no
// sooner than that start plus the shorter of the lease and the grace (the
// processes sharing a workspace use the same lease); those the listing left
// to live writers are due at their own time. Until the earliest of these a
// listing finds nothing to recover, so writes skip it (about one listing per
// lease under load, instead of a LIST and a GET per live sidecar on every
// write). A table version left without a sidecar is reset only once older
// than the grace (OpenFork). Both assume the writers' clocks agree to well
// within the lease; a writer whose clock lags by more may see its write
// settled by recovery while it runs, which is safe: recovery rolls forward
// only a table commit the head still expects (the writer's own publish then
// finds its commit in the journal), and a writer whose sidecar was settled
// before its table commit landed publishes it as usual, or leaves an
// unpublished version that the next writer resets. A listing that could
// not recover everything is not trusted for later: the next write lists
// again.
Result<RecoveryReport> WorkspaceEngine::RecoverIfDue() {
  const int64_t grace = options_.recovery_grace_micros;
  const int64_t lease = options_.sidecar_lease_micros;
  const int64_t start = options_.manifest.dataset.clock->NowMicros();
  if (start < recovery_not_due_before_.load(std::memory_order_relaxed)) return RecoveryReport{};
  int64_t earliest_left = std::numeric_limits<int64_t>::max();
  ASSIGN_OR_RETURN(RecoveryReport report,
                   RecoverWhere([&](const Sidecar& s) { return start >= SidecarDueAt(s, grace); },
                                StoredHeads(), grace, &earliest_left));
  int64_t not_before = 0;
  if (report.failures.empty() && report.blocked.empty() && grace > 0) {
    not_before = std::min(start + (lease > 0 ? std::min(lease, grace) : grace), earliest_left);
  }
  recovery_not_due_before_.store(not_before, std::memory_order_relaxed);
  return report;
}

Result<RecoveryReport> WorkspaceEngine::RecoverRun(const std::string& run_id) {
  return RecoverWhere([&](const Sidecar& s) { return s.Records(run_id); }, StoredHeads());
}

Result<RecoveryReport> WorkspaceEngine::RecoverAgainstJournal() {
  // One set of heads per branch: stored ones where an earlier run of the
  // migration converted the branch, otherwise the fold at its latest version.
  auto heads_of = std::make_shared<std::map<std::string, FoldedHeads>>();
  RecoveryHeads heads;
  heads.publish = false;
  heads.read = [this, heads_of](const std::string& branch,
                                int64_t sid) -> Result<std::optional<TableHead>> {
    auto it = heads_of->find(branch);
    if (it == heads_of->end()) {
      ASSIGN_OR_RETURN(ManifestVersion v, manifest_->Current(branch));
      FoldedHeads found;
      if (v.dir.files.empty()) {  // no heads to read: a journal-only version
        ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, manifest_->Journal(branch, v.version));
        ASSIGN_OR_RETURN(found, FoldJournal(journal));
      } else {
        std::vector<std::string> problems;
        found = ReadStoredHeads(*manifest_, v, &problems);
        if (!problems.empty()) return Status::DataLoss(problems.front());
      }
      it = heads_of->emplace(branch, std::move(found)).first;
    }
    auto head = it->second.tables.find(sid);
    if (head == it->second.tables.end()) return std::optional<TableHead>();
    return std::optional<TableHead>(head->second);
  };
  return RecoverWhere([](const Sidecar&) { return true; }, heads);
}

Status WorkspaceEngine::RecoveryBarrier(const RecoveryReport& report, const std::string& fork,
                                        int64_t sid, const std::string& table) {
  for (const RecoveryReport::Blocked& b : report.blocked) {
    if (b.sid != 0 && (b.sid != sid || b.fork != fork)) continue;
    return Status::Unavailable("table '" + table +
                               "' has an earlier write whose recovery failed (" + b.why +
                               "); its writes wait until recovery succeeds: retry later");
  }
  return Status::OK();
}

WorkspaceEngine::RecoveryHeads WorkspaceEngine::StoredHeads() const {
  RecoveryHeads heads;
  heads.read = [this](const std::string& branch, int64_t sid) -> Result<std::optional<TableHead>> {
    ASSIGN_OR_RETURN(ManifestVersion v, manifest_->Current(branch));
    return manifest_->ReadTableHead(v, sid);
  };
  return heads;
}

Result<RecoveryReport> WorkspaceEngine::RecoverWhere(const std::function<bool(const Sidecar&)>& due,
                                                     const RecoveryHeads& heads, int64_t grace,
                                                     int64_t* earliest_left) {
  RecoveryReport report;
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> sidecars, store_->ListAll(SidecarPrefix(root_)));
  for (const ObjectInfo& o : sidecars) {
    if (!IsSidecarKey(root_, o.key)) continue;  // unreadable/: moved aside already
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;  // finished meanwhile
    Status st = text.status();
    if (st.ok()) {
      Result<Sidecar> s = DecodeSidecar(*text, o.key);
      st = s.status();
      if (st.IsDataLoss()) {
        // Torn by a crash (its put is not fsynced): it names nothing that can
        // be trusted. A table version it left is reset by the next writer once
        // past the grace period (OpenFork). Moved aside, reported once.
        st = MoveAside(o.key, *text, &report);
        if (st.ok()) continue;
      }
      if (s.ok() && !due(*s)) {
        report.left_to_live_writers++;
        if (earliest_left) *earliest_left = std::min(*earliest_left, SidecarDueAt(*s, grace));
        continue;
      }
      if (s.ok()) st = RecoverOne(o.key, *s, heads, &report);
    }
    // One sidecar that cannot be recovered must not stop the workspace: it
    // is reported (and its table's writers meet a conflict until it is).
    if (!st.ok()) {
      LOAM_LOG_WARN("recovery of '{}' failed: {}", o.key, st.ToString());
      report.failures.push_back(o.key + ": " + st.ToString());
      // Unread or undecodable, it may name any table: every write waits.
      Result<Sidecar> named = text.ok() ? DecodeSidecar(*text, o.key) : Result<Sidecar>(st);
      report.blocked.push_back(named.ok()
                                   ? RecoveryReport::Blocked{named->fork, named->sid, st.ToString()}
                                   : RecoveryReport::Blocked{"", 0, st.ToString()});
    }
  }
  return report;
}

Status WorkspaceEngine::MoveAside(const std::string& key, const std::string& text,
                                  RecoveryReport* report) {
  StringSource src(text);
  Result<ObjectMeta> put = store_->Write(UnreadableSidecarKey(root_, key), src, {});
  RETURN_NOT_OK(put.status());
  RETURN_NOT_OK(store_->Delete(key));
  LOAM_LOG_WARN("sidecar '{}' is unreadable; moved it to '{}'", key,
                UnreadableSidecarKey(root_, key));
  report->moved_aside.push_back(key);
  return Status::OK();
}

Status WorkspaceEngine::RecoverOne(const std::string& key, const Sidecar& s,
                                   const RecoveryHeads& heads, RecoveryReport* report) {
  auto finish = [&](int* counter) {
    (*counter)++;
    return store_->DeleteRelaxed(key);
  };
  // The branch must still be the one the write began on (same id).
  if (!s.branch.empty()) {
    Result<std::string> id = manifest_->BranchId(s.branch);
    if (id.status().IsNotFound() || (id.ok() && *id != s.fork))
      return finish(&report->without_effect);
    RETURN_NOT_OK(id.status());
  }
  auto head_now = [&]() { return heads.read(s.branch, s.sid); };
  auto published = [&](const std::optional<TableHead>& h) {
    return h && (h->head_commit == s.commit_id || h->head_commit == s.rollback_commit_id);
  };
  ASSIGN_OR_RETURN(std::optional<TableHead> cur, head_now());
  if (published(cur)) return finish(&report->already_published);  // a stale sidecar converges
  // A table dropped (or dropped and created again) since: its data is the
  // dropped incarnation's, which no head names. Nothing to undo.
  if (!cur || cur->state != HeadState::kLive || cur->inc != s.inc) {
    return finish(&report->without_effect);
  }
  OpenSpec spec;
  spec.branch = s.fork;
  Result<Dataset> fork =
      Dataset::Open(store_, TableRoot(cur->location), spec, options_.manifest.dataset);
  if (fork.status().IsNotFound() ||
      (fork.ok() && static_cast<int64_t>(fork->version()) == s.expected_version)) {
    return finish(&report->without_effect);
  }
  RETURN_NOT_OK(fork.status());
  const bool head_expects_us = cur->state == HeadState::kLive && cur->inc == s.inc &&
                               cur->table_version == s.expected_version &&
                               cur->owner_ref == s.expected_owner_ref;
  if (heads.publish && head_expects_us && fork->state().txn.id == s.planned_txn) {
    Result<WriteResult> r = PublishTableChange(s, *cur, static_cast<int64_t>(fork->version()),
                                               static_cast<int64_t>(fork->CountRows()), s.commit_id,
                                               "loam:recovery", RunsOf(s, *fork), "rolled_forward");
    if (r.ok()) return finish(&report->rolled_forward);
    // The run committed elsewhere, the head moved, or another recoverer won.
    if (!r.status().Is(ErrorCode::kRunAlreadyCommitted) && !r.status().Is(ErrorCode::kConflict)) {
      return r.status();
    }
    ASSIGN_OR_RETURN(cur, head_now());
    if (published(cur)) return finish(&report->already_published);
    if (!cur) return finish(&report->without_effect);
  }
  // A head that moved on along this fork is newer than anything this write
  // did: restoring would pull the fork away from it.
  if (cur->state == HeadState::kLive && cur->owner_ref == s.fork &&
      cur->table_version > s.expected_version) {
    return finish(&report->without_effect);
  }
  RETURN_NOT_OK(RollBack(s, *cur, *fork, heads.publish));
  return finish(&report->rolled_back);
}

// Restores the fork to the expected content and, when `publish` and the head
// still names that fork at the expected version, publishes the restored
// version (otherwise the head names the expected version itself, whose
// content the restore brought back; OpenFork accepts that).
Status WorkspaceEngine::RollBack(const Sidecar& s, const TableHead& cur, const Dataset& fork,
                                 bool publish) {
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
  if (publish && head_expects_us && s.fork == s.expected_owner_ref) {
    Sidecar undo = s;
    undo.new_table_def.clear();  // the restored content has the old schema
    RETURN_NOT_OK(PublishTableChange(undo, cur, static_cast<int64_t>(restored.version()),
                                     static_cast<int64_t>(restored.CountRows()),
                                     s.rollback_commit_id, "loam:recovery", {}, "rolled_back")
                      .status());
  }
  return Status::OK();
}

}  // namespace loam
