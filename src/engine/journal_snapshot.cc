#include "engine/journal_snapshot.h"

#include "common/status_macros.h"
#include "engine/heads_check.h"

namespace loam {

Result<Snapshot> SnapshotFromJournal(const Manifest& manifest, const ManifestVersion& v) {
  ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, manifest.Journal(v.branch, v.version));
  ASSIGN_OR_RETURN(FoldedHeads folded, FoldJournal(journal));
  Snapshot snap;
  snap.branch = v.branch;
  snap.manifest_version = v.version;
  for (const auto& [sid, head] : folded.tables) {
    if (head.state != HeadState::kLive) continue;
    ASSIGN_OR_RETURN(TableDef def, DefFromJournal(journal, head));
    // The checks ReadSnapshot makes of a definition against its head.
    if (def.SchemaHash() != head.schema_hash || def.Location() != head.location) {
      return Status::DataLoss("table '" + head.table_key + "' (id " + std::to_string(sid) +
                              ") at manifest version " + std::to_string(v.version) +
                              ": its journal's schema or location disagrees with its head");
    }
    const std::string name = def.name;
    if (!snap.tables.emplace(name, TableState{std::move(def), head}).second) {
      return Status::DataLoss("two live tables are named '" + name + "' at manifest version " +
                              std::to_string(v.version));
    }
  }
  for (const ManifestRow& row : GrantsFromJournal(journal, folded)) {
    ASSIGN_OR_RETURN(Grant g, ParseGrant(row));
    snap.grants.push_back(std::move(g));
  }
  auto own = folded.graphs.find(v.branch);
  if (own != folded.graphs.end()) snap.graph_head = own->second;
  return snap;
}

}  // namespace loam
