// Group commit: several runs' staged appends to one table in one table
// commit and one manifest publish (WorkspaceEngine::WriteGroup), and the parts of
// the write protocol it shares with WorkspaceEngine::Write (the sidecar, the
// settling of a publish, the run_commit rows). A group's sidecar lists every
// run (format 2; 3 when their rows were joined), so recovery of any of them
// settles all.
#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_set>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/workspace.h"
#include "format/page.h"

namespace loam {
namespace {
using json = nlohmann::json;

// Keeps the members whose keys no earlier member adds: a keyed append
// checked its keys against the table, not against its group-mates. The
// others get a conflict and retry alone, after the group's commit.
void DropKeyOverlaps(const Dataset& table, const std::vector<std::string>& keys,
                     const std::vector<const WriteRequest*>& requests, std::vector<size_t>* members,
                     std::vector<Result<WriteResult>>* results) {
  std::unordered_set<std::string> taken;
  std::vector<size_t> kept;
  for (size_t m : *members) {
    Result<std::vector<RecordBatch>> read = table.ReadStaged(requests[m]->staged, keys);
    if (!read.ok()) {  // resumable, as the loader's own check of its staged files
      (*results)[m] = Status::Unavailable("run " + requests[m]->run_id +
                                          ": its staged rows could not be read back (" +
                                          read.status().message() + ")");
      continue;
    }
    std::vector<std::string> mine;
    bool overlaps = false;
    for (const RecordBatch& b : *read) {
      std::vector<const Column*> cols;
      for (const Column& c : b.columns) cols.push_back(&c);
      for (int64_t r = 0; r < b.num_rows() && !overlaps; ++r) {
        mine.push_back(EncodeRowKey(cols, r));
        overlaps = taken.count(mine.back()) > 0;
      }
    }
    if (overlaps) {
      (*results)[m] = Status::Conflict("run " + requests[m]->run_id +
                                       " adds a key that another run committing with it adds");
      continue;
    }
    taken.insert(mine.begin(), mine.end());
    kept.push_back(m);
  }
  *members = std::move(kept);
}

// Whether the members' rows are joined into shared fragments: only when every
// staged fragment is kept in memory (small runs on a table's main dataset).
bool JoinsRows(const std::vector<const WriteRequest*>& requests,
               const std::vector<size_t>& members) {
  return std::all_of(members.begin(), members.end(), [&](size_t m) {
    return std::all_of(requests[m]->staged.begin(), requests[m]->staged.end(),
                       [](const Fragment& f) { return f.inline_bytes != nullptr; });
  });
}

// The run_commit details of a group whose rows were joined: each run's rows
// follow its predecessors' in the fragment the commit added for them, and a
// run is never split (Dataset::JoinStaged). `fragments` names none whole, so
// a build that reads only it finds nothing to revert rather than the
// group-mates' rows. Rows that do not tile the added fragments exactly (a
// sidecar that disagrees with its commit) name no rows at all: a revert then
// refuses rather than delete a group-mate's rows.
std::vector<CommittedRun> JoinedRuns(const Sidecar& s, const DatasetVersion& v) {
  const std::vector<Fragment>& added = v.txn.added;
  // The added fragments got the ids just below next_fragment_id, in order.
  const uint64_t first_id = v.next_fragment_id - added.size();
  std::vector<std::array<uint64_t, 3>> placed;  // fragment slot, first row, end row
  size_t slot = 0;
  uint64_t row = 0;
  bool tiles = !added.empty();
  for (const SidecarRun& r : s.group) {
    const uint64_t rows = static_cast<uint64_t>(r.rows);
    if (tiles && row + rows > added[slot].physical_rows) {
      tiles = row == added[slot].physical_rows && ++slot < added.size();
      row = 0;
    }
    tiles = tiles && row + rows <= added[slot].physical_rows;
    placed.push_back({slot, row, row + rows});
    row += rows;
  }
  tiles = tiles && slot + 1 == added.size() && row == added[slot].physical_rows;
  std::vector<CommittedRun> runs;
  for (size_t i = 0; i < s.group.size(); ++i) {
    json d = {{"table", s.sid}, {"table_version", v.version}};
    const uint64_t id = tiles ? first_id + placed[i][0] : v.next_fragment_id;
    d["fragments"] = {id, id};
    if (tiles) d["fragment_rows"] = {id, placed[i][1], placed[i][2]};
    runs.push_back({s.group[i].id, d.dump()});
  }
  return runs;
}
}  // namespace

bool WorkspaceEngine::Groupable(const WriteRequest& r) {
  if (r.mode != WriteMode::kAppend || !r.staged_rows || r.staged.empty() || !r.table_sid ||
      r.run_id.empty() || (r.expected_version && !r.expected_for_keys) || r.merge_plan != nullptr ||
      !r.add_columns.empty() || r.authorize_as) {
    return false;
  }
  if (!r.expected_for_keys) return true;
  // A keyed append's keys are read back in memory to compare with its
  // group-mates': only small ones join (a large load commits alone, within
  // its memory bound).
  uint64_t bytes = 0;
  for (const Fragment& f : r.staged) bytes += f.data_size;
  return bytes <= kMaxGroupedKeyedBytes;
}

Sidecar WorkspaceEngine::NewSidecar(const WriteRequest& req, const TableHead& head,
                                    const std::string& branch_id) const {
  Sidecar s;
  s.operation_id = NewUlidString();
  s.branch = req.branch;
  s.commit_id = NewUlidString();
  s.rollback_commit_id = NewUlidString();
  s.run_id = req.run_id;
  s.actor = options_.actor;
  s.created_micros = options_.manifest.dataset.clock->NowMicros();
  s.sid = head.sid;
  s.inc = head.inc;
  s.fork = branch_id;
  s.owner_branch = req.branch;
  s.expected_version = head.table_version;
  s.expected_owner_ref = head.owner_ref;
  return s;
}

Result<WriteResult> WorkspaceEngine::SettlePublish(const Sidecar& s, const std::string& key,
                                                   const Dataset& committed,
                                                   Result<WriteResult> published,
                                                   const WriteResult& counted) {
  if (!published.ok()) {
    // Whether the publish landed although its answer was lost is decided by
    // an exact look-up of this write's own commit, never by the table's head:
    // a concurrent grant, rename or write may have moved the head since. A
    // failed look-up leaves the sidecar for recovery to decide.
    ASSIGN_OR_RETURN(std::optional<ManifestRow> own,
                     manifest_->FindJournalRow(s.branch, GraphCommitId(s.commit_id)));
    if (own) {
      RETURN_NOT_OK(store_->DeleteRelaxed(key));
      WriteResult landed;
      landed.manifest_version = static_cast<uint64_t>(own->table_version.value_or(0));
      landed.commit_id = s.commit_id;
      landed.sid = s.sid;
      landed.table_version = static_cast<int64_t>(committed.version());
      landed.row_count = static_cast<int64_t>(committed.CountRows());
      landed.merge = counted.merge;
      landed.compacted = counted.compacted;
      return landed;
    }
    ASSIGN_OR_RETURN(ManifestVersion now, manifest_->Current(s.branch));
    ASSIGN_OR_RETURN(std::optional<TableHead> cur, manifest_->ReadTableHead(now, s.sid));
    // The manifest refused the table's new version: undo it now.
    if (cur) RETURN_NOT_OK(RollBack(s, *cur, committed, /*publish=*/true));
    RETURN_NOT_OK(store_->DeleteRelaxed(key));
    return published.status();
  }
  RETURN_NOT_OK(Fail(failpoint::kAfterPublish));
  RETURN_NOT_OK(store_->DeleteRelaxed(key));
  published->merge = counted.merge;
  published->compacted = counted.compacted;
  return published;
}

std::vector<CommittedRun> WorkspaceEngine::RunsOf(const Sidecar& s, const Dataset& committed) {
  std::vector<CommittedRun> runs;
  if (s.run_id.empty()) return runs;
  const DatasetVersion& v = committed.state();
  // An append's fragments got the ids just below next_fragment_id, in the
  // order the sidecar lists the runs.
  const bool append = v.txn.op == OpType::kAppend && v.txn.id == s.planned_txn;
  uint64_t next = v.next_fragment_id - (append ? v.txn.added.size() : 0);
  auto detail = [&](uint64_t fragments) {
    json d = {{"table", s.sid}, {"table_version", committed.version()}};
    if (append) {
      d["fragments"] = {next, next + fragments};
      next += fragments;
    }
    return d.dump();
  };
  if (s.group.empty()) {
    runs.push_back({s.run_id, detail(v.txn.added.size())});
  } else if (append && s.group.front().rows > 0) {
    runs = JoinedRuns(s, v);
  } else {
    for (const SidecarRun& r : s.group) {
      runs.push_back({r.id, detail(static_cast<uint64_t>(r.fragments))});
    }
  }
  return runs;
}

std::vector<size_t> WorkspaceEngine::GroupMembers(const std::vector<const WriteRequest*>& requests,
                                                  const Snapshot& snap, const TableState& t,
                                                  std::vector<Result<WriteResult>>* results) {
  std::vector<size_t> members;
  std::set<std::string> runs;
  for (size_t i = 0; i < requests.size(); ++i) {
    const WriteRequest& req = *requests[i];
    Status ok = Status::OK();
    Result<bool> done = manifest_->RunCommitted(req.branch, req.run_id);
    if (!done.ok()) {
      ok = done.status();
    } else if (*done || !runs.insert(req.run_id).second) {
      ok = Status::AlreadyExists("run " + req.run_id + " already committed")
               .WithErrorCode(ErrorCode::kRunAlreadyCommitted);
    } else {
      ok = Authorize(snap, t, req.principal, WriteMode::kAppend);
    }
    if (ok.ok() && req.expected_schema_version &&
        *req.expected_schema_version != t.def.schema_version) {
      ok = Status::FailedPrecondition("table '" + t.def.name + "' changed from schema version " +
                                      std::to_string(*req.expected_schema_version) + " to " +
                                      std::to_string(t.def.schema_version) + " since validation")
               .WithErrorCode(ErrorCode::kSchemaConflict);
    }
    if (ok.ok() && req.expected_version && *req.expected_version != t.head.table_version) {
      ok = KeysStillAbsent(snap, t, req);
    }
    if (ok.ok()) {
      members.push_back(i);
    } else {
      (*results)[i] = ok;
    }
  }
  if (members.size() > 1 && !t.def.keys.empty()) {
    Result<Dataset> table = OpenTable(snap, t.def.name);
    if (!table.ok()) {
      for (size_t m : members) (*results)[m] = table.status();
      return {};
    }
    DropKeyOverlaps(*table, t.def.keys, requests, &members, results);
  }
  return members;
}

std::vector<Result<WriteResult>> WorkspaceEngine::WriteGroupOnce(
    const std::vector<const WriteRequest*>& requests, bool* busy) {
  std::vector<Result<WriteResult>> results(requests.size(), Status::Internal("not committed"));
  auto all = [&](const Status& st) {
    for (Result<WriteResult>& r : results) r = st;
    return results;
  };
  if (requests.empty()) return results;
  const WriteRequest& first = *requests.front();
  for (const WriteRequest* r : requests) {
    if (!Groupable(*r) || r->branch != first.branch || r->table_sid != first.table_sid) {
      return all(
          Status::InvalidArgument("a group commit takes staged appends of runs to one table"));
    }
  }
  if (requests.size() == 1) {
    results[0] = Write(first);
    return results;
  }
  Result<RecoveryReport> recovered = RecoverIfDue();
  if (!recovered.ok()) return all(recovered.status());
  Result<ManifestVersion> latest = manifest_->CurrentForWriter(first.branch);
  if (!latest.ok()) return all(latest.status());
  Result<Snapshot> snap = SnapshotOf(*latest);
  if (!snap.ok()) return all(snap.status());
  const TableState* t = snap->FindSid(*first.table_sid);
  if (t == nullptr) {
    return all(Status::NotFound("table '" + first.table + "' (id " +
                                std::to_string(*first.table_sid) + ") does not exist on branch '" +
                                (first.branch.empty() ? "main" : first.branch) + "'"));
  }
  std::vector<size_t> members = GroupMembers(requests, *snap, *t, &results);
  if (members.size() <= 1) {
    for (size_t m : members) results[m] = Write(*requests[m]);
    return results;
  }
  auto members_get = [&](const Status& st) {
    for (size_t m : members) results[m] = st;
    return results;
  };
  Result<std::string> branch_id = manifest_->BranchId(first.branch);
  if (!branch_id.ok()) return members_get(branch_id.status());
  Status barrier = RecoveryBarrier(*recovered, *branch_id, t->head.sid, t->def.name);
  if (!barrier.ok()) return members_get(barrier);
  Result<WriteResult> written = CommitGroup(requests, members, *t, *branch_id, busy);
  const Status& refused = written.status();
  if (refused.IsPermissionDenied() || refused.Is(ErrorCode::kRunAlreadyCommitted)) {
    // A refusal inside the publish may concern one member only (a grant
    // revoked meanwhile, a run another process committed): nothing was
    // committed, and each member learns its own answer by retrying alone.
    written = Status::Conflict("the group commit with run " + requests[members.front()]->run_id +
                               " was refused (" + refused.message() +
                               "); each of its runs commits again alone");
  }
  for (size_t m : members) results[m] = written;
  return results;
}

Result<WriteResult> WorkspaceEngine::CommitGroup(const std::vector<const WriteRequest*>& requests,
                                                 const std::vector<size_t>& members,
                                                 const TableState& t, const std::string& branch_id,
                                                 bool* busy) {
  const TableHead head = t.head;
  const WriteRequest& lead = *requests[members.front()];
  Sidecar s = NewSidecar(lead, head, branch_id);
  s.planned_txn = NewUlidString();
  std::vector<Fragment> staged;
  std::vector<std::vector<Fragment>> joined;  // each member's, when they are joined
  const bool join = JoinsRows(requests, members);
  PublishAuthorisation auth{&lead.principal, WriteMode::kAppend};
  auth.direct = true;
  for (size_t m : members) {
    const WriteRequest& req = *requests[m];
    if (join) {
      int64_t rows = 0;
      for (const Fragment& f : req.staged) rows += static_cast<int64_t>(f.physical_rows);
      s.group.push_back({req.run_id, 0, rows});
      joined.push_back(req.staged);
    } else {
      s.group.push_back({req.run_id, static_cast<int64_t>(req.staged.size())});
    }
    staged.insert(staged.end(), req.staged.begin(), req.staged.end());
    if (req.principal != lead.principal &&
        std::find(auth.more_principals.begin(), auth.more_principals.end(), req.principal) ==
            auth.more_principals.end()) {
      auth.more_principals.push_back(req.principal);
    }
  }
  const std::string key = SidecarKey(root_, s.operation_id);
  ASSIGN_OR_RETURN(const SidecarLeases::Held held, leases_->PutAndHold(key, &s));
  RETURN_NOT_OK(Fail(failpoint::kAfterSidecar));
  std::optional<ForkReset> reset;
  std::optional<int64_t> base_version;  // set once OpenFork succeeded
  Result<Dataset> committed = [&]() -> Result<Dataset> {
    // A remembered base may be stale: only a group that tries again may start there.
    const bool retries = std::all_of(members.begin(), members.end(),
                                     [&](size_t m) { return CommitsOnAnyVersion(*requests[m]); });
    Result<Dataset> base = OpenFork(head, s.fork, &reset, retries);
    if (!base.ok()) {
      *busy = base.status().Is(ErrorCode::kConflict);  // another commit in progress
      return base.status();
    }
    base_version = static_cast<int64_t>(base->version());  // this group's own commit
    if (join) {
      ASSIGN_OR_RETURN(staged, base->JoinStaged(joined));
    }
    CommitOptions opts;
    opts.expected_version = base->version();
    opts.txn_id = s.planned_txn;
    opts.trust_snapshot = true;
    return base->AppendStaged(std::move(staged), opts);
  }();
  bool unknown = false;
  committed = LookAgainAtUnanswered(head, s, base_version, std::move(committed), &unknown);
  if (unknown) return committed.status();  // the sidecar stays: recovery decides
  if (committed.status().IsAborted()) {
    *busy = true;
    committed_forks_.Forget(TableRoot(head.location), s.fork);
    committed = Status::Conflict("another writer committed to table '" + t.def.name + "' first (" +
                                 committed.status().message() + ")");
  }
  if (!committed.ok()) {
    Status deleted = store_->DeleteRelaxed(key);  // no table effect
    if (!deleted.ok()) {
      *busy = false;  // tries again only once its sidecar is gone
      return deleted;
    }
    return committed.status();
  }
  RETURN_NOT_OK(Fail(failpoint::kAfterTableCommit));
  Result<WriteResult> published =
      PublishTableChange(s, head, static_cast<int64_t>(committed->version()),
                         static_cast<int64_t>(committed->CountRows()), s.commit_id, options_.actor,
                         RunsOf(s, *committed), "", std::move(auth), reset);
  Result<WriteResult> settled = SettlePublish(s, key, *committed, std::move(published), {});
  SettleFork(head, s.fork, settled, *committed);
  return settled;
}

}  // namespace loam
