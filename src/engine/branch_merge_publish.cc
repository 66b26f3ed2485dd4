// WorkspaceEngine::Merge, its writes (branch_merge.h): each moved table's
// content committed as its target fork's next version, unpublished, then one
// publish carrying every head, the merge's record and the base of the next.
#include <algorithm>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "engine/branch_merge.h"
#include "engine/journal_rows.h"

namespace loam {
namespace {

using json = nlohmann::json;

}  // namespace

std::string CommitOf(const ManifestRow& row) { return StringAt(ParseJson(row.metadata), "commit"); }

int64_t BranchMerger::Change::FinalVersion() const {
  if (source == nullptr) return target->head.table_version + 1;  // the tombstone's
  return data ? version : source->head.table_version;
}

TableDef BranchMerger::Change::FinalDef() const {
  if (target != nullptr) return ContinueCounters(source->def, target->def);
  TableDef def = source->def;
  def.renames = 0;  // none in the target's journal
  return def;
}

MergeHead BranchMerger::Change::FinalHead(const std::string& target_id) const {
  if (source == nullptr) return MergeHead();
  TableHead h = source->head;
  h.table_version = FinalVersion();
  if (data) h.owner_ref = target_id;
  return h;
}

// Each moved table's content as its target fork's next version. A failure
// rolls back the versions committed so far.
Status BranchMerger::CommitTables() {
  ASSIGN_OR_RETURN(RecoveryReport recovered, ws_.RecoverIfDue());
  for (Change& c : changes_) {
    if (!c.data) continue;
    Status s = WorkspaceEngine::RecoveryBarrier(recovered, target_id_, c.fork_head.sid,
                                                c.source->def.name);
    if (s.ok()) s = CommitTable(c);
    if (!s.ok()) {
      RollBack();
      return s;
    }
  }
  return Status::OK();
}

Status BranchMerger::CommitTable(Change& c) {
  Result<int64_t> version =
      AdoptOnFork(ws_, c.fork_head, target_id_, c.source->head, &c.reset, &copied_bytes_);
  RETURN_NOT_OK(version.status().WithContext("merging table '" + c.source->def.name + "'"));
  c.version = *version;
  return Status::OK();
}

Result<int64_t> BranchMerger::AdoptOnFork(WorkspaceEngine& ws, const TableHead& fork_head,
                                          const std::string& fork, const TableHead& content,
                                          std::optional<ForkReset>* reset, uint64_t* copied) {
  ASSIGN_OR_RETURN(Dataset on_fork, ws.OpenFork(fork_head, fork, reset));
  ASSIGN_OR_RETURN(Dataset from, ws.OpenTableAt(content));
  uint64_t bytes = 0;
  Result<Dataset> adopted = on_fork.Adopt(from, {.expected_version = on_fork.version()}, &bytes);
  *copied += bytes;
  RETURN_NOT_OK(adopted.status());
  return static_cast<int64_t>(adopted->version());
}

// After a definite failure.
void BranchMerger::RollBack() {
  for (Change& c : changes_) {
    if (c.version == 0) continue;
    RollBackVersion(ws_, c.fork_head, target_id_, c.version, "merge " + merge_id_);
    c.version = 0;
  }
}

void BranchMerger::RollBackVersion(WorkspaceEngine& ws, const TableHead& fork_head,
                                   const std::string& fork, int64_t version,
                                   const std::string& why) {
  OpenSpec spec;
  spec.branch = fork;
  Result<Dataset> ds = Dataset::Open(ws.store(), ws.TableRoot(fork_head.location), spec,
                                     ws.options().manifest.dataset);
  Status s = ds.status();
  if (s.ok() && static_cast<int64_t>(ds->version()) == version) {
    s = ds->Restore(static_cast<uint64_t>(fork_head.table_version),
                    {.expected_version = ds->version()})
            .status();
  }
  if (!s.ok()) {
    LOAM_LOG_WARN("{}: rolling back table '{}': {}", why, fork_head.table_key, s.ToString());
  }
}

ManifestRow BranchMerger::VersionRow(const TableDef& def, const TableHead& next,
                                     const std::optional<ForkReset>& reset, const char* key,
                                     const std::string& id) {
  ManifestRow version = JournalRow(object_type::kTableVersion,
                                   TableVersionId(def.sid, def.inc, next.table_version), next);
  version.table_version = next.table_version;
  if (!next.owner_branch.empty()) version.table_branch = next.owner_branch;
  version.row_count = next.row_count;
  json meta = {{"owner_ref", next.owner_ref}, {key, id}};
  if (reset) {
    meta["reset"] = {{"head_version", reset->head_version},
                     {"undone", {reset->first_undone, reset->last_undone}},
                     {"restore_version", reset->restore_version}};
  }
  version.metadata = meta.dump();
  return version;
}

Result<PublishPlan> BranchMerger::Build(PublishView& view) const {
  PublishPlan plan;
  for (const Change& c : changes_) RETURN_NOT_OK(BuildOne(view, c, &plan));
  return plan;
}

WriteMode BranchMerger::ModeOf(const Change& c) const {
  const bool admin = c.source == nullptr || c.target == nullptr ||
                     !(c.source->def.name == c.target->def.name &&
                       c.FinalDef().schema_version == c.target->def.schema_version);
  return admin ? WriteMode::kReplace : WriteMode::kAppend;
}

Status BranchMerger::Authorize(PublishView& view, const Change& c) const {
  if (c.target == nullptr) {  // created: the source's grants are the only ones
    return ws_.AuthorizeRole(c.name(), req_.principal, source_.RoleOf(c.sid(), req_.principal),
                             ModeOf(c));
  }
  return ws_.AuthorizeInPublish(view, c.sid(), c.target->def.name,
                                {.principal = &req_.principal, .mode = ModeOf(c)});
}

// The name a created or renamed table takes is free unless a table the merge
// leaves alone took it meanwhile.
Status BranchMerger::NameStillFree(PublishView& view, const Change& c) const {
  if (c.source == nullptr || (c.target && c.target->def.name == c.source->def.name)) {
    return Status::OK();
  }
  Result<TableDef> holder = DefByName(view, c.source->def.name);
  if (holder.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(holder.status());
  const bool moving = std::any_of(changes_.begin(), changes_.end(),
                                  [&](const Change& o) { return o.sid() == holder->sid; });
  if (holder->sid == c.sid() || moving) return Status::OK();
  return Status::Conflict("table name '" + c.source->def.name + "' was taken on branch '" +
                          BranchName(req_.into) + "' meanwhile; merge again");
}

// One table's rows of the merge commit, as its own operation would write
// them: a tombstone for a drop; an incarnation for a creation; a rename, a
// schema and a table version row for what changed of an existing table.
Status BranchMerger::BuildOne(PublishView& view, const Change& c, PublishPlan* plan) const {
  const int64_t sid = c.sid();
  ASSIGN_OR_RETURN(std::optional<TableHead> cur, view.TableHeadOf(sid));
  const bool unchanged = c.target ? cur && SameHead(cur, c.target->head) : !cur;
  if (!unchanged) {
    return Status::Conflict("table '" + c.name() + "' changed on branch '" + BranchName(req_.into) +
                            "' meanwhile; merge again");
  }
  RETURN_NOT_OK(Authorize(view, c));
  RETURN_NOT_OK(NameStillFree(view, c));
  if (c.source == nullptr) return TombstoneRows(view, c.target->def, *cur, plan);
  const TableDef def = c.FinalDef();
  TableHead next = c.source->head;
  next.head_commit = view.commit_id();
  if (c.data) {
    next.table_version = c.version;
    next.owner_ref = target_id_;
    next.owner_branch = req_.into;
  }
  if (c.target == nullptr) {
    ManifestRow inc = JournalRow(object_type::kIncarnation, IncarnationId(sid, def.inc), next);
    inc.metadata = json{{"schema_hash", next.schema_hash}, {"merge", merge_id_}}.dump();
    plan->journal.push_back(std::move(inc));
    for (const Grant& g : source_.grants) {
      if (g.sid == sid) plan->upserts.push_back(GrantRow(g));
    }
  } else if (def.name != c.target->def.name) {
    ManifestRow rename =
        JournalRow(object_type::kTableRename, TableRenameId(sid, def.inc, def.renames), next);
    rename.metadata = json{{"old", c.target->def.name}, {"new", def.name}}.dump();
    plan->journal.push_back(std::move(rename));
  }
  if (c.target == nullptr || def.schema_version != c.target->def.schema_version) {
    plan->journal.push_back(TableSchemaRow(def, next));
  }
  if (c.target == nullptr || c.data) {
    plan->journal.push_back(VersionRow(def, next, c.reset, "merge", merge_id_));
  }
  if (c.target == nullptr || !(def == c.target->def)) plan->upserts.push_back(TableDefRow(def));
  plan->upserts.push_back(TableHeadRow(next));
  return Status::OK();
}

std::string BranchMerger::Detail() const {
  json tables = json::array();
  for (const Change& c : changes_) {
    json e = {{"name", c.name()}, {"change", c.kind}, {"version", c.FinalVersion()}};
    if (c.source && c.source->head.row_count) e["rows"] = *c.source->head.row_count;
    tables.push_back(std::move(e));
  }
  return json{{"merge_source", req_.source},
              {"merge_source_id", source_id_},
              {"merge_source_version", source_.manifest_version},
              {"merge_by", req_.principal},
              {"merge_tables", std::move(tables)}}
      .dump();
}

MergeResult BranchMerger::Answer(uint64_t manifest_version, const std::string& commit_id) const {
  MergeResult r;
  r.merge_id = merge_id_;
  r.manifest_version = manifest_version;
  r.commit_id = commit_id;
  r.source_version = source_.manifest_version;
  r.copied_bytes = copied_bytes_;
  for (const Change& c : changes_) {
    r.tables.push_back(
        {c.name(), c.kind, c.FinalVersion(), c.source ? c.source->head.row_count : std::nullopt});
  }
  return r;
}

// The base of the next merge of the source: every table a merge of it took,
// with the source's head taken and the target's head written.
std::string BranchMerger::BaseDetail() const {
  std::map<int64_t, std::pair<MergeHead, MergeHead>> tables = base_.tables;
  for (const Change& c : changes_) {
    tables[c.sid()] = {c.source ? MergeHead(c.source->head) : MergeHead(), c.FinalHead(target_id_)};
  }
  json out = json::object();
  for (const auto& [sid, heads] : tables) {
    out[std::to_string(sid)] = json::array({HeadJson(heads.first), HeadJson(heads.second)});
  }
  return json{{"merge_source_version", source_.manifest_version},
              {"merge", merge_id_},
              {"tables", std::move(out)}}
      .dump();
}

// One commit on the target: every head, the merge's record (its run commit,
// under the merge id) and the base of the next merge of the same source
// (merge-base:<source id>:<n>, which also fences two merges of it racing).
Result<MergeResult> BranchMerger::Publish() {
  PublishSpec spec;
  spec.branch = req_.into;
  spec.commit_id = commit_id_;
  spec.actor = req_.principal.empty() ? ws_.options().actor : req_.principal;
  spec.merged_parent = source_.graph_head ? source_.graph_head->head_commit : "";
  spec.runs = {{MergeRunId(merge_id_), Detail()},
               {MergeBaseRunId(source_id_, base_.seq + 1), BaseDetail()}};
  spec.build = [this](PublishView& view) { return Build(view); };
  Result<PublishResult> published = ws_.manifest().Publish(spec);
  if (published.ok()) return Answer(published->manifest_version, published->commit_id);
  // Whether it landed (an answer lost) is the journal's to say.
  Result<std::optional<ManifestRow>> landed =
      ws_.manifest().FindJournalRow(req_.into, RunCommitId(MergeRunId(merge_id_)));
  if (!landed.ok()) return published.status();  // unknown: unpublished versions reset by age
  if (*landed && CommitOf(**landed) == commit_id_) {
    return Answer(ManifestVersionOf(**landed), commit_id_);
  }
  RollBack();
  if (*landed) {  // the same merge, committed by another attempt
    ASSIGN_OR_RETURN(std::optional<MergeResult> known,
                     Find(ws_.manifest(), req_.into, merge_id_, req_.source));
    if (known) return *std::move(known);
  }
  if (published.status().IsAlreadyExists()) {
    return Status::Conflict("another merge of branch '" + req_.source + "' into '" +
                            BranchName(req_.into) + "' landed meanwhile; merge again");
  }
  return published.status();
}

}  // namespace loam
