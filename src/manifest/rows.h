// Rows of the __manifest dataset, format v5 (docs/format/manifest.md).
//
// Journal rows are immutable and identity-bearing; mutable rows (heads,
// catalog definitions, grants) exist once per id in the current state and are
// kept in partitions the version's application section points at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loam/batch.h"
#include "loam/result.h"

namespace loam {

namespace object_type {
// Journal (immutable).
inline constexpr std::string_view kTableVersion = "table_version";
inline constexpr std::string_view kTableTombstone = "table_tombstone";
inline constexpr std::string_view kIncarnation = "incarnation";
inline constexpr std::string_view kTableRename = "table_rename";
inline constexpr std::string_view kTableSchema = "table_schema";
inline constexpr std::string_view kGraphCommit = "graph_commit";
inline constexpr std::string_view kRunCommit = "run_commit";
inline constexpr std::string_view kTableGrant = "table_grant";  // a grant set or revoked (format 7)
// Written by `loam migrate` (workspace format 5; docs/format/manifest.md).
inline constexpr std::string_view kHeadBaseline = "head_baseline";  // a head as migration built it
inline constexpr std::string_view kHeadsMarker = "heads_marker";    // a branch's heads are complete
inline constexpr std::string_view kMigrationRecord = "migration_record";  // the audit of one
// Mutable, one per id.
inline constexpr std::string_view kTableHead = "table_head";
inline constexpr std::string_view kGraphHead = "graph_head";
inline constexpr std::string_view kTableDef = "table_def";
inline constexpr std::string_view kGrant = "grant";
}  // namespace object_type

bool IsMutableType(std::string_view type);
bool IsJournalType(std::string_view type);
// Journal rows about one table identity (they carry its stable id).
bool IsTableJournalType(std::string_view type);

struct ManifestRow {
  std::string object_id;
  std::string object_type;
  std::string table_key;  // public table name ("" when not about a table)
  std::string location;   // table dataset directory, relative to the workspace root
  std::optional<int64_t> table_version;
  std::optional<std::string> table_branch;  // owner branch; nullopt = main
  std::optional<int64_t> row_count;
  std::optional<int64_t> stable_table_id;
  std::optional<int64_t> incarnation_id;
  std::string metadata = "{}";  // JSON object

  friend bool operator==(const ManifestRow&, const ManifestRow&) = default;
};

const Schema& ManifestSchema();
RecordBatch RowsToBatch(const std::vector<ManifestRow>& rows);
// Rows [offset, offset + count) of a manifest batch. DataLoss when the batch
// is not a manifest batch or a row is malformed.
Result<std::vector<ManifestRow>> BatchToRows(const RecordBatch& batch, int64_t offset = 0,
                                             int64_t count = -1);

// Object ids (docs/format/manifest.md, "Rows"). Numbers are zero-padded so ids of
// one kind sort numerically.
std::string TableVersionId(int64_t sid, int64_t inc, int64_t version);
std::string TableTombstoneId(int64_t sid, int64_t inc, int64_t version);
std::string IncarnationId(int64_t sid, int64_t inc);
std::string TableRenameId(int64_t sid, int64_t inc, int64_t seq);
std::string TableSchemaId(int64_t sid, int64_t inc, int64_t schema_version);
std::string GraphCommitId(std::string_view commit);
std::string RunCommitId(std::string_view run_id);
std::string TableGrantId(int64_t sid, int64_t inc, std::string_view commit);
std::string TableHeadId(int64_t sid);
std::string GraphHeadId(std::string_view branch);
std::string TableDefId(int64_t sid);
std::string GrantId(int64_t sid, std::string_view principal);
std::string HeadBaselineId(int64_t sid, int64_t inc);
// Deterministic per workspace format: a branch forked later inherits it.
std::string HeadsMarkerId(int workspace_format);
std::string MigrationRecordId(std::string_view migration_token);

// The workspace-relative directory of a table incarnation's dataset.
std::string TableLocation(int64_t sid, int64_t inc);

}  // namespace loam
