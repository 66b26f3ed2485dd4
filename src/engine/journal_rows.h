// The rows a table's catalog and journal changes are written as, shared by
// the schema operations (workspace.cc), merges (branch_merge.cc) and their
// reverts (merge_revert.cc).
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "catalog/table_def.h"
#include "common/status_macros.h"
#include "manifest/heads.h"
#include "manifest/manifest.h"

namespace loam {

// The catalog definition of the live table named `name`, from a publish view.
inline Result<TableDef> DefByName(PublishView& view, const std::string& name) {
  ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, view.Partition(kCatalogPartition));
  for (const ManifestRow& r : rows) {
    if (r.object_type == object_type::kTableDef && r.table_key == name) return ParseTableDef(r);
  }
  return Status::NotFound("table '" + name + "' does not exist");
}

inline Status NameIsFree(PublishView& view, const std::string& name) {
  Result<TableDef> existing = DefByName(view, name);
  if (existing.ok()) return Status::AlreadyExists("table '" + name + "' already exists");
  return existing.status().IsNotFound() ? Status::OK() : existing.status();
}

inline ManifestRow JournalRow(std::string_view type, std::string id, const TableHead& h) {
  ManifestRow r;
  r.object_id = std::move(id);
  r.object_type = std::string(type);
  r.table_key = h.table_key;
  r.location = h.location;
  r.stable_table_id = h.sid;
  r.incarnation_id = h.inc;
  return r;
}

inline ManifestRow TableSchemaRow(const TableDef& def, const TableHead& h) {
  ManifestRow r =
      JournalRow(object_type::kTableSchema, TableSchemaId(def.sid, def.inc, def.schema_version), h);
  r.metadata = nlohmann::json{
      {"schema_version", def.schema_version},
      {"schema_hash", def.SchemaHash()},
      {"columns", nlohmann::json::parse(SchemaToJson(def.schema))},
      {"keys",
       def.keys}}.dump();
  return r;
}

// `next`, a definition taking the place of `current`, with counters that
// continue current's journal: a new name is its next rename, a changed
// schema or key set a schema version above current's (next's own when
// higher).
inline TableDef ContinueCounters(TableDef next, const TableDef& current) {
  next.renames = current.renames + (next.name != current.name ? 1 : 0);
  const bool same_schema = next.schema == current.schema && next.keys == current.keys;
  next.schema_version = same_schema ? current.schema_version
                                    : std::max(next.schema_version, current.schema_version + 1);
  return next;
}

// The rows that drop the live table `def` whose head is `head`: the head
// leaves for a tombstone one version on, the definition and its grants go.
inline Status TombstoneRows(PublishView& view, const TableDef& def, TableHead head,
                            PublishPlan* plan) {
  plan->removes.push_back(TableHeadRow(head));  // leaves its partition for the tombstones'
  head.state = HeadState::kTombstoned;
  head.table_version += 1;
  head.row_count.reset();
  head.head_commit = view.commit_id();
  ManifestRow tomb = JournalRow(object_type::kTableTombstone,
                                TableTombstoneId(def.sid, def.inc, head.table_version), head);
  tomb.table_version = head.table_version;
  plan->journal.push_back(std::move(tomb));
  plan->upserts.push_back(TableHeadRow(head));
  plan->removes.push_back(TableDefRow(def));
  ASSIGN_OR_RETURN(std::vector<ManifestRow> catalog, view.Partition(kCatalogPartition));
  for (const ManifestRow& r : catalog) {
    if (r.object_type == object_type::kGrant && r.stable_table_id == def.sid) {
      plan->removes.push_back(r);
    }
  }
  return Status::OK();
}

}  // namespace loam
