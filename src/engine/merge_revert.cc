// WorkspaceEngine::RevertMerge: a merge undone as one unit (merge_revert.h).
#include "engine/merge_revert.h"

#include <algorithm>
#include <map>
#include <set>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/journal_rows.h"

namespace loam {
namespace {

using json = nlohmann::json;

// RestoredByRevert follows at most this many reverts back, and looks at
// most this many versions back from each.
constexpr int kMaxRevertsFollowed = 16;
constexpr int kMaxVersionsFollowed = 256;

MergeHead LiveHead(const TableState* t) { return t ? MergeHead(t->head) : MergeHead(); }

std::string JoinedNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string MergeRevertRunId(const std::string& merge_id) { return "merge-revert:" + merge_id; }

Result<MergeRevertResult> WorkspaceEngine::RevertMerge(const MergeRevertRequest& request) {
  return MergeReverter(*this, request).Run();
}

MergeHead MergeReverter::Undo::FinalHead(const std::string& target_id,
                                         const std::string& into) const {
  if (before == nullptr) return MergeHead();
  TableHead h = before->head;
  h.table_key = def.name;
  h.schema_hash = def.SchemaHash();
  h.table_version = data ? version : now->head.table_version;
  h.owner_ref = data ? target_id : now->head.owner_ref;
  h.owner_branch = data ? into : now->head.owner_branch;
  return h;
}

Result<MergeRevertResult> MergeReverter::Run() {
  ASSIGN_OR_RETURN(std::optional<MergeRevertResult> done,
                   Find(ws_.manifest(), req_.into, req_.merge_id));
  if (done) return *std::move(done);
  Status prepared = Load();
  if (prepared.ok()) prepared = Plan();
  if (prepared.ok()) prepared = CommitTables();
  if (!prepared.ok()) {  // a racing retry of the same revert may have won meanwhile
    Result<std::optional<MergeRevertResult>> won = Find(ws_.manifest(), req_.into, req_.merge_id);
    if (won.ok() && *won) return **std::move(won);
    return prepared;
  }
  if (Status s = ws_.Fail(failpoint::kMergeRevertAfterTableCommits); !s.ok()) return s;
  ASSIGN_OR_RETURN(MergeRevertResult reverted, Publish());
  RETURN_NOT_OK(ws_.Fail(failpoint::kMergeRevertAfterPublish));
  return reverted;
}

Result<std::optional<MergeRevertResult>> MergeReverter::Find(const Manifest& m,
                                                             const std::string& into,
                                                             const std::string& merge_id) {
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                   OwnRunCommit(m, into, MergeRevertRunId(merge_id)));
  if (!row) return std::optional<MergeRevertResult>();
  const json j = ParseJson(row->metadata);
  MergeRevertResult r;
  r.merge_id = merge_id;
  r.already_reverted = true;
  r.manifest_version = ManifestVersionOf(*row);
  r.commit_id = StringAt(j, "commit");
  const json tables = j.is_object() && j.contains("revert_tables") ? j["revert_tables"] : json();
  for (const json& t : tables.is_array() ? tables : json::array()) {
    if (t.is_object()) {
      r.tables.push_back({StringAt(t, "name"), StringAt(t, "change"),
                          IntegerAt(t, "version").value_or(0), IntegerAt(t, "rows")});
    }
  }
  return std::optional<MergeRevertResult>(std::move(r));
}

// The merge's record and the target before it, at it and now.
Status MergeReverter::Load() {
  const Manifest& m = ws_.manifest();
  const std::string on = "branch '" + BranchName(req_.into) + "'";
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                   OwnRunCommit(m, req_.into, MergeRunId(req_.merge_id)));
  if (!row) return Status::NotFound("no merge '" + req_.merge_id + "' was committed on " + on);
  record_ = ParseJson(row->metadata);
  const uint64_t at = ManifestVersionOf(*row);
  merged_at_ = at;
  if (!record_.is_object() || at < 2) {
    return Status::DataLoss("merge record " + row->object_id + " is malformed");
  }
  Result<Snapshot> before = ws_.SnapshotAt(req_.into, at - 1);
  if (!before.ok()) {
    return before.status().WithContext("the state of " + on + " before merge '" + req_.merge_id +
                                       "' (version " + std::to_string(at - 1) + ")");
  }
  before_ = *std::move(before);
  ASSIGN_OR_RETURN(merged_, ws_.SnapshotAt(req_.into, at));
  ASSIGN_OR_RETURN(now_, ws_.Current(req_.into));
  ASSIGN_OR_RETURN(target_id_, m.BranchId(req_.into));
  commit_id_ = NewUlidString();
  return Status::OK();
}

// Every table the merge changed goes back, or none: revert_blocked naming
// each one a commit since changed.
Status MergeReverter::Plan() {
  const auto b = BySid(before_), m = BySid(merged_), n = BySid(now_);
  std::set<int64_t> sids;
  for (const auto& [sid, _] : b) sids.insert(sid);
  for (const auto& [sid, _] : m) sids.insert(sid);
  std::vector<int64_t> theirs;  // the merge's tables
  for (int64_t sid : sids) {
    if (!SameHead(LiveHead(At(b, sid)), LiveHead(At(m, sid)))) theirs.push_back(sid);
  }
  // Nothing about them is told to a caller without a writer's role on each.
  for (int64_t sid : theirs) {
    const TableState* t = At(n, sid) ? At(n, sid) : At(m, sid) ? At(m, sid) : At(b, sid);
    const Snapshot& grants = At(n, sid) ? now_ : At(m, sid) ? merged_ : before_;
    RETURN_NOT_OK(ws_.AuthorizeRole(t->def.name, req_.principal, grants.RoleOf(sid, req_.principal),
                                    WriteMode::kRestore));
  }
  std::vector<std::string> changed;
  for (int64_t sid : theirs) RETURN_NOT_OK(PlanOne(At(b, sid), At(m, sid), At(n, sid), &changed));
  if (!changed.empty()) {
    return Status::FailedPrecondition("table(s) " + JoinedNames(changed) + " changed on branch '" +
                                      BranchName(req_.into) + "' since merge '" + req_.merge_id +
                                      "'; revert those changes first; nothing was reverted")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("table", changed.front());
  }
  RETURN_NOT_OK(PreAuthorize());
  return CheckNames();
}

Status MergeReverter::PlanOne(const TableState* before, const TableState* merged,
                              const TableState* now, std::vector<std::string>* changed) {
  if (merged == nullptr) {
    return Status::FailedPrecondition("merge '" + req_.merge_id + "' dropped table '" +
                                      before->def.name +
                                      "', which a revert cannot bring back; nothing was reverted")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("table", before->def.name);
  }
  bool moved = !SameHead(LiveHead(merged), LiveHead(now));
  if (moved && now) {
    ASSIGN_OR_RETURN(bool same_rows, BranchMerger::SameRowsSince(ws_, merged->head, now->head));
    moved = !same_rows;  // compacted since: the merge's rows still
  }
  if (moved && now) {
    ASSIGN_OR_RETURN(bool restored, RestoredByRevert(now->head, merged->head));
    moved = !restored;  // a later merge, reverted since
  }
  if (moved) {
    changed->push_back(merged->def.name);
    return Status::OK();
  }
  Undo u;
  u.before = before;
  u.now = now;
  if (before) {
    u.def = ContinueCounters(before->def, now->def);
    u.data = before->head.table_version != now->head.table_version ||
             before->head.owner_ref != now->head.owner_ref;
  }
  undos_.push_back(std::move(u));
  return Status::OK();
}

// Whether `now`, not the merge's head, still holds its rows: its name and
// schema, and rows a revert of a later merge put back (through compactions
// and restores since) from the merge's head or from a head that does in
// turn (a chain of merges and reverts, followed at most kMaxRevertsFollowed
// deep).
Result<bool> MergeReverter::RestoredByRevert(const TableHead& now, const TableHead& merged) const {
  if (now.inc != merged.inc || now.table_key != merged.table_key ||
      now.schema_hash != merged.schema_hash) {
    return false;  // renamed or widened since: a change of its own
  }
  TableHead at = now;
  for (int i = 0; i < kMaxRevertsFollowed; ++i) {
    ASSIGN_OR_RETURN(std::optional<TableHead> to, RevertedTo(at));
    if (!to) return false;
    if (SameHead(*to, merged)) return true;
    ASSIGN_OR_RETURN(bool same_rows, BranchMerger::SameRowsSince(ws_, merged, *to));
    if (same_rows) return true;
    at = *to;
  }
  return false;
}

// The head whose rows the revert that wrote `at`'s rows put back, looking
// through compactions and restores; nullopt when no revert wrote them.
Result<std::optional<TableHead>> MergeReverter::RevertedTo(const TableHead& at) const {
  const Manifest& m = ws_.manifest();
  ASSIGN_OR_RETURN(Dataset ds, ws_.OpenTableAt(at));
  int64_t v = at.table_version;
  for (int step = 0; step < kMaxVersionsFollowed && v > 0; ++step) {
    ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                     m.FindJournalRow(req_.into, TableVersionId(at.sid, at.inc, v)));
    const std::string by = row ? StringAt(ParseJson(row->metadata), "merge_revert") : "";
    if (!by.empty()) return RestoredHead(by, at.sid);
    ASSIGN_OR_RETURN(Dataset d, ds.CheckoutVersion(static_cast<uint64_t>(v)));
    const Transaction& txn = d.state().txn;
    if (txn.op == OpType::kCompact) {
      v -= 1;
    } else if (txn.op == OpType::kRestore) {
      v = static_cast<int64_t>(txn.restore_version);
    } else {
      break;
    }
  }
  return std::optional<TableHead>();
}

// The head table `sid` went back to in the revert of merge `merge_id`.
Result<std::optional<TableHead>> MergeReverter::RestoredHead(const std::string& merge_id,
                                                             int64_t sid) const {
  ASSIGN_OR_RETURN(std::optional<ManifestRow> revert,
                   OwnRunCommit(ws_.manifest(), req_.into, MergeRevertRunId(merge_id)));
  const json j = revert ? ParseJson(revert->metadata) : json();
  const json tables = j.is_object() && j.contains("revert_tables") ? j["revert_tables"] : json();
  for (const json& t : tables.is_array() ? tables : json::array()) {
    if (!t.is_object() || IntegerAt(t, "sid") != sid || !t.contains("restored")) continue;
    MergeHead h = HeadFromJson(t["restored"]);
    if (h) h->sid = sid;
    return h;
  }
  return std::optional<TableHead>();
}

// A name a table takes back that a table the revert leaves alone took since.
Status MergeReverter::CheckNames() const {
  std::map<int64_t, std::string> names;
  for (const auto& [name, t] : now_.tables) names[t.def.sid] = name;
  for (const Undo& u : undos_) {
    if (u.before) {
      names[u.sid()] = u.def.name;
    } else {
      names.erase(u.sid());
    }
  }
  std::map<std::string, int> uses;
  for (const auto& [sid, name] : names) {
    if (++uses[name] == 2) {
      return Status::FailedPrecondition("table name '" + name + "' was taken on branch '" +
                                        BranchName(req_.into) + "' since merge '" + req_.merge_id +
                                        "'; rename that table first; nothing was reverted")
          .WithErrorCode(ErrorCode::kRevertBlocked)
          .WithDetail("table", name);
    }
  }
  return Status::OK();
}

WriteMode MergeReverter::ModeOf(const Undo& u) const {
  const bool admin = u.before == nullptr || !(u.def.name == u.now->def.name &&
                                              u.def.schema_version == u.now->def.schema_version);
  return admin ? WriteMode::kReplace : WriteMode::kRestore;
}

Status MergeReverter::PreAuthorize() const {
  for (const Undo& u : undos_) {
    RETURN_NOT_OK(ws_.AuthorizeRole(u.now->def.name, req_.principal,
                                    now_.RoleOf(u.sid(), req_.principal), ModeOf(u)));
  }
  return Status::OK();
}

// Each restored table's content before the merge as its fork's next version.
Status MergeReverter::CommitTables() {
  ASSIGN_OR_RETURN(RecoveryReport recovered, ws_.RecoverIfDue());
  for (Undo& u : undos_) {
    if (!u.data) continue;
    Status s = WorkspaceEngine::RecoveryBarrier(recovered, target_id_, u.sid(), u.now->def.name);
    uint64_t copied = 0;
    Result<int64_t> version = s.ok() ? BranchMerger::AdoptOnFork(ws_, u.now->head, target_id_,
                                                                 u.before->head, &u.reset, &copied)
                                     : Result<int64_t>(s);
    if (!version.ok()) {
      RollBack();
      return version.status().WithContext("reverting table '" + u.now->def.name + "'");
    }
    u.version = *version;
  }
  return Status::OK();
}

void MergeReverter::RollBack() {
  for (Undo& u : undos_) {
    if (u.version == 0) continue;
    BranchMerger::RollBackVersion(ws_, u.now->head, target_id_, u.version,
                                  "revert of merge " + req_.merge_id);
    u.version = 0;
  }
}

Result<PublishPlan> MergeReverter::Build(PublishView& view) const {
  PublishPlan plan;
  for (const Undo& u : undos_) RETURN_NOT_OK(BuildOne(view, u, &plan));
  return plan;
}

// One table's rows, as its own operations would write them: a tombstone for
// a table the merge created; a rename, a schema and a version row for what
// goes back of one it updated.
Status MergeReverter::BuildOne(PublishView& view, const Undo& u, PublishPlan* plan) const {
  const std::string& name = u.now->def.name;
  ASSIGN_OR_RETURN(std::optional<TableHead> cur, view.TableHeadOf(u.sid()));
  if (!cur || !SameHead(cur, u.now->head)) {
    return Status::Conflict("table '" + name + "' changed on branch '" + BranchName(req_.into) +
                            "' meanwhile; revert again");
  }
  RETURN_NOT_OK(ws_.AuthorizeInPublish(view, u.sid(), name,
                                       {.principal = &req_.principal, .mode = ModeOf(u)}));
  if (u.before == nullptr) return TombstoneRows(view, u.now->def, *cur, plan);
  if (u.def.name != name) {
    Result<TableDef> holder = DefByName(view, u.def.name);
    const bool moving =
        holder.ok() && std::any_of(undos_.begin(), undos_.end(),
                                   [&](const Undo& o) { return o.sid() == holder->sid; });
    if (holder.ok() && !moving) {
      return Status::Conflict("table name '" + u.def.name + "' was taken on branch '" +
                              BranchName(req_.into) + "' meanwhile; revert again");
    }
    if (!holder.ok() && !holder.status().IsNotFound()) return holder.status();
    ManifestRow rename = JournalRow(object_type::kTableRename,
                                    TableRenameId(u.sid(), u.def.inc, u.def.renames), *cur);
    rename.table_key = u.def.name;
    rename.metadata = json{{"old", name}, {"new", u.def.name}}.dump();
    plan->journal.push_back(std::move(rename));
  }
  TableHead next = *u.FinalHead(target_id_, req_.into);
  next.head_commit = view.commit_id();
  if (u.def.schema_version != u.now->def.schema_version) {
    plan->journal.push_back(TableSchemaRow(u.def, next));
  }
  if (u.data) {
    plan->journal.push_back(
        BranchMerger::VersionRow(u.def, next, u.reset, "merge_revert", req_.merge_id));
  }
  if (!(u.def == u.now->def)) plan->upserts.push_back(TableDefRow(u.def));
  plan->upserts.push_back(TableHeadRow(next));
  return Status::OK();
}

// The base of the next merge of the source, when it still exists: the
// reverted tables' bases as before the merge, the target's heads as the
// revert leaves them (a table it dropped: its tombstone, so a merge that
// brings it again is a conflict rather than a second creation).
Result<std::optional<std::pair<std::string, std::string>>> MergeReverter::NextBase() const {
  using Next = std::optional<std::pair<std::string, std::string>>;
  const Manifest& m = ws_.manifest();
  const std::string source = StringAt(record_, "merge_source");
  const std::string source_id = StringAt(record_, "merge_source_id");
  Result<std::string> id = m.BranchId(source);
  if (!id.ok() || *id != source_id) return Next();  // gone or recreated: never merged again
  ASSIGN_OR_RETURN(BranchInfo info, m.BranchParent(source));
  ASSIGN_OR_RETURN(int64_t last, BranchMerger::LastSeq(m, req_.into, source_id));
  ASSIGN_OR_RETURN(std::optional<int64_t> seq,
                   BranchMerger::SeqAt(m, req_.into, source_id, last, merged_at_));
  if (!seq) return Status::DataLoss("merge '" + req_.merge_id + "' has no base record");
  ASSIGN_OR_RETURN(BranchMerger::Base latest,
                   BranchMerger::BaseAt(m, req_.into, source_id, last, info.parent_version));
  ASSIGN_OR_RETURN(BranchMerger::Base prior,
                   BranchMerger::BaseAt(m, req_.into, source_id, *seq - 1, info.parent_version));
  ASSIGN_OR_RETURN(ManifestVersion fork_point, m.At(req_.into, info.parent_version));
  ASSIGN_OR_RETURN(Snapshot at_fork, ws_.SnapshotOf(fork_point));
  for (const Undo& u : undos_) {
    auto it = prior.tables.find(u.sid());
    const MergeHead from =
        it != prior.tables.end() ? it->second.first : LiveHead(at_fork.FindSid(u.sid()));
    MergeHead was = u.FinalHead(target_id_, req_.into);
    if (!was) {
      was = u.now->head;
      was->state = HeadState::kTombstoned;
      was->table_version += 1;
    }
    latest.tables[u.sid()] = {from, was};
  }
  json tables = json::object();
  for (const auto& [sid, heads] : latest.tables) {
    tables[std::to_string(sid)] = json::array({HeadJson(heads.first), HeadJson(heads.second)});
  }
  json detail = {{"merge_source_version", latest.source_version},
                 {"merge_revert", req_.merge_id},
                 {"tables", std::move(tables)}};
  return Next(std::pair(MergeBaseRunId(source_id, last + 1), detail.dump()));
}

// Each table with the head it went back to ("restored"; null: dropped).
std::string MergeReverter::Detail() const {
  const std::vector<MergedTable> answer = Answer(0, "").tables;
  json tables = json::array();
  for (size_t i = 0; i < undos_.size(); ++i) {
    const MergedTable& t = answer[i];
    json e = {{"name", t.name},
              {"sid", undos_[i].sid()},
              {"change", t.change},
              {"version", t.table_version},
              {"restored", HeadJson(LiveHead(undos_[i].before))}};
    if (t.row_count) e["rows"] = *t.row_count;
    tables.push_back(std::move(e));
  }
  return json{{"merge_revert", req_.merge_id},
              {"revert_by", req_.principal},
              {"revert_tables", std::move(tables)}}
      .dump();
}

MergeRevertResult MergeReverter::Answer(uint64_t manifest_version,
                                        const std::string& commit_id) const {
  MergeRevertResult r;
  r.merge_id = req_.merge_id;
  r.manifest_version = manifest_version;
  r.commit_id = commit_id;
  for (const Undo& u : undos_) {
    const MergeHead h = u.FinalHead(target_id_, req_.into);
    if (h) {
      r.tables.push_back({u.def.name, "restored", h->table_version, u.before->head.row_count});
    } else {
      r.tables.push_back({u.now->def.name, "dropped", u.now->head.table_version + 1, {}});
    }
  }
  return r;
}

// One commit on the target: every head, the revert's record (its run commit,
// under the merge id) and the next merge's base.
Result<MergeRevertResult> MergeReverter::Publish() {
  PublishSpec spec;
  spec.branch = req_.into;
  spec.commit_id = commit_id_;
  spec.actor = req_.principal.empty() ? ws_.options().actor : req_.principal;
  spec.runs = {{MergeRevertRunId(req_.merge_id), Detail()}};
  Result<std::optional<std::pair<std::string, std::string>>> base = NextBase();
  if (!base.ok()) {
    RollBack();
    return base.status();
  }
  if (*base) spec.runs.push_back({(*base)->first, (*base)->second});
  spec.build = [this](PublishView& view) { return Build(view); };
  Result<PublishResult> published = ws_.manifest().Publish(spec);
  if (published.ok()) return Answer(published->manifest_version, published->commit_id);
  // Whether it landed (an answer lost) is the journal's to say.
  Result<std::optional<ManifestRow>> landed =
      ws_.manifest().FindJournalRow(req_.into, RunCommitId(MergeRevertRunId(req_.merge_id)));
  if (!landed.ok()) return published.status();  // unknown: unpublished versions reset by age
  if (*landed && CommitOf(**landed) == commit_id_) {
    return Answer(ManifestVersionOf(**landed), commit_id_);
  }
  RollBack();
  if (*landed) {  // the same revert, committed by another attempt
    ASSIGN_OR_RETURN(std::optional<MergeRevertResult> known,
                     Find(ws_.manifest(), req_.into, req_.merge_id));
    if (known) return *std::move(known);
  }
  if (published.status().IsAlreadyExists()) {
    return Status::Conflict("a merge into branch '" + BranchName(req_.into) +
                            "' landed meanwhile; revert again");
  }
  return published.status();
}

}  // namespace loam
