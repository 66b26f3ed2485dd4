#include "engine/table_maintenance.h"

#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace loam {

uint64_t CompactableFragments(const DatasetVersion& v, const CompactionOptions& options) {
  uint64_t n = 0;
  for (const Fragment& f : v.fragments) n += Compactable(f, options) ? 1 : 0;
  return n;
}

Result<MaintenanceReport> CompactDueTables(WorkspaceEngine& ws, const std::string& branch,
                                           const CompactionPolicy& policy,
                                           const std::string& principal, MaintenanceMemo* memo) {
  MaintenanceMemo scratch;
  if (memo == nullptr) memo = &scratch;
  MaintenanceReport report;
  ASSIGN_OR_RETURN(Snapshot snap, ws.Current(branch));
  for (const auto& [name, t] : snap.tables) {
    // A table the branch has not forked is compacted where it lives.
    if (t.head.owner_branch != branch) continue;
    ++report.tables;
    const std::string label = branch.empty() ? name : branch + ":" + name;
    MaintenanceMemo::Seen& seen = memo->tables[{branch, t.def.sid}];
    if (seen.table_version == t.head.table_version) {  // not due when last read
      report.fragments[label] = seen.fragments;
      report.compactable[label] = seen.compactable;
      continue;
    }
    Result<Dataset> data = ws.OpenTable(snap, name);
    if (!data.ok()) {
      report.deferred.push_back(name + ": " + data.status().ToString());
      continue;
    }
    const uint64_t fragments = data->state().fragments.size();
    const uint64_t compactable = CompactableFragments(data->state(), policy.options);
    report.fragments[label] = fragments;
    report.compactable[label] = compactable;
    if (compactable < policy.min_fragments) {
      seen = {t.head.table_version, fragments, compactable};
      continue;
    }
    // The rewrite happens once, outside the commit: the commit then takes a
    // moment, and tries again while appends land (a plan whose fragments
    // another commit deleted rows from waits for the next pass).
    Result<CompactionPlan> plan = data->PlanCompaction(policy.options);
    if (!plan.ok()) {
      report.deferred.push_back(name + ": " + plan.status().ToString());
      continue;
    }
    WriteRequest w;
    w.table = name;
    w.table_sid = t.def.sid;
    w.branch = branch;
    w.mode = WriteMode::kCompact;
    w.principal = principal;
    w.compaction = policy.options;
    w.compaction_plan = &*plan;
    Result<WriteResult> done = ws.Write(w);
    // Its fragments go when surely unused (a plan gone stale, nothing
    // committed); after an unclear outcome they stay for gc.
    if (done.ok() ? !done->changed : done.status().IsFailedPrecondition()) {
      NoteCleanupFailure("removing a stale compaction's fragments",
                         data->DeleteStaged(plan->added));
    }
    if (!done.ok()) {
      report.deferred.push_back(name + ": " + done.status().ToString());
      continue;
    }
    if (!done->changed) {  // nothing Compact would merge: wait for the table to move
      seen = {t.head.table_version, fragments, compactable};
      continue;
    }
    ++report.compacted;
    report.fragments_removed += done->compacted.fragments_removed;
    report.fragments_added += done->compacted.fragments_added;
    report.bytes_written += done->compacted.bytes_written;
    report.fragments[label] += done->compacted.fragments_added;
    report.fragments[label] -= done->compacted.fragments_removed;
    report.compactable[label] += done->compacted.fragments_added;
    report.compactable[label] -= done->compacted.fragments_removed;
    // Read again once the table moves past the compaction's version.
    seen = {done->table_version, report.fragments[label], report.compactable[label]};
  }
  return report;
}

void MaintenanceReport::Add(const MaintenanceReport& other) {
  tables += other.tables;
  compacted += other.compacted;
  fragments_removed += other.fragments_removed;
  fragments_added += other.fragments_added;
  bytes_written += other.bytes_written;
  deferred.insert(deferred.end(), other.deferred.begin(), other.deferred.end());
  fragments.insert(other.fragments.begin(), other.fragments.end());
  compactable.insert(other.compactable.begin(), other.compactable.end());
}

Result<MaintenanceReport> CompactAllBranches(WorkspaceEngine& ws, const CompactionPolicy& policy,
                                             const std::string& principal, MaintenanceMemo* memo) {
  ASSIGN_OR_RETURN(MaintenanceReport report, CompactDueTables(ws, "", policy, principal, memo));
  ASSIGN_OR_RETURN(std::vector<std::string> branches, ws.ListBranches());
  for (const std::string& b : branches) {
    Result<MaintenanceReport> one = CompactDueTables(ws, b, policy, principal, memo);
    if (one.ok()) {
      report.Add(*one);
    } else {
      report.deferred.push_back("branch " + b + ": " + one.status().ToString());
    }
  }
  return report;
}

namespace {

struct LeaseRecord {
  std::string holder;
  int64_t expires_micros = 0;
};

// DataLoss naming the object when a field is missing or mistyped.
Result<LeaseRecord> ParseLease(const std::string& text) {
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObject(text, "maintenance lease"));
  const auto holder = j.find("holder");
  const std::optional<int64_t> expires = IntegerAt(j, "expiresMicros");
  if (holder == j.end() || !holder->is_string() || !expires) {
    return Status::DataLoss(
        "maintenance lease: needs a string \"holder\" and an integer "
        "\"expiresMicros\"");
  }
  return LeaseRecord{holder->get<std::string>(), *expires};
}

}  // namespace

MaintenanceLease::MaintenanceLease(std::shared_ptr<ObjectStore> store,
                                   const std::string& workspace_root, std::string holder,
                                   Clock* clock, int64_t lease_micros)
    : store_(std::move(store)),
      key_((workspace_root.empty() ? "" : workspace_root + "/") +
           "_control/maintenance-lease.json"),
      holder_(std::move(holder)),
      clock_(clock),
      lease_micros_(lease_micros) {}

Result<bool> MaintenanceLease::Acquire() {
  const int64_t now = clock_->NowMicros();
  if (held_until_ - now > lease_micros_ * 2 / 3) return true;
  held_until_ = 0;
  const std::string mine =
      nlohmann::json{{"holder", holder_}, {"expiresMicros", now + lease_micros_}}.dump();
  ObjectMeta meta;
  Result<std::string> held = store_->Get(key_, &meta);
  Result<ObjectMeta> put = Status::OK();
  if (held.status().IsNotFound()) {
    put = store_->PutIfAbsent(key_, mine);
  } else {
    RETURN_NOT_OK(held.status());
    ASSIGN_OR_RETURN(LeaseRecord lease, ParseLease(*held));
    if (lease.holder != holder_ && lease.expires_micros > now) return false;
    put = store_->PutIfMatch(key_, mine, meta.etag);
  }
  if (put.ok()) {
    held_until_ = now + lease_micros_;
    return true;
  }
  // Another process wrote the lease between the read and the write.
  if (put.status().IsAlreadyExists() || put.status().IsAborted() || put.status().IsNotFound()) {
    return false;
  }
  return put.status();
}

Status MaintenanceLease::Release() {
  held_until_ = 0;
  ObjectMeta meta;
  Result<std::string> held = store_->Get(key_, &meta);
  if (held.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(held.status());
  ASSIGN_OR_RETURN(LeaseRecord lease, ParseLease(*held));
  if (lease.holder != holder_) return Status::OK();
  const std::string expired = nlohmann::json{{"holder", holder_}, {"expiresMicros", 0}}.dump();
  Result<ObjectMeta> put = store_->PutIfMatch(key_, expired, meta.etag);
  // Taken by another holder meanwhile: nothing of this holder's to give up.
  return put.ok() || put.status().IsAborted() || put.status().IsNotFound() ? Status::OK()
                                                                           : put.status();
}

}  // namespace loam
