// heads verify and heads repair (docs/format/manifest.md, "The journal
// fold"): the stored heads and the catalog compared with the journal's
// fold, read-only; and the audited commit that rewrites them from it.
#include "engine/heads_check.h"

#include <map>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "engine/workspace.h"

namespace loam {
namespace {

using json = nlohmann::json;

std::string Name(int64_t sid, const std::string& name) {
  return "table " + std::to_string(sid) + " '" + name + "'";
}

}  // namespace

Result<TableDef> DefFromJournal(const std::vector<ManifestRow>& journal, const TableHead& h) {
  TableDef def;
  def.sid = h.sid;
  def.inc = h.inc;
  def.name = h.table_key;
  def.schema_version = 0;
  for (const ManifestRow& r : journal) {
    if (r.stable_table_id != h.sid || r.incarnation_id != h.inc) continue;
    if (r.object_type == object_type::kTableRename) def.renames++;
    if (r.object_type != object_type::kTableSchema) continue;
    json meta = ParseJson(r.metadata);
    if (!meta.is_object() || !meta.contains("schema_version") || !meta.contains("columns") ||
        !meta["schema_version"].is_number_integer() || !meta.contains("keys") ||
        !meta["keys"].is_array()) {
      return Status::DataLoss("journal row '" + r.object_id + "' is malformed");
    }
    const int64_t version = meta["schema_version"].get<int64_t>();
    if (version < def.schema_version) continue;
    def.schema_version = version;
    ASSIGN_OR_RETURN(def.schema, SchemaFromJson(meta["columns"].dump()));
    def.keys.clear();
    for (const json& k : meta["keys"]) {
      if (k.is_string()) def.keys.push_back(k.get<std::string>());
    }
  }
  if (def.schema_version == 0) {
    return Status::DataLoss(Name(h.sid, h.table_key) + " has no schema in the journal");
  }
  return def;
}

std::vector<ManifestRow> GrantsFromJournal(const std::vector<ManifestRow>& journal,
                                           const FoldedHeads& folded) {
  std::map<std::pair<int64_t, std::string>, Role> grants;
  for (const ManifestRow& r : journal) {
    if (r.object_type != object_type::kTableGrant || !r.stable_table_id) continue;
    auto head = folded.tables.find(*r.stable_table_id);
    if (head == folded.tables.end() || head->second.state != HeadState::kLive ||
        head->second.inc != r.incarnation_id) {
      continue;
    }
    json meta = ParseJson(r.metadata);
    if (!meta.is_object()) meta = json::object();
    const std::string principal = StringAt(meta, "principal");
    const auto key = std::make_pair(*r.stable_table_id, principal);
    Result<Role> role = meta.contains("role") && meta["role"].is_string()
                            ? ParseRole(meta["role"].get<std::string>())
                            : Result<Role>(Status::NotFound("revoked"));
    if (role.ok()) {
      grants[key] = *role;
    } else {
      grants.erase(key);
    }
  }
  std::vector<ManifestRow> rows;
  for (const auto& [key, role] : grants) rows.push_back(GrantRow({key.first, key.second, role}));
  return rows;
}

void CheckCatalog(const HeadsInspection& in, std::vector<std::string>* problems,
                  PublishPlan* plan) {
  std::map<int64_t, TableDef> defs;
  for (const ManifestRow& r : in.catalog) {
    if (r.object_type != object_type::kTableDef) continue;
    Result<TableDef> d = ParseTableDef(r);
    if (!d.ok()) {
      problems->push_back("catalog: " + d.status().message());
      if (plan) plan->removes.push_back(r);
      continue;
    }
    if (!defs.emplace(d->sid, *d).second) {
      problems->push_back("catalog: " + Name(d->sid, d->name) + " is defined twice");
    }
  }
  for (const auto& [sid, h] : in.folded.tables) {
    if (h.state != HeadState::kLive) continue;
    auto it = defs.find(sid);
    const bool missing = it == defs.end();
    if (!missing && it->second.inc == h.inc && it->second.name == h.table_key &&
        it->second.Location() == h.location && it->second.SchemaHash() == h.schema_hash) {
      continue;
    }
    problems->push_back("catalog: " + Name(sid, h.table_key) +
                        (missing ? " has a live head but no definition"
                                 : " has a definition that disagrees with its head"));
    if (!plan) continue;
    Result<TableDef> rebuilt = DefFromJournal(in.journal, h);
    if (rebuilt.ok()) {
      plan->upserts.push_back(TableDefRow(*rebuilt));
    } else {
      problems->push_back("catalog: cannot rebuild " + Name(sid, h.table_key) + ": " +
                          rebuilt.status().message());
    }
  }
  for (const auto& [sid, def] : defs) {
    auto it = in.folded.tables.find(sid);
    if (it != in.folded.tables.end() && it->second.state == HeadState::kLive &&
        it->second.inc == def.inc) {
      continue;
    }
    problems->push_back("catalog: " + Name(sid, def.name) +
                        " is defined, but its head is not live; the definition is stale");
    if (!plan) continue;
    plan->removes.push_back(TableDefRow(def));
    for (const ManifestRow& r : in.catalog) {
      if (r.object_type == object_type::kGrant && r.stable_table_id == sid) {
        plan->removes.push_back(r);
      }
    }
  }
}

Result<int> WorkspaceEngine::PendingSidecars() const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> all, store_->ListAll(SidecarPrefix(root_)));
  int n = 0;
  for (const ObjectInfo& o : all) n += IsSidecarKey(root_, o.key);
  return n;
}

Result<int> WorkspaceEngine::SidecarsNotYetDue(int64_t grace_micros) const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> all, store_->ListAll(SidecarPrefix(root_)));
  const int64_t now = options_.manifest.dataset.clock->NowMicros();
  int n = 0;
  for (const ObjectInfo& o : all) {
    if (!IsSidecarKey(root_, o.key)) continue;
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;  // finished meanwhile
    RETURN_NOT_OK(text.status());
    Result<Sidecar> s = DecodeSidecar(*text, o.key);
    // A torn one is no live writer's (its writer wrote it whole before acting).
    if (s.ok() && now < SidecarDueAt(*s, grace_micros)) n++;
  }
  return n;
}

Result<HeadsReport> WorkspaceEngine::VerifyHeads(const std::string& branch) const {
  ASSIGN_OR_RETURN(HeadsInspection in, InspectHeads(*manifest_, branch));
  HeadsReport report;
  report.manifest_version = in.version.version;
  report.tables_checked = static_cast<int>(in.folded.tables.size());
  report.problems = in.problems;
  report.problems.insert(report.problems.end(), in.baseline_problems.begin(),
                         in.baseline_problems.end());
  CheckCatalog(in, &report.problems, nullptr);
  ASSIGN_OR_RETURN(report.pending_sidecars, PendingSidecars());
  ASSIGN_OR_RETURN(report.unindexed_journal_fragments, manifest_->JournalIndexTail(branch));
  return report;
}

Result<HeadsReport> WorkspaceEngine::RepairHeads(const std::string& branch) {
  // The operator stopped every writer: settle their sidecars first, whatever
  // their age, so the fold sees every published write. A write left unsettled
  // would be judged against the repaired heads instead: stop.
  ASSIGN_OR_RETURN(RecoveryReport recovered, Recover(0));
  if (!recovered.failures.empty()) {
    return Status::Unavailable("heads repair stopped: recovery of " +
                               std::to_string(recovered.failures.size()) +
                               " write sidecars failed (" + recovered.failures.front() +
                               "); nothing was repaired. Fix the cause and run it again");
  }
  ASSIGN_OR_RETURN(HeadsInspection in, InspectHeads(*manifest_, branch));
  if (!in.baseline_problems.empty()) {
    return Status::DataLoss("the journal's migration baselines disagree with their marker (" +
                            in.baseline_problems.front() +
                            "); heads repair cannot mend journal rows");
  }
  HeadsReport report;
  report.manifest_version = in.version.version;
  report.tables_checked = static_cast<int>(in.folded.tables.size());
  PublishPlan plan = HeadsRepairPlan(in, branch);
  std::vector<std::string> catalog_problems;
  CheckCatalog(in, &catalog_problems, &plan);
  report.changes = in.problems;
  report.changes.insert(report.changes.end(), catalog_problems.begin(), catalog_problems.end());
  if (report.changes.empty()) return report;  // nothing to repair: idempotent
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = "loam:repair";
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    if (view.base().version != in.version.version) {
      return Status::FailedPrecondition(
          "the manifest changed during repair: a writer is active; stop every writer and run "
          "'loam heads repair --offline' again");
    }
    return plan;
  };
  ASSIGN_OR_RETURN(PublishResult r, manifest_->Publish(spec));
  report.manifest_version = r.manifest_version;
  return report;
}

}  // namespace loam
