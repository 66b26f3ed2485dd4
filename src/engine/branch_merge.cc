// WorkspaceEngine::Merge: a branch's changes published on the branch it was
// created from in one manifest commit (docs/branches.md, branch_merge.h).
// This file: the merge id, the base, the checks and the plan. Each moved
// table's content is then committed on the target's fork (no sidecar: a
// crash leaves only unpublished versions, reset like any other once past
// the grace period) and one publish carries every head
// (branch_merge_publish.cc), so a merge is never half-applied.
#include "engine/branch_merge.h"

#include <charconv>
#include <set>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "format/page.h"

namespace loam {
namespace {

using json = nlohmann::json;

// A uniqueness check reads at most this many rows (its keys are held in memory).
constexpr int64_t kMaxUniqueCheckRows = 10'000'000;
// SameRowsSince looks at most this many versions of a table.
constexpr int64_t kMaxVersionsLookedAt = 256;

Status CheckFailed(const MergeCheck& c, const std::string& found) {
  return Status::FailedPrecondition("merge check '" + c.name + "' failed: " + found +
                                    "; nothing was merged")
      .WithErrorCode(ErrorCode::kMergeCheckFailed)
      .WithDetail("check", c.name);
}

MergeHead HeadAt(const std::map<int64_t, const TableState*>& m, int64_t sid) {
  auto it = m.find(sid);
  return it == m.end() ? MergeHead() : MergeHead(it->second->head);
}

}  // namespace

std::map<int64_t, const TableState*> BySid(const Snapshot& s) {
  std::map<int64_t, const TableState*> out;
  for (const auto& [name, t] : s.tables) out[t.def.sid] = &t;
  return out;
}

const TableState* At(const std::map<int64_t, const TableState*>& m, int64_t sid) {
  auto it = m.find(sid);
  return it == m.end() ? nullptr : it->second;
}

Result<std::optional<ManifestRow>> OwnRunCommit(const Manifest& m, const std::string& into,
                                                const std::string& run_id) {
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row, m.FindJournalRow(into, RunCommitId(run_id)));
  if (!row || into.empty()) return row;
  ASSIGN_OR_RETURN(BranchInfo info, m.BranchParent(into));
  if (ManifestVersionOf(*row) <= info.parent_version) return std::optional<ManifestRow>();
  return row;
}

std::string MergeRunId(const std::string& merge_id) { return "merge:" + merge_id; }
std::string MergeBaseRunId(const std::string& source_id, int64_t seq) {
  return "merge-base:" + source_id + ":" + std::to_string(seq);
}
std::string BranchName(const std::string& b) { return b.empty() ? "main" : b; }

bool SameHead(const MergeHead& a, const MergeHead& b) {
  if (!a || !b) return a.has_value() == b.has_value();
  return a->state == b->state && a->inc == b->inc && a->table_version == b->table_version &&
         a->owner_ref == b->owner_ref && a->table_key == b->table_key &&
         a->schema_hash == b->schema_hash;
}

json HeadJson(const MergeHead& h) {
  if (!h) return nullptr;
  return {{"inc", h->inc},       {"version", h->table_version}, {"owner", h->owner_ref},
          {"key", h->table_key}, {"schema", h->schema_hash},    {"location", h->location}};
}

MergeHead HeadFromJson(const json& j) {
  if (!j.is_object()) return MergeHead();
  TableHead h;
  h.inc = IntegerAt(j, "inc").value_or(0);
  h.table_version = IntegerAt(j, "version").value_or(0);
  h.owner_ref = StringAt(j, "owner");
  h.table_key = StringAt(j, "key");
  h.schema_hash = StringAt(j, "schema");
  h.location = StringAt(j, "location");
  return h;
}

Result<MergeResult> WorkspaceEngine::Merge(const MergeRequest& request) {
  return BranchMerger(*this, request).Run();
}

Result<std::optional<MergeResult>> WorkspaceEngine::FindMerge(const std::string& into,
                                                              const std::string& merge_id,
                                                              const std::string& source) const {
  return BranchMerger::Find(*manifest_, into, merge_id, source);
}

Result<MergeResult> BranchMerger::Run() {
  if (!req_.merge_id.empty()) {  // a retry is answered whatever happened since
    ASSIGN_OR_RETURN(std::optional<MergeResult> known,
                     Find(ws_.manifest(), req_.into, req_.merge_id, req_.source));
    if (known) return *std::move(known);
  }
  RETURN_NOT_OK(Resolve());
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
  ASSIGN_OR_RETURN(Snapshot fork_point, ForkPoint());
  RETURN_NOT_OK(RunChecks());
  RETURN_NOT_OK(Plan(fork_point));
  if (changes_.empty()) return Answer(0, "");
  RETURN_NOT_OK(PreAuthorize());
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
  commit_id_ = NewUlidString();
  ASSIGN_OR_RETURN(source_id_, m.BranchId(req_.source));
  ASSIGN_OR_RETURN(target_id_, m.BranchId(req_.into));
  fork_version_ = info.parent_version;
  return Status::OK();
}

Result<std::optional<MergeResult>> BranchMerger::Find(const Manifest& m, const std::string& into,
                                                      const std::string& merge_id,
                                                      const std::string& source) {
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row, OwnRunCommit(m, into, MergeRunId(merge_id)));
  if (!row) return std::optional<MergeResult>();
  const json j = ParseJson(row->metadata);
  if (!j.is_object() || StringAt(j, "merge_source") != source) {
    return Status::FailedPrecondition("merge id '" + merge_id +
                                      "' belongs to another merge; use a new one")
        .WithErrorCode(ErrorCode::kIdempotencyKeyReused);
  }
  MergeResult r;
  r.merge_id = merge_id;
  r.already_merged = true;
  r.manifest_version = ManifestVersionOf(*row);
  r.commit_id = StringAt(j, "commit");
  r.source_version = static_cast<uint64_t>(IntegerAt(j, "merge_source_version").value_or(0));
  const json tables = j.contains("merge_tables") ? j["merge_tables"] : json::array();
  for (const json& t : tables.is_array() ? tables : json::array()) {
    if (!t.is_object()) continue;
    MergedTable m2{StringAt(t, "name"), StringAt(t, "change"), IntegerAt(t, "version").value_or(0),
                   IntegerAt(t, "rows")};
    r.tables.push_back(std::move(m2));
  }
  return std::optional<MergeResult>(std::move(r));
}

Result<BranchMerger::Base> BranchMerger::LastMerge() const {
  ASSIGN_OR_RETURN(int64_t seq, LastSeq(ws_.manifest(), req_.into, source_id_));
  return BaseAt(ws_.manifest(), req_.into, source_id_, seq, fork_version_);
}

// The highest n with a merge-base:<source id>:<n> run commit on the target
// (exponential probe, then bisection).
Result<int64_t> BranchMerger::LastSeq(const Manifest& m, const std::string& into,
                                      const std::string& source_id) {
  auto has = [&](int64_t seq) -> Result<bool> {
    ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                     m.FindJournalRow(into, RunCommitId(MergeBaseRunId(source_id, seq))));
    return row.has_value();
  };
  int64_t lo = 0, hi = 1;  // merge lo exists (0: the fork point), hi unknown
  for (;;) {
    ASSIGN_OR_RETURN(bool found, has(hi));
    if (!found) break;
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(bool found, has(mid));
    (found ? lo : hi) = mid;
  }
  return lo;
}

Result<std::optional<int64_t>> BranchMerger::SeqAt(const Manifest& m, const std::string& into,
                                                   const std::string& source_id, int64_t last,
                                                   uint64_t manifest_version) {
  int64_t lo = 1, hi = last;
  while (lo <= hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                     m.FindJournalRow(into, RunCommitId(MergeBaseRunId(source_id, mid))));
    if (!row)
      return Status::DataLoss("merge record " + MergeBaseRunId(source_id, mid) + " is gone");
    const uint64_t at = ManifestVersionOf(*row);
    if (at == manifest_version) return std::optional<int64_t>(mid);
    if (at < manifest_version) {
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return std::optional<int64_t>();
}

Result<BranchMerger::Base> BranchMerger::BaseAt(const Manifest& m, const std::string& into,
                                                const std::string& source_id, int64_t seq,
                                                uint64_t fork_version) {
  Base b;
  b.source_version = fork_version;
  if (seq == 0) return b;
  ASSIGN_OR_RETURN(std::optional<ManifestRow> last,
                   m.FindJournalRow(into, RunCommitId(MergeBaseRunId(source_id, seq))));
  if (!last) return Status::NotFound("merge record " + MergeBaseRunId(source_id, seq) + " is gone");
  const json j = ParseJson(last->metadata);
  const std::optional<int64_t> merged = IntegerAt(j, "merge_source_version");
  const json tables = j.is_object() && j.contains("tables") ? j["tables"] : json();
  if (!merged || *merged <= 0 || !tables.is_object()) {
    return Status::DataLoss("merge record " + last->object_id + " is malformed");
  }
  b.seq = seq;
  b.source_version = static_cast<uint64_t>(*merged);
  for (const auto& [sid, heads] : tables.items()) {
    if (!heads.is_array() || heads.size() != 2) {
      return Status::DataLoss("merge record " + last->object_id + " is malformed");
    }
    int64_t id = 0;
    if (std::from_chars(sid.data(), sid.data() + sid.size(), id).ec != std::errc()) {
      return Status::DataLoss("merge record " + last->object_id + " is malformed");
    }
    b.tables[id] = {HeadFromJson(heads[0]), HeadFromJson(heads[1])};
  }
  return b;
}

// The source's fork point: kept while the source exists (the manifest keeps
// fork points whatever the time-travel window).
Result<Snapshot> BranchMerger::ForkPoint() const {
  ASSIGN_OR_RETURN(ManifestVersion v, ws_.manifest().At(req_.into, fork_version_));
  return ws_.SnapshotOf(v);
}

Status BranchMerger::RunChecks() const {
  for (const MergeCheck& c : req_.checks) RETURN_NOT_OK(RunCheck(c));
  return Status::OK();
}

// A check reads only a table the merging principal may read.
Status BranchMerger::RunCheck(const MergeCheck& c) const {
  const TableState* t = source_.Find(c.table);
  if (t == nullptr) {
    return CheckFailed(c, "table '" + c.table + "' does not exist on branch '" + req_.source + "'");
  }
  if (!req_.principal.empty() && req_.principal != ws_.owner() &&
      !source_.RoleOf(t->def.sid, req_.principal)) {
    return Status::PermissionDenied("merge check '" + c.name + "': principal '" + req_.principal +
                                    "' holds no grant on table '" + c.table + "'");
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
  if (rows > kMaxUniqueCheckRows) {
    return Status::ResourceExhausted("merge check '" + c.name + "': " + has +
                                     "; a uniqueness check reads at most " +
                                     std::to_string(kMaxUniqueCheckRows))
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxUniqueCheckRows");
  }
  ASSIGN_OR_RETURN(Dataset ds, ws_.OpenTableAt(t->head));
  std::set<std::string> seen;
  int64_t duplicates = 0;
  ScanSpec spec;
  spec.columns = c.unique_columns;
  RETURN_NOT_OK(ds.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    std::vector<const Column*> cols;
    for (const Column& col : b.columns) cols.push_back(&col);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      bool null = false;  // as in SQL, rows with a null are never equal
      for (const Column* col : cols) null |= col->IsNull(r);
      if (!null) duplicates += !seen.insert(EncodeRowKey(cols, r)).second;
    }
    return Status::OK();
  }));
  if (duplicates == 0) return Status::OK();
  std::string columns;
  for (const std::string& col : c.unique_columns) columns += (columns.empty() ? "" : ", ") + col;
  return CheckFailed(c, "table '" + c.table + "' has " + std::to_string(duplicates) +
                            " rows repeating the values of (" + columns + ") of an earlier one");
}

Result<bool> BranchMerger::SameRowsSince(const WorkspaceEngine& ws, const TableHead& base,
                                         const TableHead& now) {
  if (base.state != now.state || base.inc != now.inc || base.table_key != now.table_key ||
      base.schema_hash != now.schema_hash || now.table_version < base.table_version ||
      now.table_version - base.table_version > kMaxVersionsLookedAt) {
    return false;
  }
  ASSIGN_OR_RETURN(Dataset at_now, ws.OpenTableAt(now));
  std::set<int64_t> same = {base.table_version};  // versions holding the base's rows
  for (int64_t v = base.table_version + 1; v <= now.table_version; ++v) {
    ASSIGN_OR_RETURN(Dataset d, at_now.CheckoutVersion(static_cast<uint64_t>(v)));
    const Transaction& txn = d.state().txn;
    const bool kept =
        (txn.op == OpType::kCompact && same.count(v - 1)) ||
        (txn.op == OpType::kRestore && same.count(static_cast<int64_t>(txn.restore_version)));
    if (kept) same.insert(v);
  }
  return same.count(now.table_version) > 0;
}

// What moves: every table whose head the source changed since its base; a
// conflict when the target changed its rows too, or a name clashes.
Status BranchMerger::Plan(const Snapshot& fork_point) {
  const auto fp = BySid(fork_point), s = BySid(source_), t = BySid(target_);
  std::set<int64_t> sids;
  for (const auto& [sid, _] : fp) sids.insert(sid);
  for (const auto& [sid, _] : base_.tables) sids.insert(sid);
  for (const auto& [sid, _] : s) sids.insert(sid);
  std::vector<std::string> both;
  for (int64_t sid : sids) {
    auto merged = base_.tables.find(sid);
    const MergeHead from = merged != base_.tables.end() ? merged->second.first : HeadAt(fp, sid);
    const MergeHead was = merged != base_.tables.end() ? merged->second.second : HeadAt(fp, sid);
    const TableState *now = At(s, sid), *cur = At(t, sid);
    if (SameHead(from, now ? MergeHead(now->head) : MergeHead())) continue;  // not on the source
    if (now == nullptr && cur == nullptr) continue;                          // gone on both sides
    bool moved = !SameHead(was, cur ? MergeHead(cur->head) : MergeHead());
    if (moved && was && cur) {
      ASSIGN_OR_RETURN(bool same_rows, SameRowsSince(ws_, *was, cur->head));
      moved = !same_rows;  // compacted, or a refused write rolled back: no change
    }
    if (moved) {
      both.push_back(now ? now->def.name : cur ? cur->def.name : from->table_key);
      continue;
    }
    Change c;
    c.source = now;
    c.target = cur;
    c.kind = now == nullptr ? "dropped" : cur == nullptr ? "created" : "updated";
    if (now != nullptr) {
      c.fork_head = cur ? cur->head : now->head;
      if (!cur) {  // created by the source: version 1 of its dataset's main fork
        c.fork_head.table_version = 1;
        c.fork_head.owner_ref.clear();
        c.fork_head.owner_branch.clear();
      }
      c.data = now->head.table_version != c.fork_head.table_version ||
               now->head.owner_ref != c.fork_head.owner_ref;
    }
    changes_.push_back(std::move(c));
  }
  RETURN_NOT_OK(CheckNames(&both));
  if (both.empty()) return Status::OK();
  std::string names;
  for (const std::string& n : both) names += (names.empty() ? "" : ", ") + n;
  return Status::Conflict("merging branch '" + req_.source + "' into '" + BranchName(req_.into) +
                          "' conflicts on table(s) " + names +
                          ": both branches changed them since the branch was created or last "
                          "merged; nothing was merged");
}

// Names after the merge: one the source gives that a table of the target
// the merge leaves alone holds is a conflict too.
Status BranchMerger::CheckNames(std::vector<std::string>* conflicts) const {
  std::map<int64_t, std::string> final_names;
  for (const auto& [name, cur] : target_.tables) final_names[cur.def.sid] = name;
  for (const Change& c : changes_) {
    if (c.source) {
      final_names[c.sid()] = c.source->def.name;
    } else {
      final_names.erase(c.sid());
    }
  }
  std::map<std::string, int> uses;
  for (const auto& [sid, name] : final_names) {
    if (++uses[name] == 2) conflicts->push_back(name);
  }
  return Status::OK();
}

// The grants as of now, before anything is copied (checked again inside the
// publish).
Status BranchMerger::PreAuthorize() const {
  for (const Change& c : changes_) {
    const Snapshot& grants = c.target ? target_ : source_;
    RETURN_NOT_OK(ws_.AuthorizeRole(c.name(), req_.principal,
                                    grants.RoleOf(c.sid(), req_.principal), ModeOf(c)));
  }
  return Status::OK();
}

}  // namespace loam
