// Reverting a run: an append's rows deleted by the fragments its run_commit
// row names; an upsert or replace restored to the table's version before it.
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "service/service.h"

namespace loam::service {
namespace {
using json = nlohmann::json;
}  // namespace

using ingest::RunRecord;
using ingest::RunState;

// The rows an append run added that the table still holds, by address, when
// its run_commit row names its fragments (runs committed before fragments
// were recorded: nullopt). precondition_failed when none of its fragments is
// left; revert_blocked when only some are (the others were rewritten: their
// rows can no longer be told apart).
Result<std::optional<std::vector<int64_t>>> Service::AppendedRows(const RunRecord& run,
                                                                  const ingest::RunRequest& req,
                                                                  const Snapshot& snap,
                                                                  const TableState& t) const {
  ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(run.id)));
  if (!row) return std::optional<std::vector<int64_t>>();
  json meta = ParseJson(row->metadata);
  if (!meta.is_object() || !meta.contains("fragments") || !meta["fragments"].is_array() ||
      meta["fragments"].size() != 2 || meta.value("table", int64_t{0}) != t.def.sid) {
    return std::optional<std::vector<int64_t>>();
  }
  const uint64_t first = meta["fragments"][0].get<uint64_t>();
  const uint64_t end = meta["fragments"][1].get<uint64_t>();
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t.def.name));
  std::vector<int64_t> rows;
  uint64_t missing = 0;
  for (uint64_t id = first; id < end; ++id) {
    const Fragment* f = data.state().FindFragment(id);
    if (f == nullptr) {
      ++missing;  // every row deleted, or rewritten by a compaction or replace
      continue;
    }
    for (uint64_t i = 0; i < f->physical_rows; ++i) {
      rows.push_back(static_cast<int64_t>((id << 32) | i));
    }
  }
  if (missing == end - first) {
    return Status::FailedPrecondition("run " + run.id + "'s rows are no longer in table '" +
                                      t.def.name +
                                      "' (reverted or deleted already, or rewritten by a "
                                      "compaction or replace); nothing to revert")
        .WithErrorCode(ErrorCode::kPreconditionFailed)
        .WithDetail("run", run.id);
  }
  if (missing > 0) {
    return Status::FailedPrecondition("run " + run.id + " appended " + std::to_string(end - first) +
                                      " fragments to table '" + t.def.name + "'; " +
                                      std::to_string(missing) +
                                      " of them were rewritten by a compaction or replace (or "
                                      "emptied) since, so its rows can no longer be told apart")
        .WithErrorCode(ErrorCode::kRevertBlocked)
        .WithDetail("run", run.id);
  }
  return std::optional<std::vector<int64_t>>(std::move(rows));
}

// Deletes the rows an append run added, whatever committed after it.
Result<WriteResult> Service::RevertAppend(const CallContext& ctx, const RunRecord& run,
                                          const ingest::RunRequest& req, const TableState& t,
                                          std::vector<int64_t> rows) {
  WriteRequest w;
  w.table = t.def.name;
  w.table_sid = t.def.sid;
  w.branch = req.branch;
  w.mode = WriteMode::kDelete;
  w.authorize_as = WriteMode::kRestore;
  w.row_addresses = std::move(rows);
  w.principal = ctx.principal;
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
  if (req.mode == ingest::LoadMode::kAppend) {
    ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> rows, AppendedRows(run, req, snap, *t));
    if (rows) return RevertAppend(ctx, run, req, *t, *std::move(rows));
  }
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
  WriteRequest w;
  w.table = t->def.name;
  w.table_sid = t->def.sid;
  w.branch = req.branch;
  w.mode = WriteMode::kRestore;
  w.authorize_as = needed;
  w.restore_version = run.table_version - 1;
  w.expected_version = run.table_version;
  w.expected_schema_version = t->def.schema_version;
  w.principal = ctx.principal;
  return ws_->Write(w);
}

}  // namespace loam::service
