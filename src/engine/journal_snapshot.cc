#include "engine/journal_snapshot.h"

#include "common/status_macros.h"
#include "engine/heads_check.h"

namespace loam {

Result<Snapshot> SnapshotFromJournal(const Manifest& manifest, const ManifestVersion& v) {
  ASSIGN_OR_RETURN(HeadsInspection in, InspectHeads(manifest, v.branch, v.version));
  Snapshot snap;
  snap.branch = v.branch;
  snap.manifest_version = v.version;
  for (const auto& [sid, head] : in.folded.tables) {
    if (head.state != HeadState::kLive) continue;
    ASSIGN_OR_RETURN(TableDef def, DefFromJournal(in.journal, head));
    const std::string name = def.name;
    if (!snap.tables.emplace(name, TableState{std::move(def), head}).second) {
      return Status::DataLoss("two live tables are named '" + name + "' at manifest version " +
                              std::to_string(v.version));
    }
  }
  for (const ManifestRow& row : GrantsFromJournal(in)) {
    ASSIGN_OR_RETURN(Grant g, ParseGrant(row));
    snap.grants.push_back(std::move(g));
  }
  auto own = in.folded.graphs.find(v.branch);
  if (own != in.folded.graphs.end()) snap.graph_head = own->second;
  return snap;
}

}  // namespace loam
