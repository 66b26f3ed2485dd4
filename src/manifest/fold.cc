#include "manifest/fold.h"

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam {
namespace {

using json = nlohmann::json;

json Meta(const ManifestRow& r) {
  json j = ParseJson(r.metadata);
  return j.is_object() ? j : json::object();
}

std::string Str(const json& j, const char* k) {
  return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
}

std::string Describe(const TableHead& h) {
  return std::string(h.state == HeadState::kLive ? "live" : "tombstoned") + " inc " +
         std::to_string(h.inc) + " '" + h.table_key + "' v" + std::to_string(h.table_version) +
         " owner '" + h.owner_branch + "' rows " +
         (h.row_count ? std::to_string(*h.row_count) : "null") + " commit " + h.head_commit +
         " schema " + h.schema_hash;
}

}  // namespace

Result<FoldedHeads> FoldJournal(const std::vector<ManifestRow>& journal) {
  FoldedHeads out;
  // A migrated journal starts every identity from its baseline: the table
  // events before the first baseline are not replayed (graph commits are).
  size_t first_baseline = 0;
  while (first_baseline < journal.size() &&
         journal[first_baseline].object_type != object_type::kHeadBaseline) {
    ++first_baseline;
  }
  if (first_baseline == journal.size()) first_baseline = 0;
  for (size_t i = 0; i < journal.size(); ++i) {
    const ManifestRow& r = journal[i];
    if (i < first_baseline && r.object_type != object_type::kGraphCommit) continue;
    const json meta = Meta(r);
    if (r.object_type == object_type::kGraphCommit) {
      GraphHead g;
      g.branch = r.table_branch.value_or("");
      g.head_commit = r.object_id.substr(GraphCommitId("").size());
      if (meta.contains("parents") && meta["parents"].is_array() && !meta["parents"].empty() &&
          meta["parents"][0].is_string()) {
        g.parent_commit = meta["parents"][0].get<std::string>();
      }
      g.manifest_version = r.table_version.value_or(0);
      g.protected_branch = meta.contains("protected") && meta["protected"].is_boolean() &&
                           meta["protected"].get<bool>();
      out.graphs[g.branch] = g;
      continue;
    }
    if (!r.stable_table_id || !r.incarnation_id) continue;  // run_commit, migration rows
    const int64_t sid = *r.stable_table_id;
    if (r.object_type == object_type::kHeadBaseline) {
      // Migration built this head from the events before it: they end here.
      ASSIGN_OR_RETURN(out.tables[sid], ParseHeadBaseline(r));
      continue;
    }
    if (r.object_type == object_type::kIncarnation) {
      if (out.tables.count(sid)) {
        return Status::DataLoss("journal incarnates stable id " + std::to_string(sid) + " twice");
      }
      TableHead h;
      h.sid = sid;
      h.inc = *r.incarnation_id;
      h.table_key = r.table_key;
      h.location = r.location;
      h.schema_hash = Str(meta, "schema_hash");
      h.head_commit = Str(meta, "commit");
      out.tables[sid] = h;
      continue;
    }
    auto it = out.tables.find(sid);
    if (it == out.tables.end() || it->second.inc != *r.incarnation_id) {
      return Status::DataLoss("journal row '" + r.object_id +
                              "' names an identity never incarnated");
    }
    TableHead& h = it->second;
    if (h.state == HeadState::kTombstoned) {
      return Status::DataLoss("journal row '" + r.object_id + "' follows the table's tombstone");
    }
    if (r.object_type == object_type::kTableSchema) {
      h.schema_hash = Str(meta, "schema_hash");
    } else if (r.object_type == object_type::kTableVersion) {
      h.table_version = r.table_version.value_or(0);
      h.owner_branch = r.table_branch.value_or("");
      h.owner_ref = Str(meta, "owner_ref");
      h.row_count = r.row_count;
    } else if (r.object_type == object_type::kTableRename) {
      h.table_key = r.table_key;
    } else if (r.object_type == object_type::kTableTombstone) {
      h.state = HeadState::kTombstoned;
      h.table_version = r.table_version.value_or(0);
      h.row_count.reset();
    }
    h.head_commit = Str(meta, "commit");
  }
  return out;
}

std::vector<std::string> CompareHeads(const FoldedHeads& folded, const FoldedHeads& stored) {
  std::vector<std::string> problems;
  for (const auto& [sid, want] : folded.tables) {
    auto it = stored.tables.find(sid);
    if (it == stored.tables.end()) {
      problems.push_back("table " + std::to_string(sid) + ": head missing; journal says " +
                         Describe(want));
    } else if (!(it->second == want)) {
      problems.push_back("table " + std::to_string(sid) + ": head says " + Describe(it->second) +
                         "; journal says " + Describe(want));
    }
  }
  for (const auto& [sid, have] : stored.tables) {
    if (!folded.tables.count(sid)) {
      problems.push_back("table " + std::to_string(sid) + ": head " + Describe(have) +
                         " has no journal history");
    }
  }
  for (const auto& [branch, want] : folded.graphs) {
    auto it = stored.graphs.find(branch);
    if (it == stored.graphs.end() || !(it->second == want)) {
      problems.push_back("graph head of '" + (branch.empty() ? "main" : branch) +
                         "' disagrees with the journal (expected commit " + want.head_commit + ")");
    }
  }
  return problems;
}

namespace {

// Reads one head partition's rows into `stored`, reporting instead of
// failing.
void ReadLeniently(const Manifest& manifest, const ManifestVersion& v, uint32_t p,
                   std::set<std::string>* seen, FoldedHeads* stored,
                   std::vector<std::string>* problems) {
  Result<std::vector<ManifestRow>> rows = manifest.ReadPartitionUnchecked(v, p);
  if (!rows.ok()) {
    problems->push_back("partition " + std::to_string(p) +
                        " is unreadable: " + rows.status().message());
    return;
  }
  for (const ManifestRow& r : *rows) {
    if (!BelongsIn(r, p, v.dir.format)) {
      problems->push_back("row '" + r.object_id + "' is in partition " + std::to_string(p) +
                          ", where it does not belong");
      continue;
    }
    if (!seen->insert(r.object_id).second) {
      problems->push_back("duplicate head: '" + r.object_id +
                          "' appears twice (again in partition " + std::to_string(p) + ")");
      continue;
    }
    if (p == kGraphPartition) {
      Result<GraphHead> g = ParseGraphHead(r);
      if (g.ok()) stored->graphs[g->branch] = *g;
      if (!g.ok()) problems->push_back(g.status().message());
    } else {
      Result<TableHead> h = ParseTableHead(r);
      if (h.ok()) stored->tables[h->sid] = *h;
      if (!h.ok()) problems->push_back(h.status().message());
    }
  }
}

}  // namespace

std::vector<std::string> CheckBaselines(const std::vector<ManifestRow>& journal) {
  std::vector<std::string> problems;
  std::map<int64_t, TableHead> baselines;
  const ManifestRow* marker = nullptr;
  for (const ManifestRow& r : journal) {
    if (r.object_type == object_type::kHeadsMarker) marker = &r;
    if (r.object_type != object_type::kHeadBaseline) continue;
    Result<TableHead> h = ParseHeadBaseline(r);
    if (!h.ok()) {
      problems.push_back(h.status().message());
    } else if (!baselines.emplace(h->sid, *h).second) {
      problems.push_back("table " + std::to_string(h->sid) + " has two baselines");
    }
  }
  if (marker == nullptr) {
    if (!baselines.empty()) problems.push_back("baselines without a heads marker");
    return problems;
  }
  Result<HeadsMarker> parsed = ParseHeadsMarker(*marker);
  if (!parsed.ok()) {
    problems.push_back(parsed.status().message());
    return problems;
  }
  const std::string& digest = parsed->baseline_digest;
  const int64_t count = parsed->head_count;
  if (digest != HeadSetDigest(baselines) || count != static_cast<int64_t>(baselines.size())) {
    problems.push_back("heads marker '" + marker->object_id + "' records " + std::to_string(count) +
                       " baselines with digest " + digest + "; the journal holds " +
                       std::to_string(baselines.size()) + " with digest " +
                       HeadSetDigest(baselines));
  }
  return problems;
}

FoldedHeads ReadStoredHeads(const Manifest& manifest, const ManifestVersion& v,
                            std::vector<std::string>* problems) {
  FoldedHeads stored;
  std::set<std::string> seen;
  for (uint32_t p = 0; p < kNumPartitions; ++p) {
    if (p != kCatalogPartition) ReadLeniently(manifest, v, p, &seen, &stored, problems);
  }
  return stored;
}

Result<HeadsInspection> InspectHeads(const Manifest& manifest, const std::string& branch,
                                     std::optional<uint64_t> version) {
  HeadsInspection in;
  if (!version) {
    ASSIGN_OR_RETURN(Dataset ds, manifest.OpenDataset(branch));
    version = ds.version();
  }
  ASSIGN_OR_RETURN(in.version, manifest.At(branch, *version));
  ASSIGN_OR_RETURN(in.journal, manifest.Journal(branch, *version));
  ASSIGN_OR_RETURN(in.folded, FoldJournal(in.journal));
  in.baseline_problems = CheckBaselines(in.journal);
  in.stored = ReadStoredHeads(manifest, in.version, &in.problems);
  Result<std::vector<ManifestRow>> catalog =
      manifest.ReadPartitionUnchecked(in.version, kCatalogPartition);
  if (catalog.ok()) {
    in.catalog = *std::move(catalog);
  } else {
    in.problems.push_back("the catalog partition is unreadable: " + catalog.status().message());
  }
  std::vector<std::string> differ = CompareHeads(in.folded, in.stored);
  in.problems.insert(in.problems.end(), differ.begin(), differ.end());
  return in;
}

PublishPlan HeadsRepairPlan(const HeadsInspection& in, const std::string& branch) {
  PublishPlan plan;
  for (uint32_t p = 0; p < kNumPartitions; ++p) {
    if (p != kCatalogPartition) plan.rebuild.insert(p);
  }
  for (const auto& [sid, h] : in.folded.tables) plan.upserts.push_back(TableHeadRow(h));
  for (const auto& [b, g] : in.folded.graphs) {
    if (b != branch) plan.upserts.push_back(GraphHeadRow(g));  // the publish writes its own
  }
  return plan;
}

}  // namespace loam
