#include "catalog/snapshot.h"

#include <set>

#include "common/status_macros.h"

namespace loam {

const TableState* Snapshot::Find(const std::string& name) const {
  auto it = tables.find(name);
  return it == tables.end() ? nullptr : &it->second;
}

const TableState* Snapshot::FindSid(int64_t sid) const {
  for (const auto& [name, t] : tables) {
    if (t.def.sid == sid) return &t;
  }
  return nullptr;
}

std::optional<Role> Snapshot::RoleOf(int64_t sid, const std::string& principal) const {
  for (const Grant& g : grants) {
    if (g.sid == sid && g.principal == principal) return g.role;
  }
  return std::nullopt;
}

Result<Snapshot> ReadSnapshot(const Manifest& manifest, const ManifestVersion& v,
                              SnapshotStats* stats) {
  Snapshot snap;
  snap.branch = v.branch;
  snap.manifest_version = v.version;
  ManifestReadStats reads;
  ASSIGN_OR_RETURN(std::vector<ManifestRow> catalog,
                   manifest.ReadPartition(v, kCatalogPartition, &reads));
  const int catalog_rows = reads.rows_decoded;
  std::vector<TableDef> defs;
  for (const ManifestRow& row : catalog) {
    if (row.object_type == object_type::kTableDef) {
      ASSIGN_OR_RETURN(TableDef d, ParseTableDef(row));
      defs.push_back(std::move(d));
    } else {
      ASSIGN_OR_RETURN(Grant g, ParseGrant(row));
      snap.grants.push_back(std::move(g));
    }
  }
  // Heads of exactly the live ids, one partition read per distinct partition.
  std::map<uint32_t, std::vector<ManifestRow>> partitions;
  for (TableDef& def : defs) {
    const uint32_t p = LiveHeadPartition(def.sid, v.dir.format);
    if (!partitions.count(p)) {
      ASSIGN_OR_RETURN(partitions[p], manifest.ReadPartition(v, p, &reads));
    }
    const ManifestRow* found = nullptr;
    for (const ManifestRow& r : partitions[p]) {
      if (r.object_id == TableHeadId(def.sid)) found = &r;
    }
    const std::string what = "table '" + def.name + "' (id " + std::to_string(def.sid) + ")";
    if (found == nullptr)
      return Status::DataLoss(what + " has no head row: the manifest is corrupt");
    ASSIGN_OR_RETURN(TableHead head, ParseTableHead(*found));
    if (head.state != HeadState::kLive) {
      return Status::DataLoss(what + " is in the catalog but its head is tombstoned");
    }
    if (head.inc != def.inc || head.schema_hash != def.SchemaHash() || head.table_key != def.name ||
        head.location != def.Location()) {
      return Status::DataLoss(what + " has a head that disagrees with its catalog definition");
    }
    std::string name = def.name;
    if (!snap.tables.emplace(name, TableState{std::move(def), std::move(head)}).second) {
      return Status::DataLoss("two live tables are named '" + name + "'");
    }
  }
  ASSIGN_OR_RETURN(snap.graph_head, manifest.ReadGraphHead(v, &reads));
  if (stats) {
    stats->partition_files_read += reads.partition_files_read;
    stats->catalog_rows_decoded += catalog_rows;
    for (const auto& [p, rows] : partitions)
      stats->head_rows_decoded += static_cast<int>(rows.size());
  }
  return snap;
}

}  // namespace loam
