// WorkspaceEngine::Merge: a branch's changes published on the branch it was
// created from in one manifest commit (docs/branches.md).
//
// The base of a merge is the source's fork point, or the last merge of the
// same source into the target (a `merge-base:<source id>:<n>` run commit on
// the target naming the source version it merged). A table changed on the
// source since the base moves to the target when the target's head is still
// the base's; otherwise the merge is a conflict naming it. Each moved table's
// content is committed on the target's fork first (Dataset::Adopt, no
// sidecar: a crash leaves only unpublished versions, reset like any other
// once past the grace period), then one publish carries every head, so a
// merge is never half-applied.
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/journal_rows.h"
#include "engine/workspace.h"
#include "format/page.h"

namespace loam {
namespace {

using json = nlohmann::json;

std::string MergeRunId(const std::string& merge_id) { return "merge:" + merge_id; }
std::string MergeBaseRunId(const std::string& source_id, int64_t seq) {
  return "merge-base:" + source_id + ":" + std::to_string(seq);
}
std::string BranchName(const std::string& b) { return b.empty() ? "main" : b; }

// Whether two heads name the same state of a table (grants, which move
// head_commit, are not a change of it).
bool SameHead(const TableHead& a, const TableHead& b) {
  return a.state == b.state && a.inc == b.inc && a.table_version == b.table_version &&
         a.owner_ref == b.owner_ref && a.table_key == b.table_key && a.schema_hash == b.schema_hash;
}

// The graph commit a run commit row names ("" when it names none).
std::string CommitOf(const ManifestRow& row) {
  const json j = ParseJson(row.metadata);
  return j.is_object() && j.contains("commit") && j["commit"].is_string()
             ? j["commit"].get<std::string>()
             : std::string();
}

std::map<int64_t, const TableState*> BySid(const Snapshot& s) {
  std::map<int64_t, const TableState*> out;
  for (const auto& [name, t] : s.tables) out[t.def.sid] = &t;
  return out;
}

const TableState* At(const std::map<int64_t, const TableState*>& m, int64_t sid) {
  auto it = m.find(sid);
  return it == m.end() ? nullptr : it->second;
}

Status CheckFailed(const MergeCheck& c, const std::string& found) {
  return Status::FailedPrecondition("merge check '" + c.name + "' failed: " + found +
                                    "; nothing was merged")
      .WithErrorCode(ErrorCode::kMergeCheckFailed)
      .WithDetail("check", c.name);
}

// A table the source created, as its creation left it: version 1 of its
// dataset's main fork (a branch's first write forks it).
TableHead CreationHead(const TableHead& h) {
  TableHead c = h;
  c.table_version = 1;
  c.owner_ref.clear();
  c.owner_branch.clear();
  return c;
}

}  // namespace

// One merge, step by step (a friend of WorkspaceEngine).
class BranchMerger {
 public:
  BranchMerger(WorkspaceEngine& ws, const MergeRequest& req) : ws_(ws), req_(req) {}
  Result<MergeResult> Run();

 private:
  // Where the last merge of the source into the target left off.
  struct MergeBase {
    int64_t seq = 0;              // merges of this source so far (0: none)
    uint64_t source_version = 0;  // the source version merged last (or its fork point)
    uint64_t target_version = 0;  // the target's commit of it (or the fork point)
  };
  // A table the merge changes on the target.
  struct Change {
    std::string kind;                    // "updated", "created", "dropped"
    const TableState* source = nullptr;  // in source_ (nullptr: dropped)
    const TableState* target = nullptr;  // in target_ (nullptr: created)
    bool data = false;                   // the source's rows move to the target's fork
    TableHead fork_head;                 // what the target's fork holds before
    int64_t version = 0;                 // the target fork's version of them, once committed
    std::optional<ForkReset> reset;
    // The target's head version after the merge.
    int64_t FinalVersion() const {
      if (source == nullptr) return target->head.table_version + 1;  // the tombstone's
      return data ? version : source->head.table_version;
    }
  };

  Status Resolve();
  Result<std::optional<MergeResult>> AlreadyMerged();
  Result<MergeBase> LastMerge() const;
  Result<Snapshot> SnapshotOfVersion(const std::string& branch, uint64_t version) const;
  Status RunChecks() const;
  Status RunCheck(const MergeCheck& c) const;
  Status Plan(const Snapshot& base_source, const Snapshot& base_target);
  Status CommitTables();
  Status CommitTable(Change& c);
  Result<PublishPlan> Build(PublishView& view) const;
  Status BuildOne(PublishView& view, const Change& c, PublishPlan* plan) const;
  Status Authorize(PublishView& view, const Change& c) const;
  Result<MergeResult> Publish();
  void RollBack();
  MergeResult Answer(uint64_t manifest_version, const std::string& commit_id) const;
  std::string Detail() const;

  WorkspaceEngine& ws_;
  const MergeRequest& req_;
  std::string merge_id_;
  std::string source_id_;
  std::string target_id_;
  std::string commit_id_ = NewUlidString();
  MergeBase base_;
  Snapshot source_;
  Snapshot target_;
  std::vector<Change> changes_;
  uint64_t copied_bytes_ = 0;
};

Result<MergeResult> WorkspaceEngine::Merge(const MergeRequest& request) {
  return BranchMerger(*this, request).Run();
}

Result<MergeResult> BranchMerger::Run() {
  RETURN_NOT_OK(Resolve());
  ASSIGN_OR_RETURN(std::optional<MergeResult> known, AlreadyMerged());
  if (known) return *std::move(known);
  ASSIGN_OR_RETURN(base_, LastMerge());
  if (req_.source_version) {
    ASSIGN_OR_RETURN(source_, ws_.SnapshotAt(req_.source, *req_.source_version));
  } else {
    ASSIGN_OR_RETURN(source_, ws_.Current(req_.source));
  }
  if (source_.manifest_version < base_.source_version) {
    return Status::FailedPrecondition("version " + std::to_string(source_.manifest_version) +
                                      " of branch '" + req_.source +
                                      "' is older than what was merged of it already (version " +
                                      std::to_string(base_.source_version) + ")")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  ASSIGN_OR_RETURN(target_, ws_.Current(req_.into));
  ASSIGN_OR_RETURN(Snapshot base_source, SnapshotOfVersion(req_.source, base_.source_version));
  ASSIGN_OR_RETURN(Snapshot base_target, SnapshotOfVersion(req_.into, base_.target_version));
  RETURN_NOT_OK(RunChecks());
  RETURN_NOT_OK(Plan(base_source, base_target));
  if (changes_.empty()) return Answer(0, "");
  RETURN_NOT_OK(CommitTables());
  if (Status s = ws_.Fail(failpoint::kMergeAfterTableCommits); !s.ok()) return s;
  ASSIGN_OR_RETURN(MergeResult merged, Publish());
  RETURN_NOT_OK(ws_.Fail(failpoint::kMergeAfterPublish));
  return merged;
}

Status BranchMerger::Resolve() {
  if (req_.source.empty()) return Status::InvalidArgument("main is merged into nothing");
  Manifest& m = ws_.manifest();
  ASSIGN_OR_RETURN(BranchInfo info, m.BranchParent(req_.source));
  if (info.parent != req_.into) {
    return Status::InvalidArgument("branch '" + req_.source + "' was created from '" +
                                   BranchName(info.parent) + "': it merges only into it, not '" +
                                   BranchName(req_.into) + "'");
  }
  merge_id_ = req_.merge_id.empty() ? NewUlidString() : req_.merge_id;
  if (merge_id_.size() > 255) return Status::InvalidArgument("a merge id has at most 255 bytes");
  ASSIGN_OR_RETURN(source_id_, m.BranchId(req_.source));
  ASSIGN_OR_RETURN(target_id_, m.BranchId(req_.into));
  base_.source_version = base_.target_version = info.parent_version;
  return Status::OK();
}

// A merge committed under this id is answered from its run commit.
Result<std::optional<MergeResult>> BranchMerger::AlreadyMerged() {
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                   ws_.manifest().FindJournalRow(req_.into, RunCommitId(MergeRunId(merge_id_))));
  if (!row) return std::optional<MergeResult>();
  const json j = ParseJson(row->metadata);
  if (!j.is_object() || j.value("merge_source_id", "") != source_id_) {
    return Status::FailedPrecondition("merge id '" + merge_id_ +
                                      "' belongs to another merge; use a new one")
        .WithErrorCode(ErrorCode::kIdempotencyKeyReused);
  }
  MergeResult r;
  r.merge_id = merge_id_;
  r.already_merged = true;
  r.manifest_version = ManifestVersionOf(*row);
  r.commit_id = CommitOf(*row);
  r.source_version = j.value("merge_source_version", uint64_t{0});
  for (const json& t : j.value("merge_tables", json::array())) {
    if (!t.is_object()) continue;
    MergedTable m{t.value("name", ""), t.value("change", ""), t.value("version", int64_t{0}), {}};
    if (t.contains("rows") && t["rows"].is_number_integer()) m.row_count = t["rows"];
    r.tables.push_back(std::move(m));
  }
  return std::optional<MergeResult>(std::move(r));
}

// The highest n with a merge-base:<source id>:<n> run commit on the target
// (exponential probe, then bisection: O(log merges) exact look-ups).
Result<BranchMerger::MergeBase> BranchMerger::LastMerge() const {
  const Manifest& m = ws_.manifest();
  auto find = [&](int64_t seq) {
    return m.FindJournalRow(req_.into, RunCommitId(MergeBaseRunId(source_id_, seq)));
  };
  int64_t lo = 0, hi = 1;  // merge lo exists (0: the fork point), hi unknown
  std::optional<ManifestRow> last;
  for (;;) {
    ASSIGN_OR_RETURN(std::optional<ManifestRow> row, find(hi));
    if (!row) break;
    lo = hi;
    last = std::move(row);
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(std::optional<ManifestRow> row, find(mid));
    if (row) {
      lo = mid;
      last = std::move(row);
    } else {
      hi = mid;
    }
  }
  MergeBase b = base_;
  if (!last) return b;
  const json j = ParseJson(last->metadata);
  b.seq = lo;
  b.source_version = j.is_object() ? j.value("merge_source_version", uint64_t{0}) : 0;
  b.target_version = ManifestVersionOf(*last);
  if (b.source_version == 0 || b.target_version == 0) {
    return Status::DataLoss("merge record " + last->object_id + " is malformed");
  }
  return b;
}

// A base version: read whatever the time-travel window (a fork point stays;
// a last merge older than the window has lost its heads: NotFound).
Result<Snapshot> BranchMerger::SnapshotOfVersion(const std::string& branch,
                                                 uint64_t version) const {
  Result<ManifestVersion> v = ws_.manifest().At(branch, version);
  if (v.status().IsNotFound()) {
    return Status::FailedPrecondition("the base of this merge (version " + std::to_string(version) +
                                      " of branch '" + BranchName(branch) +
                                      "') was removed by retention; create a new branch")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  RETURN_NOT_OK(v.status());
  return ws_.SnapshotOf(*v);
}

Status BranchMerger::RunChecks() const {
  for (const MergeCheck& c : req_.checks) RETURN_NOT_OK(RunCheck(c));
  return Status::OK();
}

Status BranchMerger::RunCheck(const MergeCheck& c) const {
  const TableState* t = source_.Find(c.table);
  if (t == nullptr) {
    return CheckFailed(c, "table '" + c.table + "' does not exist on branch '" + req_.source + "'");
  }
  const int64_t rows = t->head.row_count.value_or(0);
  const std::string has = "table '" + c.table + "' has " + std::to_string(rows) + " rows";
  if (c.min_rows && rows < *c.min_rows) {
    return CheckFailed(c, has + ", fewer than " + std::to_string(*c.min_rows));
  }
  if (c.max_rows && rows > *c.max_rows) {
    return CheckFailed(c, has + ", more than " + std::to_string(*c.max_rows));
  }
  if (c.unique_columns.empty()) return Status::OK();
  for (const std::string& col : c.unique_columns) {
    if (t->def.schema.IndexOf(col) < 0) {
      return Status::InvalidArgument("merge check '" + c.name + "': table '" + c.table +
                                     "' has no column '" + col + "'");
    }
  }
  ASSIGN_OR_RETURN(Dataset ds, ws_.OpenTableAt(t->head));
  std::set<std::string> seen;
  int64_t duplicates = 0;
  ScanSpec spec;
  spec.columns = c.unique_columns;
  RETURN_NOT_OK(ds.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    std::vector<const Column*> cols;
    for (const Column& col : b.columns) cols.push_back(&col);
    for (int64_t r = 0; r < b.num_rows(); ++r)
      duplicates += !seen.insert(EncodeRowKey(cols, r)).second;
    return Status::OK();
  }));
  if (duplicates == 0) return Status::OK();
  std::string columns;
  for (const std::string& col : c.unique_columns) columns += (columns.empty() ? "" : ", ") + col;
  return CheckFailed(c, "table '" + c.table + "' has " + std::to_string(duplicates) +
                            " rows repeating the values of (" + columns + ") of an earlier one");
}

// What moves: every table whose head the source changed since the base; a
// conflict when the target changed it too, or took a name the source gives.
Status BranchMerger::Plan(const Snapshot& base_source, const Snapshot& base_target) {
  const auto bs = BySid(base_source), bt = BySid(base_target), s = BySid(source_),
             t = BySid(target_);
  std::set<int64_t> sids;
  for (const auto& [sid, _] : bs) sids.insert(sid);
  for (const auto& [sid, _] : s) sids.insert(sid);
  std::vector<std::string> both;
  for (int64_t sid : sids) {
    const TableState *from = At(bs, sid), *now = At(s, sid);
    if (from && now && SameHead(from->head, now->head)) continue;  // unchanged on the source
    const TableState *was = At(bt, sid), *cur = At(t, sid);
    const bool moved =
        (was == nullptr) != (cur == nullptr) || (was && cur && !SameHead(was->head, cur->head));
    if (moved) {
      both.push_back(now ? now->def.name : from->def.name);
      continue;
    }
    Change c;
    c.source = now;
    c.target = cur;
    c.kind = now == nullptr ? "dropped" : cur == nullptr ? "created" : "updated";
    if (now != nullptr) {
      c.fork_head = cur ? cur->head : CreationHead(now->head);
      c.data = now->head.table_version != c.fork_head.table_version ||
               now->head.owner_ref != c.fork_head.owner_ref;
    }
    changes_.push_back(std::move(c));
  }
  // Names after the merge: a name the source gives that a table of the
  // target it leaves alone holds is a conflict too.
  std::map<int64_t, std::string> final_names;
  for (const auto& [sid, cur] : t) final_names[sid] = cur->def.name;
  for (const Change& c : changes_) {
    const int64_t sid = c.source ? c.source->def.sid : c.target->def.sid;
    if (c.source) {
      final_names[sid] = c.source->def.name;
    } else {
      final_names.erase(sid);
    }
  }
  std::map<std::string, int> uses;
  for (const auto& [sid, name] : final_names) {
    if (++uses[name] == 2) both.push_back(name);
  }
  if (both.empty()) return Status::OK();
  std::string names;
  for (const std::string& n : both) names += (names.empty() ? "" : ", ") + n;
  return Status::Conflict("merging branch '" + req_.source + "' into '" + BranchName(req_.into) +
                          "' conflicts on table(s) " + names +
                          ": both branches changed them since the branch was created or last "
                          "merged; nothing was merged");
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
  ASSIGN_OR_RETURN(Dataset fork, ws_.OpenFork(c.fork_head, target_id_, &c.reset));
  ASSIGN_OR_RETURN(Dataset from, ws_.OpenTableAt(c.source->head));
  uint64_t copied = 0;
  Result<Dataset> adopted = fork.Adopt(from, {.expected_version = fork.version()}, &copied);
  copied_bytes_ += copied;
  RETURN_NOT_OK(adopted.status().WithContext("merging table '" + c.source->def.name + "'"));
  c.version = static_cast<int64_t>(adopted->version());
  return Status::OK();
}

// Best effort, after a definite failure: each committed version undone by a
// restore of the head's, which the next write there records (OpenFork). One
// left behind is reset by age like any unpublished version.
void BranchMerger::RollBack() {
  for (Change& c : changes_) {
    if (c.version == 0) continue;
    OpenSpec spec;
    spec.branch = target_id_;
    Result<Dataset> fork = Dataset::Open(ws_.store(), ws_.TableRoot(c.fork_head.location), spec,
                                         ws_.options().manifest.dataset);
    Status s = fork.status();
    if (s.ok() && static_cast<int64_t>(fork->version()) == c.version) {
      s = fork->Restore(static_cast<uint64_t>(c.fork_head.table_version),
                        {.expected_version = fork->version()})
              .status();
    }
    if (!s.ok())
      LOAM_LOG_WARN("merge {}: rolling back table '{}': {}", merge_id_, c.fork_head.table_key,
                    s.ToString());
    c.version = 0;
  }
}

Result<PublishPlan> BranchMerger::Build(PublishView& view) const {
  PublishPlan plan;
  for (const Change& c : changes_) RETURN_NOT_OK(BuildOne(view, c, &plan));
  return plan;
}

Status BranchMerger::Authorize(PublishView& view, const Change& c) const {
  const TableState& t = c.source ? *c.source : *c.target;
  const bool admin = c.source == nullptr || c.target == nullptr ||
                     !(c.source->def.name == c.target->def.name &&
                       c.source->def.schema_version == c.target->def.schema_version);
  const WriteMode mode = admin ? WriteMode::kReplace : WriteMode::kAppend;
  if (c.target == nullptr) {  // created: the source's grants are the only ones
    return ws_.AuthorizeRole(t.def.name, req_.principal, source_.RoleOf(t.def.sid, req_.principal),
                             mode);
  }
  return ws_.AuthorizeInPublish(view, t.def.sid, c.target->def.name,
                                {.principal = &req_.principal, .mode = mode});
}

// One table's rows of the merge commit, as its own operation would write
// them: a tombstone for a drop; an incarnation for a creation; a rename, a
// schema and a table version row for what changed of an existing table.
Status BranchMerger::BuildOne(PublishView& view, const Change& c, PublishPlan* plan) const {
  const TableState& t = c.source ? *c.source : *c.target;
  const int64_t sid = t.def.sid;
  ASSIGN_OR_RETURN(std::optional<TableHead> cur, view.TableHeadOf(sid));
  const bool unchanged = c.target ? cur && SameHead(*cur, c.target->head) : !cur;
  if (!unchanged) {
    return Status::Conflict("table '" + t.def.name + "' changed on branch '" +
                            BranchName(req_.into) + "' meanwhile; merge again");
  }
  RETURN_NOT_OK(Authorize(view, c));
  if (c.source == nullptr) {  // dropped, as DropTable writes it
    TableHead head = *cur;
    plan->removes.push_back(TableHeadRow(head));
    head.state = HeadState::kTombstoned;
    head.table_version += 1;
    head.row_count.reset();
    head.head_commit = view.commit_id();
    ManifestRow tomb = JournalRow(object_type::kTableTombstone,
                                  TableTombstoneId(sid, head.inc, head.table_version), head);
    tomb.table_version = head.table_version;
    plan->journal.push_back(std::move(tomb));
    plan->upserts.push_back(TableHeadRow(head));
    plan->removes.push_back(TableDefRow(c.target->def));
    ASSIGN_OR_RETURN(std::vector<ManifestRow> catalog, view.Partition(kCatalogPartition));
    for (const ManifestRow& r : catalog) {
      if (r.object_type == object_type::kGrant && r.stable_table_id == sid)
        plan->removes.push_back(r);
    }
    return Status::OK();
  }
  const TableDef& def = c.source->def;
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
    ManifestRow version = JournalRow(object_type::kTableVersion,
                                     TableVersionId(sid, def.inc, next.table_version), next);
    version.table_version = next.table_version;
    if (!next.owner_branch.empty()) version.table_branch = next.owner_branch;
    version.row_count = next.row_count;
    json meta = {{"owner_ref", next.owner_ref}, {"merge", merge_id_}};
    if (c.reset) {
      meta["reset"] = {{"head_version", c.reset->head_version},
                       {"undone", {c.reset->first_undone, c.reset->last_undone}},
                       {"restore_version", c.reset->restore_version}};
    }
    version.metadata = meta.dump();
    plan->journal.push_back(std::move(version));
  }
  if (c.target == nullptr || !(def == c.target->def)) plan->upserts.push_back(TableDefRow(def));
  plan->upserts.push_back(TableHeadRow(next));
  return Status::OK();
}

std::string BranchMerger::Detail() const {
  json tables = json::array();
  for (const Change& c : changes_) {
    const TableState& t = c.source ? *c.source : *c.target;
    json e = {{"name", t.def.name}, {"change", c.kind}, {"version", c.FinalVersion()}};
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
    const TableState& t = c.source ? *c.source : *c.target;
    r.tables.push_back(
        {t.def.name, c.kind, c.FinalVersion(), c.source ? c.source->head.row_count : std::nullopt});
  }
  return r;
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
  spec.runs = {
      {MergeRunId(merge_id_), Detail()},
      {MergeBaseRunId(source_id_, base_.seq + 1),
       json{{"merge_source_version", source_.manifest_version}, {"merge", merge_id_}}.dump()}};
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
    ASSIGN_OR_RETURN(std::optional<MergeResult> known, AlreadyMerged());
    if (known) return *std::move(known);
  }
  if (published.status().IsAlreadyExists()) {
    return Status::Conflict("another merge of branch '" + req_.source + "' into '" +
                            BranchName(req_.into) + "' landed meanwhile; merge again");
  }
  return published.status();
}

}  // namespace loam
