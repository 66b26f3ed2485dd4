// Branches and history of a workspace (workspace.h): forks of the manifest,
// checked against a migrated source's heads marker, the graph log and a
// table's journal events. History reads fold the journal; their cost grows
// with the history.
#include <map>
#include <nlohmann/json.hpp>
#include <tuple>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "engine/retention.h"
#include "engine/workspace.h"

namespace loam {
namespace {

using json = nlohmann::json;

}  // namespace

// --- branches ------------------------------------------------------------------------------

Status WorkspaceEngine::CreateBranch(const std::string& name, const std::string& from,
                                     std::optional<uint64_t> version) {
  RETURN_NOT_OK(ValidateRefName("branch", name));
  uint64_t at = 0;
  if (version) {
    at = *version;
  } else {
    ASSIGN_OR_RETURN(ManifestVersion v, manifest_->Current(from));
    at = v.version;
  }
  // A branch of a migrated one inherits its heads marker. Journal rows never
  // change, so the marker is checked when a branch forks from it (one exact
  // journal look-up per fork), never on reads.
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                   manifest_->FindJournalRow(from, HeadsMarkerId(kWorkspaceFormat)));
  if (row) {
    const std::string source = "branch '" + (from.empty() ? std::string("main") : from) + "'";
    Result<HeadsMarker> marker = ParseHeadsMarker(*row);
    if (!marker.ok()) {
      return Status::DataLoss("the heads marker of " + source + " is damaged (" +
                              marker.status().message() + "); run 'loam heads verify'");
    }
    // Before the migration commit the manifest has no complete heads.
    if (at < marker->produced_version) {
      return Status::FailedPrecondition("manifest version " + std::to_string(at) + " of " + source +
                                        " predates its migration to workspace format " +
                                        std::to_string(kWorkspaceFormat) + " (at version " +
                                        std::to_string(marker->produced_version) +
                                        "); fork from that version or later")
          .WithErrorCode(ErrorCode::kPreconditionFailed);
    }
  }
  // A fork reads its source's tables as of `at`: a version past the time-travel
  // window lost them. Checked again once the branch exists: a retention pass
  // that raised the horizon meanwhile listed branches before this one
  // existed, so the fork goes again; one that raises it later sees the fork.
  RETURN_NOT_OK(CheckInsideWindow(from, at));
  RETURN_NOT_OK(manifest_->CreateBranch(name, from, at));
  if (Status inside = CheckInsideWindow(from, at); !inside.ok()) {
    (void)manifest_->DeleteBranch(name);  // best effort: the answer is the refusal
    return inside;
  }
  return Status::OK();
}

// The record first: once the ref is gone nothing names the tables the
// branch had, and a retention pass removes what only it kept from the record.
Status WorkspaceEngine::DeleteBranch(const std::string& name) {
  if (name.empty()) return manifest_->DeleteBranch(name);  // refused
  ASSIGN_OR_RETURN(std::string id, manifest_->BranchId(name));
  RETURN_NOT_OK(RecordBranchDeletion(*this, name, options_.manifest.dataset.clock->NowMicros()));
  Status deleted = manifest_->DeleteBranch(name);
  if (deleted.IsFailedPrecondition()) (void)ForgetBranchDeletion(*this, id);  // a child or a tag
  return deleted;
}

Status WorkspaceEngine::SetBranchProtected(const std::string& branch, bool on,
                                           const std::string& actor) {
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = actor.empty() ? options_.actor : actor;
  spec.set_protected = on;
  spec.build = [](PublishView&) -> Result<PublishPlan> { return PublishPlan{}; };
  return manifest_->Publish(spec).status();
}

Result<std::vector<std::string>> WorkspaceEngine::ListBranches() const {
  return manifest_->ListBranches();
}

// --- history -----------------------------------------------------------------------------------

namespace {

// A graph commit row as the log shows it.
GraphCommitInfo CommitInfoOf(const ManifestRow& row) {
  json meta = ParseJson(row.metadata);
  GraphCommitInfo c;
  c.id = row.object_id.substr(GraphCommitId("").size());
  c.branch = row.table_branch.value_or("");
  c.manifest_version = row.table_version.value_or(0);
  if (!meta.is_object()) return c;
  const json parents = meta.value("parents", json::array());
  for (const json& p : parents) {
    if (p.is_string()) c.parents.push_back(p.get<std::string>());
  }
  if (meta.contains("actor") && meta["actor"].is_string()) c.actor = meta["actor"];
  if (meta.contains("run_id") && meta["run_id"].is_string()) c.run_id = meta["run_id"];
  if (meta.contains("run_ids") && meta["run_ids"].is_array()) {
    for (const json& id : meta["run_ids"]) {
      if (id.is_string()) c.run_ids.push_back(id.get<std::string>());
    }
  } else if (!c.run_id.empty()) {
    c.run_ids.push_back(c.run_id);
  }
  if (meta.contains("created_at") && meta["created_at"].is_number_integer()) {
    c.created_micros = meta["created_at"];
  }
  return c;
}

}  // namespace

Result<std::vector<GraphCommitInfo>> WorkspaceEngine::Log(const std::string& branch) const {
  ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, manifest_->Journal(branch));
  std::vector<GraphCommitInfo> out;
  for (auto it = journal.rbegin(); it != journal.rend(); ++it) {
    if (it->object_type == object_type::kGraphCommit) out.push_back(CommitInfoOf(*it));
  }
  return out;
}

Result<std::vector<TableHistoryEntry>> WorkspaceEngine::History(const std::string& table,
                                                                const std::string& branch) const {
  ASSIGN_OR_RETURN(Snapshot snap, Current(branch));
  const TableState* t = snap.Find(table);
  if (t == nullptr) return Status::NotFound("table '" + table + "' does not exist");
  ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, manifest_->Journal(branch));
  std::map<std::string, GraphCommitInfo> commits;  // by id
  for (const ManifestRow& r : journal) {
    if (r.object_type != object_type::kGraphCommit) continue;
    GraphCommitInfo c = CommitInfoOf(r);
    commits[c.id] = std::move(c);
  }
  std::vector<TableHistoryEntry> out;
  for (const ManifestRow& r : journal) {
    if (r.stable_table_id != t->def.sid || r.incarnation_id != t->def.inc) continue;
    if (r.object_type == object_type::kHeadBaseline) continue;  // migration's, not an event
    json meta = ParseJson(r.metadata);
    TableHistoryEntry e;
    e.event = r.object_type;
    e.object_id = r.object_id;
    e.table_key = r.table_key;
    e.table_version = r.table_version.value_or(0);
    e.owner_branch = r.table_branch.value_or("");
    e.row_count = r.row_count;
    if (meta.is_object() && meta.contains("commit") && meta["commit"].is_string()) {
      e.commit_id = meta["commit"];
    }
    if (auto c = commits.find(e.commit_id); c != commits.end()) {
      e.actor = c->second.actor;
      e.created_micros = c->second.created_micros;
      e.run_ids = c->second.run_ids;
    }
    if (meta.is_object() && r.object_type == object_type::kTableGrant) {
      const json role = meta.value("role", json(nullptr));
      e.detail = StringAt(meta, "principal") + ": " +
                 (role.is_string() ? role.get<std::string>() : std::string("revoked"));
    } else if (meta.is_object() && r.object_type == object_type::kTableRename) {
      e.detail = StringAt(meta, "old") + " -> " + StringAt(meta, "new");
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace loam
