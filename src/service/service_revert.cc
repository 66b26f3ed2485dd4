// Reverting a run: an append's rows deleted by the fragments its run_commit
// row names; an upsert's rows replaced by the rows it replaced, found by
// comparing its table version with the one before; a replace restored to the
// table's version before it.
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/retention.h"
#include "format/page.h"
#include "service/service.h"

namespace loam::service {
namespace {
using json = nlohmann::json;

// Every fragment a commit added (as at its version) is still there with no
// row deleted since.
bool Intact(const DatasetVersion& now, const std::vector<Fragment>& added) {
  for (const Fragment& f : added) {
    const Fragment* there = now.FindFragment(f.id);
    if (there == nullptr || there->deletion_path != f.deletion_path) return false;
  }
  return true;
}

// `b` (rows read at an earlier version) in `schema`: the same columns, and
// the nullable ones added since as nulls.
Result<RecordBatch> InSchema(const RecordBatch& b, const Schema& schema) {
  if (b.schema == schema) return b;
  RecordBatch out(schema);
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const Field& f = schema.fields[i];
    const int at = b.schema.IndexOf(f.name);
    if (at < 0) {
      for (int64_t r = 0; r < b.num_rows(); ++r) out.columns[i].AppendNull();
    } else if (b.schema.fields[at].type == f.type) {
      out.columns[i] = b.columns[at];
    } else {
      return Status::FailedPrecondition("column '" + f.name +
                                        "' changed type since; the replaced rows cannot return")
          .WithErrorCode(ErrorCode::kRevertBlocked);
    }
  }
  return out;
}

// Adds the AppendRowKey bytes of each row's `keys` to `out`.
void KeysOf(const RecordBatch& b, const std::vector<std::string>& keys,
            std::set<std::string>* out) {
  std::vector<const Column*> cols;
  for (const std::string& k : keys) cols.push_back(&b.columns[b.schema.IndexOf(k)]);
  std::string buf;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    buf.clear();
    AppendRowKey(cols, r, &buf);
    out->insert(buf);
  }
}

// revert_blocked when a live row of `data` holds one of `keys`.
Status NoneLive(const Dataset& data, const TableState& t, const std::set<std::string>& keys,
                const std::string& run_id) {
  ScanSpec spec;
  spec.columns = t.def.keys;
  return data.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    std::set<std::string> live;
    KeysOf(b, t.def.keys, &live);
    for (const std::string& k : live) {
      if (keys.count(k) == 0) continue;
      return Status::FailedPrecondition("run " + run_id + " deleted rows of table '" + t.def.name +
                                        "' whose keys were written again since; a revert would "
                                        "duplicate them: delete those rows first")
          .WithErrorCode(ErrorCode::kRevertBlocked)
          .WithDetail("run", run_id);
    }
    return Status::OK();
  });
}

// The revert's write to the run's table, by `ctx`'s principal: `mode` with
// the role a restore needs.
WriteRequest RevertWrite(const CallContext& ctx, const ingest::RunRequest& req, const TableState& t,
                         WriteMode mode) {
  WriteRequest w;
  w.table = t.def.name;
  w.table_sid = t.def.sid;
  w.branch = req.branch;
  w.mode = mode;
  w.authorize_as = WriteMode::kRestore;
  w.principal = ctx.principal;
  return w;
}

// A failure after which nothing can reference the staged files.
bool Definite(const Status& s) {
  return s.IsFailedPrecondition() || s.IsPermissionDenied() || s.IsNotFound() ||
         s.IsInvalidArgument();
}

}  // namespace

using ingest::RunRecord;
using ingest::RunState;

namespace {

// The rows an append run's run_commit names: whole fragments [first, end),
// or, when its group's rows were joined, rows [first, end) of one fragment.
Result<std::vector<RowRange>> RunRowRanges(const json& meta, const std::string& run_id) {
  std::vector<RowRange> ranges;
  if (meta.contains("fragment_rows")) {
    const json& r = meta["fragment_rows"];
    if (!r.is_array() || r.size() != 3 || !r[0].is_number_unsigned() ||
        !r[1].is_number_unsigned() || !r[2].is_number_unsigned() ||
        r[2].get<uint64_t>() < r[1].get<uint64_t>()) {
      return Status::DataLoss("the run_commit row of run " + run_id +
                              " has malformed \"fragment_rows\"");
    }
    const uint64_t first = r[1].get<uint64_t>();
    ranges.push_back({r[0].get<uint64_t>(), first, r[2].get<uint64_t>() - first});
    return ranges;
  }
  const json& f = meta["fragments"];
  if (!f[0].is_number_unsigned() || !f[1].is_number_unsigned()) {
    return Status::DataLoss("the run_commit row of run " + run_id + " has malformed \"fragments\"");
  }
  const uint64_t first = f[0].get<uint64_t>();
  const uint64_t end = f[1].get<uint64_t>();
  for (uint64_t id = first; id < end; ++id) {
    ranges.push_back({id, 0, std::numeric_limits<uint64_t>::max()});
  }
  return ranges;
}

// An upsert or delete run's revert compares the table before the run with
// the run's version: the state before it (its manifest version - 1) must be
// inside the time-travel window. Past it the table's versions are gone, or
// kept only as files that hold inline parts still in use.
Status BeforeRunInWindow(const WorkspaceEngine& ws, const ingest::RunRecord& run,
                         const ingest::RunRequest& req) {
  std::string id;
  if (!req.branch.empty()) {
    ASSIGN_OR_RETURN(id, ws.manifest().BranchId(req.branch));
  }
  ASSIGN_OR_RETURN(uint64_t oldest, ReadTimeTravelHorizon(*ws.store(), ws.root(), id));
  if (run.manifest_version == 0 || run.manifest_version - 1 >= oldest) return Status::OK();
  return VersionExpired(req.branch, run.manifest_version - 1, oldest).WithDetail("run", run.id);
}

}  // namespace

// The rows an append run added that the table still holds, by address, when
// its run_commit row names its fragments (runs committed before fragments
// were recorded: nullopt), followed through every compaction since.
// precondition_failed when none of its rows is left; revert_blocked when
// some left otherwise than by a compaction or a delete (a replace, a
// restore, a version cleaned up): the rest can no longer be told apart.
Result<std::optional<std::vector<int64_t>>> Service::AppendedRows(const RunRecord& run,
                                                                  const ingest::RunRequest& req,
                                                                  const Snapshot& snap,
                                                                  const TableState& t) const {
  ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(run.id)));
  if (!row) return std::optional<std::vector<int64_t>>();
  json meta = ParseJson(row->metadata);
  if (!meta.is_object() || !meta.contains("fragments") || !meta["fragments"].is_array() ||
      meta["fragments"].size() != 2 || IntegerAt(meta, "table").value_or(0) != t.def.sid) {
    return std::optional<std::vector<int64_t>>();
  }
  ASSIGN_OR_RETURN(std::vector<RowRange> added, RunRowRanges(meta, run.id));
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t.def.name));
  ASSIGN_OR_RETURN(FollowedRows found,
                   data.FollowRows(added, static_cast<uint64_t>(run.table_version)));
  std::vector<int64_t> rows;
  for (const RowRange& r : found.here) {
    for (uint64_t i = 0; i < r.count; ++i) {
      rows.push_back(static_cast<int64_t>((r.fragment << 32) | (r.first + i)));
    }
  }
  if (found.lost > 0 && !rows.empty()) {
    return Status::FailedPrecondition("run " + run.id + " appended rows to table '" + t.def.name +
                                      "'; " + std::to_string(found.lost) +
                                      " of them were rewritten by a replace or restore (or their "
                                      "history cleaned up) since, so the rest can no longer be "
                                      "told apart")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("run", run.id);
  }
  if (rows.empty()) {
    return Status::FailedPrecondition("run " + run.id + "'s rows are no longer in table '" +
                                      t.def.name +
                                      "' (reverted or deleted already, or rewritten by a "
                                      "replace); nothing to revert")
        .WithErrorCode(ErrorCode::kPreconditionFailed)
        .WithDetail("run", run.id);
  }
  return std::optional<std::vector<int64_t>>(std::move(rows));
}

// Deletes the rows an append run added, whatever committed after it.
Result<WriteResult> Service::RevertAppend(const CallContext& ctx, const RunRecord& run,
                                          const ingest::RunRequest& req, const TableState& t,
                                          std::vector<int64_t> rows) {
  WriteRequest w = RevertWrite(ctx, req, t, WriteMode::kDelete);
  w.row_addresses = std::move(rows);
  ASSIGN_OR_RETURN(WriteResult done, ws_->Write(w));
  if (!done.changed) {
    return Status::FailedPrecondition("run " + run.id + "'s rows are no longer in table '" +
                                      t.def.name +
                                      "' (reverted or deleted already); nothing to revert")
        .WithErrorCode(ErrorCode::kPreconditionFailed)
        .WithDetail("run", run.id);
  }
  return done;
}

// The first table version after `version` at which a fragment in `added`
// lost a row or left, with its commit, for a message. Bisected: rows stay
// gone once gone (but for a restore, when any version that lost them does).
Result<std::string> Service::FirstChangeAfter(const Dataset& data,
                                              const std::vector<Fragment>& added, uint64_t version,
                                              const TableState& t,
                                              const std::string& branch) const {
  uint64_t lo = version;
  uint64_t hi = data.version();
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    Result<Dataset> at = data.CheckoutVersion(mid);
    if (!at.ok()) break;  // removed by gc: name a later version that lost them
    (Intact(at->state(), added) ? lo : hi) = mid;
  }
  ASSIGN_OR_RETURN(std::vector<TableHistoryEntry> history, ws_->History(t.def.name, branch));
  for (const TableHistoryEntry& h : history) {
    if (h.table_version == static_cast<int64_t>(hi) && !h.commit_id.empty()) {
      return "commit " + h.commit_id + " (" + h.event + " by " + (h.actor.empty() ? "?" : h.actor) +
             ", table version " + std::to_string(hi) + ")";
    }
  }
  return "table version " + std::to_string(hi);
}

// An upsert run's revert: in one commit the rows it wrote leave and copies of
// the rows it replaced return, whatever committed since on other keys.
// revert_blocked, naming the commit, once a later commit deleted or rewrote
// one of its rows (changed one of its keys, or compacted or replaced them).
// The run's table version names a version of the fork its branch wrote
// then: its commit must be in the branch's history, for this table at that
// version (a branch deleted and created again under the name has others).
Status Service::CommitInHistory(const RunRecord& run, const ingest::RunRequest& req,
                                const TableState& t) const {
  ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(run.id)));
  const json meta = row ? ParseJson(row->metadata) : json();
  if (!row || (meta.contains("table") && IntegerAt(meta, "table") != t.def.sid) ||
      (meta.contains("table_version") && IntegerAt(meta, "table_version") != run.table_version)) {
    return Status::FailedPrecondition("run " + run.id +
                                      "'s commit is not in the history of table '" + t.def.name +
                                      "' on branch '" + (req.branch.empty() ? "main" : req.branch) +
                                      "' (was the branch deleted and created again?)")
        .WithErrorCode(ErrorCode::kPreconditionFailed)
        .WithDetail("run", run.id);
  }
  return Status::OK();
}

Result<WriteResult> Service::RevertUpsert(const CallContext& ctx, const RunRecord& run,
                                          const ingest::RunRequest& req, const Snapshot& snap,
                                          const TableState& t) {
  RETURN_NOT_OK(CommitInHistory(run, req, t));
  RETURN_NOT_OK(BeforeRunInWindow(*ws_, run, req));
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t.def.name));
  const auto version = static_cast<uint64_t>(run.table_version);
  ASSIGN_OR_RETURN(Dataset at, data.CheckoutVersion(version));
  ASSIGN_OR_RETURN(Dataset before, data.CheckoutVersion(version - 1));
  std::vector<Fragment> added;
  std::vector<int64_t> written;
  for (const Fragment& f : at.state().fragments) {
    if (before.state().FindFragment(f.id) != nullptr) continue;
    added.push_back(f);
    for (uint64_t i = 0; i < f.physical_rows; ++i) {
      written.push_back(static_cast<int64_t>((f.id << 32) | i));
    }
  }
  if (!Intact(data.state(), added)) {
    ASSIGN_OR_RETURN(std::string by, FirstChangeAfter(data, added, version, t, req.branch));
    return Status::FailedPrecondition("run " + run.id + " upserted rows into table '" + t.def.name +
                                      "' that " + by +
                                      " changed or removed since; revert that first")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("run", run.id);
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> replaced, at.RowsRemovedSince(before));
  std::vector<Fragment> staged;
  auto discard = [&] {
    NoteCleanupFailure("removing a revert's unpublished fragments", data.DeleteStaged(staged));
  };
  Status copied = before.TakeEach(replaced, {}, [&](const RecordBatch& b) -> Status {
    ASSIGN_OR_RETURN(RecordBatch rows, InSchema(b, data.schema()));
    ASSIGN_OR_RETURN(Fragment f, data.WriteFragment(rows));
    staged.push_back(std::move(f));
    return Status::OK();
  });
  if (!copied.ok()) {
    discard();
    return copied;
  }
  WriteRequest w = RevertWrite(ctx, req, t, WriteMode::kReplaceRows);
  w.row_addresses = std::move(written);
  w.staged_rows = true;
  w.staged = staged;
  w.expected_schema_version = t.def.schema_version;
  Result<WriteResult> done = ws_->Write(w);
  if (done.ok()) return done;
  if (Definite(done.status())) discard();
  if (done.status().Is(ErrorCode::kPreconditionFailed)) {  // a row left meanwhile
    return Status(done.status()).WithErrorCode(ErrorCode::kRevertBlocked).WithDetail("run", run.id);
  }
  return done.status();
}

// A delete run's revert: copies of the rows it deleted return in one
// commit (an append), whatever committed since; revert_blocked when a row
// live now holds the key of one of them (written again since).
Result<WriteResult> Service::RevertDelete(const CallContext& ctx, const RunRecord& run,
                                          const ingest::RunRequest& req, const Snapshot& snap,
                                          const TableState& t) {
  RETURN_NOT_OK(CommitInHistory(run, req, t));
  // The revert's commit records run_commit:revert:<run id>, so the rows
  // come back at most once (copies cannot be told from other rows later).
  const std::string revert_id = "revert:" + run.id;
  const auto reverted = [&] {
    return Status::FailedPrecondition("run " + run.id + " was reverted already; nothing to revert")
        .WithErrorCode(ErrorCode::kPreconditionFailed)
        .WithDetail("run", run.id);
  };
  ASSIGN_OR_RETURN(bool done_before, ws_->manifest().RunCommitted(req.branch, revert_id));
  if (done_before) return reverted();
  RETURN_NOT_OK(BeforeRunInWindow(*ws_, run, req));
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t.def.name));
  const auto version = static_cast<uint64_t>(run.table_version);
  ASSIGN_OR_RETURN(Dataset at, data.CheckoutVersion(version));
  ASSIGN_OR_RETURN(Dataset before, data.CheckoutVersion(version - 1));
  ASSIGN_OR_RETURN(std::vector<uint64_t> deleted, at.RowsRemovedSince(before));
  std::set<std::string> keys;  // of the rows that return (keyed tables)
  std::vector<Fragment> staged;
  auto discard = [&] {
    NoteCleanupFailure("removing a revert's unpublished fragments", data.DeleteStaged(staged));
  };
  Status copied = before.TakeEach(deleted, {}, [&](const RecordBatch& b) -> Status {
    ASSIGN_OR_RETURN(RecordBatch rows, InSchema(b, data.schema()));
    if (!t.def.keys.empty()) KeysOf(rows, t.def.keys, &keys);
    ASSIGN_OR_RETURN(Fragment f, data.WriteFragment(rows));
    staged.push_back(std::move(f));
    return Status::OK();
  });
  if (copied.ok() && !keys.empty()) copied = NoneLive(data, t, keys, run.id);
  if (!copied.ok()) {
    discard();
    return copied;
  }
  WriteRequest w = RevertWrite(ctx, req, t, WriteMode::kAppend);
  w.staged_rows = true;
  w.staged = staged;
  if (!t.def.keys.empty())
    w.expected_version = t.head.table_version;  // the keys were checked there
  w.expected_schema_version = t.def.schema_version;
  w.run_id = revert_id;
  Result<WriteResult> done = ws_->Write(w);
  if (done.ok()) return done;
  const bool twice = done.status().Is(ErrorCode::kRunAlreadyCommitted);
  if (Definite(done.status()) || twice) discard();
  return twice ? reverted() : done.status();
}

Result<WriteResult> Service::RevertRun(const CallContext& ctx, const std::string& run_id) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (!Ulid::Parse(run_id).ok()) return Status::NotFound("no run '" + run_id + "'");
  ASSIGN_OR_RETURN(RunRecord run, loader_->runs().Get(run_id));
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(run.request));
  auto nothing = [&] {
    return Status::FailedPrecondition("run " + run_id + " is " +
                                      std::string(ingest::RunStateName(run.state)) +
                                      " and committed nothing to revert");
  };
  if (req.principal == ctx.principal && run.table_sid == 0) return nothing();  // never ran
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(req.branch));
  const TableState* t = snap.FindSid(run.table_sid);
  if (t == nullptr) return Status::NotFound("the table run " + run_id + " loaded was dropped");
  // Authorized before anything about the run's state is told. A replace's
  // revert needs the admin a replace needs, checked again in the commit.
  const WriteMode needed =
      req.mode == ingest::LoadMode::kReplace ? WriteMode::kReplace : WriteMode::kRestore;
  RETURN_NOT_OK(ws_->Authorize(snap, *t, ctx.principal, needed));
  if ((run.state != RunState::kSucceeded && run.state != RunState::kPartial) ||
      run.commit_id.empty() || run.table_version < 2) {
    return nothing();
  }
  // An append run's rows are found at one snapshot; a compaction that moves
  // them before the delete commits makes the delete fail, and they are found
  // again where it put them.
  constexpr int kAppendRevertAttempts = 5;
  for (int attempt = 1; req.mode == ingest::LoadMode::kAppend; ++attempt) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> rows, AppendedRows(run, req, snap, *t));
    if (!rows) break;
    Result<WriteResult> done = RevertAppend(ctx, run, req, *t, *std::move(rows));
    if (done.ok() || attempt == kAppendRevertAttempts) return done;
    const int64_t found_at = t->head.table_version;
    ASSIGN_OR_RETURN(snap, ws_->Current(req.branch));
    t = snap.FindSid(run.table_sid);
    if (t == nullptr || t->head.table_version == found_at) return done;
  }
  if (req.mode == ingest::LoadMode::kUpsert) return RevertUpsert(ctx, run, req, snap, *t);
  if (req.mode == ingest::LoadMode::kDelete) return RevertDelete(ctx, run, req, snap, *t);
  if (t->head.table_version != run.table_version) {
    std::string later;
    ASSIGN_OR_RETURN(std::vector<TableHistoryEntry> history, ws_->History(t->def.name, req.branch));
    for (const TableHistoryEntry& h : history) {
      if (h.table_version > run.table_version && !h.commit_id.empty()) {
        later += (later.empty() ? "" : ", ") + h.commit_id + " (" + h.event + " by " +
                 (h.actor.empty() ? "?" : h.actor) + ")";
      }
    }
    return Status::FailedPrecondition(
               "run " + run_id + " committed table '" + t->def.name + "' version " +
               std::to_string(run.table_version) + ", but later commits touched it: " +
               (later.empty() ? "version " + std::to_string(t->head.table_version) : later) +
               "; revert those first")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("run", run_id);
  }
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t->def.name));
  ASSIGN_OR_RETURN(Dataset before, data.CheckoutVersion(run.table_version - 1));
  if (before.schema() != data.schema()) {
    return Status::FailedPrecondition("run " + run_id + " added columns to table '" + t->def.name +
                                      "'; a revert never removes columns");
  }
  WriteRequest w = RevertWrite(ctx, req, *t, WriteMode::kRestore);
  w.authorize_as = needed;
  w.restore_version = run.table_version - 1;
  w.expected_version = run.table_version;
  w.expected_schema_version = t->def.schema_version;
  return ws_->Write(w);
}

}  // namespace loam::service
