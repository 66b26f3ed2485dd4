#include "manifest/rows.h"

#include <nlohmann/json.hpp>

#include "common/status_macros.h"

namespace loam {
namespace {

enum Col { kId, kType, kKey, kLocation, kVersion, kBranch, kRows, kSid, kInc, kMeta, kNumCols };

std::string Pad(int64_t v, int width) {
  std::string s = std::to_string(v);
  if (static_cast<int>(s.size()) < width) s.insert(0, width - s.size(), '0');
  return s;
}

void PutOptInt(Column& c, const std::optional<int64_t>& v) {
  if (v) {
    c.AppendInt64(*v);
  } else {
    c.AppendNull();
  }
}

std::optional<int64_t> GetOptInt(const Column& c, int64_t i) {
  if (c.IsNull(i)) return std::nullopt;
  return c.GetInt64(i);
}

}  // namespace

bool IsMutableType(std::string_view t) {
  return t == object_type::kTableHead || t == object_type::kGraphHead ||
         t == object_type::kTableDef || t == object_type::kGrant;
}

bool IsJournalType(std::string_view t) {
  return t == object_type::kTableVersion || t == object_type::kTableTombstone ||
         t == object_type::kIncarnation || t == object_type::kTableRename ||
         t == object_type::kTableSchema || t == object_type::kGraphCommit ||
         t == object_type::kRunCommit || t == object_type::kTableGrant ||
         t == object_type::kHeadBaseline || t == object_type::kHeadsMarker ||
         t == object_type::kMigrationRecord;
}

bool IsTableJournalType(std::string_view t) {
  return t == object_type::kTableVersion || t == object_type::kTableTombstone ||
         t == object_type::kIncarnation || t == object_type::kTableRename ||
         t == object_type::kTableSchema || t == object_type::kTableGrant ||
         t == object_type::kHeadBaseline;
}

const Schema& ManifestSchema() {
  static const Schema* schema = new Schema{{
      {"object_id", DataType::String(), false},
      {"object_type", DataType::String(), false},
      {"table_key", DataType::String(), false},
      {"location", DataType::String(), false},
      {"table_version", DataType::Int64()},
      {"table_branch", DataType::String()},
      {"row_count", DataType::Int64()},
      {"stable_table_id", DataType::Int64()},
      {"incarnation_id", DataType::Int64()},
      {"metadata", DataType::Json(), false},
  }};
  return *schema;
}

RecordBatch RowsToBatch(const std::vector<ManifestRow>& rows) {
  RecordBatch b(ManifestSchema());
  for (const ManifestRow& r : rows) {
    b.columns[kId].AppendBytes(r.object_id);
    b.columns[kType].AppendBytes(r.object_type);
    b.columns[kKey].AppendBytes(r.table_key);
    b.columns[kLocation].AppendBytes(r.location);
    PutOptInt(b.columns[kVersion], r.table_version);
    if (r.table_branch) {
      b.columns[kBranch].AppendBytes(*r.table_branch);
    } else {
      b.columns[kBranch].AppendNull();
    }
    PutOptInt(b.columns[kRows], r.row_count);
    PutOptInt(b.columns[kSid], r.stable_table_id);
    PutOptInt(b.columns[kInc], r.incarnation_id);
    b.columns[kMeta].AppendBytes(r.metadata);
  }
  return b;
}

Result<std::vector<ManifestRow>> BatchToRows(const RecordBatch& b, int64_t offset, int64_t count) {
  if (!(b.schema == ManifestSchema())) {
    return Status::DataLoss("manifest rows have schema " + b.schema.ToString() + ", expected " +
                            ManifestSchema().ToString());
  }
  if (count < 0) count = b.num_rows() - offset;
  if (offset < 0 || offset + count > b.num_rows()) {
    return Status::DataLoss("manifest row range [" + std::to_string(offset) + ", " +
                            std::to_string(offset + count) + ") is outside a batch of " +
                            std::to_string(b.num_rows()) + " rows");
  }
  std::vector<ManifestRow> out;
  out.reserve(count);
  for (int64_t i = offset; i < offset + count; ++i) {
    ManifestRow r;
    r.object_id = std::string(b.columns[kId].GetBytes(i));
    r.object_type = std::string(b.columns[kType].GetBytes(i));
    r.table_key = std::string(b.columns[kKey].GetBytes(i));
    r.location = std::string(b.columns[kLocation].GetBytes(i));
    r.table_version = GetOptInt(b.columns[kVersion], i);
    if (!b.columns[kBranch].IsNull(i)) r.table_branch = std::string(b.columns[kBranch].GetBytes(i));
    r.row_count = GetOptInt(b.columns[kRows], i);
    r.stable_table_id = GetOptInt(b.columns[kSid], i);
    r.incarnation_id = GetOptInt(b.columns[kInc], i);
    r.metadata = std::string(b.columns[kMeta].GetBytes(i));
    if (!IsMutableType(r.object_type) && !IsJournalType(r.object_type)) {
      return Status::DataLoss("manifest row '" + r.object_id + "' has unknown object type '" +
                              r.object_type + "'");
    }
    if (!r.object_id.starts_with(r.object_type + ":")) {
      return Status::DataLoss("manifest row '" + r.object_id + "' does not match its type '" +
                              r.object_type + "'");
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::string TableVersionId(int64_t sid, int64_t inc, int64_t version) {
  return "table_version:" + Pad(sid, 8) + ":" + Pad(inc, 8) + ":" + Pad(version, 20);
}
std::string TableTombstoneId(int64_t sid, int64_t inc, int64_t version) {
  return "table_tombstone:" + Pad(sid, 8) + ":" + Pad(inc, 8) + ":" + Pad(version, 20);
}
std::string IncarnationId(int64_t sid, int64_t inc) {
  return "incarnation:" + Pad(sid, 8) + ":" + Pad(inc, 8);
}
std::string TableGrantId(int64_t sid, int64_t inc, std::string_view commit) {
  return "table_grant:" + Pad(sid, 8) + ":" + Pad(inc, 8) + ":" + std::string(commit);
}
std::string TableRenameId(int64_t sid, int64_t inc, int64_t seq) {
  return "table_rename:" + Pad(sid, 8) + ":" + Pad(inc, 8) + ":" + Pad(seq, 20);
}
std::string TableSchemaId(int64_t sid, int64_t inc, int64_t schema_version) {
  return "table_schema:" + Pad(sid, 8) + ":" + Pad(inc, 8) + ":" + Pad(schema_version, 8);
}
std::string GraphCommitId(std::string_view commit) { return "graph_commit:" + std::string(commit); }
std::string RunCommitId(std::string_view run_id) { return "run_commit:" + std::string(run_id); }
std::string TableHeadId(int64_t sid) { return "table_head:" + Pad(sid, 8); }
std::string GraphHeadId(std::string_view branch) {
  return "graph_head:" + (branch.empty() ? std::string("main") : std::string(branch));
}
std::string TableDefId(int64_t sid) { return "table_def:" + Pad(sid, 8); }
std::string GrantId(int64_t sid, std::string_view principal) {
  return "grant:" + Pad(sid, 8) + ":" + std::string(principal);
}
std::string HeadBaselineId(int64_t sid, int64_t inc) {
  return "head_baseline:" + Pad(sid, 8) + ":" + Pad(inc, 8);
}
std::string HeadsMarkerId(int workspace_format) {
  return "heads_marker:" + Pad(workspace_format, 8);
}
std::string MigrationRecordId(std::string_view migration_token) {
  return "migration_record:" + std::string(migration_token);
}
std::string TableLocation(int64_t sid, int64_t inc) {
  return "tables/" + Pad(sid, 8) + "-" + Pad(inc, 8);
}

}  // namespace loam
