// The current state of one branch: the catalog's live tables, each checked
// against its durable head. One immutable Snapshot serves a whole operation.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/table_def.h"
#include "manifest/manifest.h"

namespace loam {

struct TableState {
  TableDef def;
  TableHead head;
};

struct Snapshot {
  std::string branch;
  uint64_t manifest_version = 0;
  std::optional<GraphHead> graph_head;       // nullopt on a branch without commits of its own
  std::map<std::string, TableState> tables;  // live tables by name
  std::vector<Grant> grants;

  const TableState* Find(const std::string& name) const;
  // The live table whose stable id is `sid`, under whatever name it has now.
  const TableState* FindSid(int64_t sid) const;
  // The role `principal` holds on table `sid`, if any.
  std::optional<Role> RoleOf(int64_t sid, const std::string& principal) const;
  // Whether an admin allowed additive schema changes on table `sid`.
  bool AllowsAdditiveSchema(int64_t sid) const {
    return RoleOf(sid, std::string(kAdditiveSchemaPrincipal)).has_value();
  }
};

struct SnapshotStats {
  int partition_files_read = 0;
  int head_rows_decoded = 0;  // rows of the table-head partitions read
  int catalog_rows_decoded = 0;
};

// Derives the expected live ids from the catalog partition, reads exactly
// their heads, and checks them: a missing, duplicate, malformed, tombstoned or
// mismatched head is DataLoss. Never folds the journal.
Result<Snapshot> ReadSnapshot(const Manifest& manifest, const ManifestVersion& version,
                              SnapshotStats* stats = nullptr);

}  // namespace loam
