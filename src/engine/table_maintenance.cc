#include "engine/table_maintenance.h"

#include "common/status_macros.h"

namespace loam {

uint64_t CompactableFragments(const DatasetVersion& v, const CompactionOptions& options) {
  uint64_t n = 0;
  for (const Fragment& f : v.fragments) n += Compactable(f, options) ? 1 : 0;
  return n;
}

Result<MaintenanceReport> CompactDueTables(Workspace& ws, const std::string& branch,
                                           const CompactionPolicy& policy,
                                           const std::string& principal) {
  MaintenanceReport report;
  ASSIGN_OR_RETURN(Snapshot snap, ws.Current(branch));
  for (const auto& [name, t] : snap.tables) {
    // A table the branch has not forked is compacted where it lives.
    if (t.head.owner_branch != branch) continue;
    ++report.tables;
    Result<Dataset> data = ws.OpenTable(snap, name);
    if (!data.ok()) {
      report.deferred.push_back(name + ": " + data.status().ToString());
      continue;
    }
    if (CompactableFragments(data->state(), policy.options) < policy.min_fragments) continue;
    WriteRequest w;
    w.table = name;
    w.table_sid = t.def.sid;
    w.branch = branch;
    w.mode = WriteMode::kCompact;
    w.principal = principal;
    w.compaction = policy.options;
    Result<WriteResult> done = ws.Write(w);
    if (!done.ok()) {
      report.deferred.push_back(name + ": " + done.status().ToString());
      continue;
    }
    if (!done->changed) continue;
    ++report.compacted;
    report.fragments_removed += done->compacted.fragments_removed;
    report.fragments_added += done->compacted.fragments_added;
    report.bytes_written += done->compacted.bytes_written;
  }
  return report;
}

}  // namespace loam
