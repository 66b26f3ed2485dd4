#include "manifest/heads.h"

#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
#include "manifest/directory.h"

namespace loam {
namespace {

using json = nlohmann::json;

Status Malformed(const ManifestRow& row, const std::string& why) {
  return Status::DataLoss("head row '" + row.object_id + "' is malformed: " + why);
}

Result<json> ParseObject(const ManifestRow& row) {
  json j = ParseJson(row.metadata);
  if (j.is_discarded() || !j.is_object()) return Malformed(row, "metadata is not a JSON object");
  return j;
}

bool HasString(const json& j, const char* k) { return j.contains(k) && j[k].is_string(); }
bool HasInt(const json& j, const char* k) { return j.contains(k) && j[k].is_number_integer(); }

}  // namespace

ManifestRow TableHeadRow(const TableHead& h) {
  ManifestRow r;
  r.object_id = TableHeadId(h.sid);
  r.object_type = std::string(object_type::kTableHead);
  r.table_key = h.table_key;
  r.location = h.location;
  r.table_version = h.table_version;
  if (!h.owner_branch.empty()) r.table_branch = h.owner_branch;
  r.row_count = h.state == HeadState::kLive ? h.row_count : std::nullopt;
  r.stable_table_id = h.sid;
  r.incarnation_id = h.inc;
  r.metadata = json{{"state", h.state == HeadState::kLive ? "live" : "tombstoned"},
                    {"stable_table_id", h.sid},
                    {"incarnation_id", h.inc},
                    {"schema_hash", h.schema_hash},
                    {"head_commit", h.head_commit},
                    {"owner_ref", h.owner_ref}}
                   .dump();
  return r;
}

Result<TableHead> ParseTableHead(const ManifestRow& row) {
  if (row.object_type != object_type::kTableHead) return Malformed(row, "not a table head");
  auto parsed = ParseObject(row);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  if (!HasString(j, "state") || !HasInt(j, "stable_table_id") || !HasInt(j, "incarnation_id") ||
      !HasString(j, "schema_hash") || !HasString(j, "head_commit") || !HasString(j, "owner_ref")) {
    return Malformed(row, "metadata lacks state, ids, schema_hash, head_commit or owner_ref");
  }
  TableHead h;
  const std::string state = j["state"].get<std::string>();
  if (state == "live") {
    h.state = HeadState::kLive;
  } else if (state == "tombstoned") {
    h.state = HeadState::kTombstoned;
  } else {
    return Malformed(row, "unknown state '" + state + "'");
  }
  h.sid = j["stable_table_id"].get<int64_t>();
  h.inc = j["incarnation_id"].get<int64_t>();
  h.schema_hash = j["schema_hash"].get<std::string>();
  h.head_commit = j["head_commit"].get<std::string>();
  h.owner_ref = j["owner_ref"].get<std::string>();
  if (row.object_id != TableHeadId(h.sid) || row.stable_table_id != h.sid ||
      row.incarnation_id != h.inc) {
    return Malformed(row, "identity columns disagree with the payload");
  }
  if (!row.table_version || *row.table_version < 1) return Malformed(row, "no table version");
  if (h.state == HeadState::kLive && !row.row_count)
    return Malformed(row, "live head without row count");
  if (h.state == HeadState::kTombstoned && row.row_count) {
    return Malformed(row, "tombstoned head with a row count");
  }
  if (row.table_key.empty() || row.location.empty())
    return Malformed(row, "no table key or location");
  h.table_key = row.table_key;
  h.location = row.location;
  h.table_version = *row.table_version;
  h.owner_branch = row.table_branch.value_or("");
  h.row_count = row.row_count;
  return h;
}

ManifestRow GraphHeadRow(const GraphHead& g) {
  ManifestRow r;
  r.object_id = GraphHeadId(g.branch);
  r.object_type = std::string(object_type::kGraphHead);
  r.table_version = g.manifest_version;
  if (!g.branch.empty()) r.table_branch = g.branch;
  json meta = {{"head_commit", g.head_commit}, {"parent_commit", g.parent_commit}};
  if (g.protected_branch)
    meta["protected"] = true;  // absent otherwise: rows before it read the same
  r.metadata = meta.dump();
  return r;
}

Result<GraphHead> ParseGraphHead(const ManifestRow& row) {
  if (row.object_type != object_type::kGraphHead) return Malformed(row, "not a graph head");
  auto parsed = ParseObject(row);
  if (!parsed.ok()) return parsed.status();
  const json& j = *parsed;
  if (!HasString(j, "head_commit") || !HasString(j, "parent_commit") || !row.table_version) {
    return Malformed(row, "lacks head_commit, parent_commit or manifest version");
  }
  GraphHead g;
  g.branch = row.table_branch.value_or("");
  if (row.object_id != GraphHeadId(g.branch)) return Malformed(row, "id disagrees with its branch");
  g.head_commit = j["head_commit"].get<std::string>();
  g.parent_commit = j["parent_commit"].get<std::string>();
  g.manifest_version = *row.table_version;
  if (j.contains("protected")) {
    if (!j["protected"].is_boolean())
      return Malformed(row, "has a \"protected\" that is not a boolean");
    g.protected_branch = j["protected"].get<bool>();
  }
  return g;
}

ManifestRow HeadBaselineRow(const TableHead& h) {
  ManifestRow r = TableHeadRow(h);
  r.object_id = HeadBaselineId(h.sid, h.inc);
  r.object_type = std::string(object_type::kHeadBaseline);
  return r;
}

Result<TableHead> ParseHeadBaseline(const ManifestRow& row) {
  if (row.object_type != object_type::kHeadBaseline) return Malformed(row, "not a head baseline");
  if (!row.stable_table_id || !row.incarnation_id ||
      row.object_id != HeadBaselineId(*row.stable_table_id, *row.incarnation_id)) {
    return Malformed(row, "id disagrees with its identity columns");
  }
  ManifestRow as_head = row;
  as_head.object_id = TableHeadId(*row.stable_table_id);
  as_head.object_type = std::string(object_type::kTableHead);
  return ParseTableHead(as_head);
}

ManifestRow HeadsMarkerRow(const HeadsMarker& m) {
  ManifestRow r;
  r.object_id = HeadsMarkerId(m.workspace_format);
  r.object_type = std::string(object_type::kHeadsMarker);
  r.metadata = json{{"workspace_format", m.workspace_format},
                    {"heads_format", m.heads_format},
                    {"source_version", m.source_version},
                    {"head_count", m.head_count},
                    {"baseline_digest", m.baseline_digest},
                    {"head_digest", m.head_digest},
                    {"migration", m.migration}}
                   .dump();
  return r;
}

Result<HeadsMarker> ParseHeadsMarker(const ManifestRow& row) {
  auto bad = [&row](const std::string& why) {
    return Status::DataLoss("heads marker '" + row.object_id + "' is malformed: " + why);
  };
  if (row.object_type != object_type::kHeadsMarker) return bad("not a heads marker");
  json j = ParseJson(row.metadata);
  if (!j.is_object()) return bad("metadata is not a JSON object");
  for (const char* k : {"workspace_format", "heads_format", "source_version", "head_count"}) {
    if (!HasInt(j, k)) return bad(std::string(k) + " is missing");
  }
  for (const char* k : {"baseline_digest", "head_digest", "migration"}) {
    if (!HasString(j, k)) return bad(std::string(k) + " is missing");
  }
  HeadsMarker m;
  m.workspace_format = j["workspace_format"].get<int>();
  m.heads_format = j["heads_format"].get<uint32_t>();
  m.source_version = j["source_version"].get<uint64_t>();
  m.produced_version = HasInt(j, "manifest_version") ? j["manifest_version"].get<uint64_t>() : 0;
  m.head_count = j["head_count"].get<int64_t>();
  m.baseline_digest = j["baseline_digest"].get<std::string>();
  m.head_digest = j["head_digest"].get<std::string>();
  m.migration = j["migration"].get<std::string>();
  auto hex32 = [](const std::string& d) {
    return d.size() == 32 && d.find_first_not_of("0123456789abcdef") == std::string::npos;
  };
  if (row.object_id != HeadsMarkerId(m.workspace_format)) {
    return bad("id disagrees with its workspace format");
  }
  if (m.heads_format < kOldestManifestFormat || m.heads_format > kManifestFormatVersion) {
    return bad("heads format " + std::to_string(m.heads_format) + " is unknown");
  }
  if (m.source_version == 0 || m.source_version >= m.produced_version) {
    return bad("source version " + std::to_string(m.source_version) +
               " is not before its commit, version " + std::to_string(m.produced_version));
  }
  if (m.head_count < 0 || !hex32(m.baseline_digest) || !hex32(m.head_digest)) {
    return bad("its count or a digest is malformed");
  }
  return m;
}

std::string HeadSetDigest(const std::map<int64_t, TableHead>& tables,
                          const std::map<std::string, GraphHead>& graphs) {
  std::string text;
  auto add = [&text](const ManifestRow& r) {
    text += json{r.object_id,
                 r.table_key,
                 r.location,
                 r.table_version.value_or(-1),
                 r.table_branch.value_or(""),
                 r.row_count.value_or(-1),
                 r.metadata}
                .dump();
    text += '\n';
  };
  for (const auto& [sid, h] : tables) add(TableHeadRow(h));
  for (const auto& [branch, g] : graphs) add(GraphHeadRow(g));
  return Hash128Hex(text);
}

Status CheckHeadPairing(const std::vector<ManifestRow>& journal,
                        const std::vector<ManifestRow>& upserts) {
  std::map<int64_t, TableHead> heads;
  for (const ManifestRow& r : upserts) {
    if (r.object_type != object_type::kTableHead) continue;
    Result<TableHead> h = ParseTableHead(r);
    if (!h.ok()) return Status::InvalidArgument(h.status().message());
    heads[h->sid] = *h;
  }
  for (const ManifestRow& r : journal) {
    const std::string_view type = r.object_type;
    auto bad = [&](const std::string& why) {
      return Status::InvalidArgument("journal row '" + r.object_id + "' " + why);
    };
    const bool about_table = IsTableJournalType(type);
    if (about_table && (!r.stable_table_id || !r.incarnation_id)) {
      return bad("names a table without its stable id and incarnation");
    }
    if (!r.stable_table_id) continue;
    auto it = heads.find(*r.stable_table_id);
    if (it == heads.end()) return bad("has no head row for its table in the same commit");
    if (!about_table || type == object_type::kHeadBaseline) continue;
    const TableHead& h = it->second;
    if (h.inc != *r.incarnation_id) {
      return bad("names incarnation " + std::to_string(*r.incarnation_id) + " but its head holds " +
                 std::to_string(h.inc));
    }
    const bool tombstone = type == object_type::kTableTombstone;
    if (!tombstone && type != object_type::kTableVersion) continue;
    if (r.table_version != h.table_version || (h.state == HeadState::kTombstoned) != tombstone) {
      return bad("disagrees with its head (version " + std::to_string(h.table_version) +
                 (h.state == HeadState::kTombstoned ? ", tombstoned)" : ", live)"));
    }
  }
  return Status::OK();
}

}  // namespace loam
