// One run carried from validating to its end: validation of the whole
// input, the commit, and what a failure means for the run (its end, a retry
// after a conflict, or a resume later).
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/backoff.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "ingest/loader.h"
#include "ingest/loader_internal.h"
#include "ingest/row_deletes.h"
#include "ingest/stager.h"

namespace loam::ingest {

// A run retries a commit that lost to a concurrent change at least this many
// times, and for as long as the conflicts last less than the budget: writers
// sharing a table under load lose often, and a valid run must not fail for it.
constexpr int kConflictRetries = 8;
constexpr auto kConflictBudget = std::chrono::seconds(120);

namespace {

using json = nlohmann::json;
using loader_internal::NowMicros;
using loader_internal::StartValidating;

WriteMode ToWriteMode(LoadMode m) {
  switch (m) {
    case LoadMode::kAppend:
      return WriteMode::kAppend;
    case LoadMode::kUpsert:
      return WriteMode::kUpsert;
    case LoadMode::kReplace:
      return WriteMode::kReplace;
    case LoadMode::kDelete:
      return WriteMode::kDelete;
  }
  return WriteMode::kAppend;
}

// The error code a run that ends with `s` records: a malformed value in the
// input is a validation failure of the run.
ErrorCode RunErrorCode(const Status& s) {
  return s.Is(ErrorCode::kInvalidArgument) ? ErrorCode::kValidationFailed : s.error_code();
}

// Deterministic failures end the run; anything else (I/O, a lost lease, a
// lost compare-and-swap) leaves it resumable.
bool EndsRun(const Status& s) {
  switch (s.error_code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kValidationFailed:
    case ErrorCode::kDuplicateKey:
    case ErrorCode::kLimitExceeded:
    case ErrorCode::kNotFound:
    case ErrorCode::kPermissionDenied:
    case ErrorCode::kSchemaConflict:
    case ErrorCode::kPreconditionFailed:
    case ErrorCode::kUnsupportedFormat:
    case ErrorCode::kMigrationRequired:
    case ErrorCode::kSourceAlreadyLoaded:
      return true;
    case ErrorCode::kConflict:
      return !s.IsAborted();
    default:
      return false;
  }
}

// The request fits the table: the principal may do it, keys exist, and the
// coercions fit the columns.
Status CheckRequest(const WorkspaceEngine& ws, const RunRequest& req, const Snapshot& snap,
                    const TableState& t) {
  RETURN_NOT_OK(ws.Authorize(snap, t, req.principal, ToWriteMode(req.mode)));
  const Schema& schema = t.def.schema;
  if (req.mode == LoadMode::kUpsert) RETURN_NOT_OK(UpsertKeys(t.def, req.keys).status());
  if (req.mode == LoadMode::kDelete) {
    RETURN_NOT_OK(req.where.empty() ? DeleteKeyColumns(req, t.def).status()
                                    : DeleteFilters(req, schema).status());
  }
  if (req.policy.additive) {
    if (req.mode != LoadMode::kAppend) {
      return Status::InvalidArgument("additive schema mode is for appends only");
    }
    if (!snap.AllowsAdditiveSchema(t.def.sid)) {
      return Status::PermissionDenied("table '" + t.def.name +
                                      "' does not allow additive schema changes; an admin can "
                                      "allow them");
    }
  }
  return req.policy.CheckAgainst(schema);
}

// Renews a run's lease every `interval_micros` on its own thread while the
// commit runs (a long commit must not look like a dead worker). A failed
// renewal is retried at the next tick; one that lost the compare-and-swap
// (the run was taken over) stops it, and the journal's run_commit row still
// keeps the commit to at most one.
class LeaseKeeper {
 public:
  LeaseKeeper(std::function<Status()> renew, int64_t interval_micros) {
    if (interval_micros < 1000) return;  // leases this short are tests' "always expired"
    thread_ = std::thread([this, renew = std::move(renew), interval_micros] {
      std::unique_lock lock(mu_);
      while (!done_) {
        if (cv_.wait_for(lock, std::chrono::microseconds(interval_micros), [&] { return done_; })) {
          return;
        }
        lock.unlock();
        const Status s = renew();
        lock.lock();
        if (s.IsAborted()) {  // taken over: nothing left to keep
          LOAM_LOG_WARN("lease renewal during the commit: {}", s.ToString());
          return;
        }
        if (!s.ok())
          LOAM_LOG_WARN("lease renewal during the commit failed, retrying: {}", s.ToString());
      }
    });
  }
  ~LeaseKeeper() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// A failed run wrote nothing: it claims no inserted, updated, unchanged or
// deleted rows (what it read and rejected stays counted).
void ForgetWrites(RunCounters* c) { c->inserted = c->updated = c->unchanged = c->deleted = 0; }

// One attempt's commit request: the staged rows, as one atomic write that
// records run_commit:<id>.
WriteRequest CommitRequest(const RunRequest& req, const RunRecord& rec, const TableState& t,
                           const StagedInput& staged) {
  WriteRequest w;
  w.table = t.def.name;
  w.table_sid = t.def.sid;
  w.branch = req.branch;
  w.mode = ToWriteMode(req.mode);
  w.staged_rows = req.mode != LoadMode::kDelete;
  w.staged = staged.staged;
  w.where = staged.delete_where;  // a delete: by filter or by address
  w.row_addresses = staged.delete_rows;
  w.keys = req.keys;
  if (req.policy.additive) {
    w.add_columns = req.policy.NewColumns(t.def.schema);
    w.additive_admin = req.additive_admin;
  }
  if (staged.plan) w.merge_plan = &*staged.plan;
  // An upsert's plan was made on this version, and a keyed append's key
  // checks: a later version takes them only when no commit since touched
  // one of their keys (CarryMergePlan, KeysStillAbsent).
  // A delete removes the rows it found at this version: a later one finds them again.
  if (req.mode == LoadMode::kUpsert || (req.mode == LoadMode::kAppend && !t.def.keys.empty()) ||
      req.mode == LoadMode::kDelete || req.expected_table_version) {
    w.expected_version = t.head.table_version;
  }
  w.expected_for_keys = (req.mode == LoadMode::kAppend || req.mode == LoadMode::kUpsert) &&
                        !req.expected_table_version;
  w.expected_schema_version = t.def.schema_version;
  w.run_id = rec.id;
  w.principal = req.principal;
  return w;
}

// skipRows: a run that left rows out ends partial.
RunState DoneState(const RunCounters& c) {
  return c.rejected > 0 ? RunState::kPartial : RunState::kSucceeded;
}

}  // namespace

Result<RunRecord> Loader::AfterFailedAttempt(Active& run, const Status& s) {
  // Not the run's fault: the lease went to another process, or the run
  // waits its turn (its source held by another run).
  if (s.IsAborted() || s.Is(ErrorCode::kRequestInFlight) || !s.detail("run").empty()) return s;
  // The stored record, not this attempt's copy: the attempt may have ended
  // half way through reporting a terminal state.
  std::string etag;
  Result<RunRecord> stored = runs_.Get(run.record.id, &etag);
  if (!stored.ok() || stored->lease_owner != owner_ || IsTerminal(stored->state)) return s;
  run.record = std::move(*stored);
  run.etag = std::move(etag);
  RunRecord& rec = run.record;
  ++rec.attempts;
  rec.last_error_code = std::string(ErrorCodeName(s.error_code()));
  rec.last_error = s.message();
  if (rec.attempts < options_.max_attempts) {
    const int shift = std::min(rec.attempts - 1, 16);
    rec.lease_expires_micros =
        NowMicros() + std::min<int64_t>(options_.retry_backoff_micros << shift, 300'000'000);
    static_cast<void>(Save(run));  // best effort: a lost count only allows one more attempt
    return s;
  }
  // The last attempt: fail the run, unless its commit landed (the journal
  // decides) or a half-done commit cannot be settled yet.
  const RunRequest& req = run.request;
  ASSIGN_OR_RETURN(RecoveryReport settled, ws_->RecoverRun(rec.id));
  if (!settled.failures.empty()) return s;
  ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(rec.id)));
  if (row) return s;  // committed: the next resume records it as such
  // Still this process's run, for a whole lease, before the hook acts for it.
  RETURN_NOT_OK(Renew(run));
  rec.state = RunState::kFailed;
  rec.finished_micros = NowMicros();
  rec.lease_expires_micros = 0;
  rec.error_code = rec.last_error_code;
  rec.error =
      "gave up after " + std::to_string(rec.attempts) + " attempts; the last: " + rec.last_error;
  ForgetWrites(&rec.counters);
  if (options_.before_terminal) RETURN_NOT_OK(options_.before_terminal(rec));
  RETURN_NOT_OK(Save(run));
  return rec;
}

Result<RunRecord> Loader::Finish(Active& run, RunState state) {
  RunRecord& rec = run.record;
  // Before the hook acts on the run's behalf, this process must own it for
  // at least two thirds of a lease: renewed unless it just was.
  if (options_.before_terminal) RETURN_NOT_OK(RenewIfOld(run));
  rec.state = state;
  rec.finished_micros = NowMicros();
  rec.lease_expires_micros = 0;
  if (options_.before_terminal) RETURN_NOT_OK(options_.before_terminal(rec));
  RETURN_NOT_OK(Save(run));
  return rec;
}

Result<RunRecord> Loader::EndCancelled(Active& run) {
  RunRecord& rec = run.record;
  if (run.reached_commit) {  // an earlier attempt asked for its commit: the journal decides
    ASSIGN_OR_RETURN(bool done, Committed(run));
    if (done) return Finish(run, DoneState(rec.counters));
  }
  rec.error_code.clear();
  rec.error = "cancelled by " + rec.cancel_requested_by + " while " +
              std::string(RunStateName(rec.state)) + "; nothing was written";
  ForgetWrites(&rec.counters);
  return Finish(run, RunState::kCancelled);
}

Result<bool> Loader::Committed(Active& run) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(rec.id)));
  if (!row) return false;
  json meta = ParseJson(row->metadata);
  rec.commit_id = meta.is_object() ? StringAt(meta, "commit") : "";
  rec.manifest_version = meta.is_object() ? static_cast<uint64_t>(std::max<int64_t>(
                                                0, IntegerAt(meta, "manifest_version").value_or(0)))
                                          : 0;
  // Its table version comes from the snapshot it committed; past the
  // time-travel window that is gone, and the run is committed all the same.
  Result<Snapshot> at = ws_->SnapshotAt(req.branch, rec.manifest_version);
  if (at.ok()) {
    if (const TableState* t = at->FindSid(rec.table_sid); t != nullptr) {
      rec.table_version = t->head.table_version;
    }
  } else if (!at.status().Is(ErrorCode::kVersionExpired)) {
    return at.status();
  }
  rec.error_code.clear();
  rec.error.clear();
  return true;
}

Status Loader::KeepErrors(Active& run, std::vector<RunError> errors) {
  RunRecord& rec = run.record;
  rec.error_count = static_cast<int64_t>(errors.size());
  if (errors.size() > kRecordErrors) {
    // Only while the run is this process's: a process whose lease ran out
    // must not replace the errors of the run's new owner.
    RETURN_NOT_OK(Renew(run));
    RETURN_NOT_OK(runs_.PutErrors(rec.id, errors));
    errors.resize(kRecordErrors);
  }
  rec.errors = std::move(errors);
  return Status::OK();
}

Result<RunRecord> Loader::FailWith(Active& run, const Status& s, const std::string& file,
                                   std::vector<RunError> found) {
  if (!EndsRun(s)) return s;  // resumable: the record stays as it is
  RunRecord& rec = run.record;
  if (run.reached_commit) {
    ASSIGN_OR_RETURN(bool done, Committed(run));
    if (done) return Finish(run, DoneState(rec.counters));
  }
  rec.error_code = std::string(ErrorCodeName(RunErrorCode(s)));
  rec.error = s.message();
  if (!found.empty()) {
    RETURN_NOT_OK(KeepErrors(run, std::move(found)));
  } else if (rec.errors.size() < kRecordErrors) {
    rec.errors.push_back(RunErrorOf(s, file));
    rec.error_count = static_cast<int64_t>(rec.errors.size());
  }
  ForgetWrites(&rec.counters);
  return Finish(run, RunState::kFailed);
}

Result<RunRecord> Loader::Execute(Active& run) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  run.reached_commit = run.resumed;
  if (run.resumed) {
    // The previous owner is gone: settle whatever commit it left half done.
    ASSIGN_OR_RETURN(RecoveryReport settled, ws_->RecoverRun(rec.id));
    if (!settled.failures.empty()) {
      return Status::Unavailable("run " + rec.id + ": a half-done commit could not be settled (" +
                                 settled.failures.front() + "); repeat the command to retry");
    }
    ASSIGN_OR_RETURN(bool done, Committed(run));
    if (done) return Finish(run, DoneState(rec.counters));
  }
  StartValidating(rec, NowMicros());
  // Whatever its end: a validation-only run, failed or not, loads nothing.
  rec.validation_only = req.error_policy == ErrorPolicy::kValidationOnly;
  RETURN_NOT_OK(RenewIfOld(run));  // recorded already when the claim just took it from queued
  if (!rec.cancel_requested_by.empty()) return EndCancelled(run);
  if (options_.claim && req.error_policy != ErrorPolicy::kValidationOnly) {
    if (Status claim = options_.claim(rec); !claim.ok()) return FailWith(run, claim, "");
  }
  std::optional<std::chrono::steady_clock::time_point> first_conflict;
  for (int attempt = 0;; ++attempt) {
    Status conflict;
    Result<RunRecord> done = Attempt(run, &conflict);
    if (conflict.ok()) return done;
    if (!first_conflict) first_conflict = std::chrono::steady_clock::now();
    if (attempt >= kConflictRetries &&
        std::chrono::steady_clock::now() - *first_conflict >= kConflictBudget) {
      return FailWith(run, conflict, "");
    }
    // The table moved, or a write to it is in progress: back off, then
    // validate and plan against it again. Jittered (a quarter of the cap at
    // least): writers that collided once must not retry in step (several
    // processes appending to one table collide often).
    Backoff{100'000, 2'000'000, 0.25}.Sleep(attempt);
    rec.state = RunState::kValidating;
    RETURN_NOT_OK(Renew(run));
  }
}

Result<const TableState*> Loader::Target(Active& run, const Snapshot& snap) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  const TableState* t = rec.table_sid != 0 ? snap.FindSid(rec.table_sid) : snap.Find(req.table);
  if (t == nullptr) {
    return Status::NotFound("table '" + req.table + "' does not exist on branch '" +
                            (req.branch.empty() ? "main" : req.branch) + "'" +
                            (rec.table_sid ? " (it was dropped)" : ""));
  }
  rec.table_sid = t->def.sid;
  rec.table = t->def.name;
  if (req.expected_table_version && t->head.table_version != *req.expected_table_version) {
    return Status::FailedPrecondition("table '" + t->def.name + "' is at version " +
                                      std::to_string(t->head.table_version) +
                                      ", not the expected " +
                                      std::to_string(*req.expected_table_version) +
                                      " (expectedTableVersion): it moved; nothing was written")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  RETURN_NOT_OK(CheckRequest(*ws_, req, snap, *t));
  return t;
}

StagerOptions Loader::StagingOptions(Active& run, int64_t* next_renew) {
  StagerOptions so;
  so.batch_rows = options_.batch_rows;
  so.retain_bytes = options_.retain_bytes;
  so.key_memory_bytes = options_.key_memory_bytes;
  so.scratch_dir = options_.scratch_dir;
  so.key_map_bytes = options_.key_map_bytes;
  so.collide_content_hashes = options_.collide_content_hashes;
  so.stage = run.request.error_policy != ErrorPolicy::kValidationOnly;
  so.open_input = [this, &run](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
    if (file != kRecordInputFile) return options_.open_input(file);
    return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(run.record.input_text));
  };
  so.on_batch = [this, &run, next_renew](const RunCounters& counters) -> Status {
    run.record.counters = counters;
    if (options_.on_progress) options_.on_progress(run.record);
    const int64_t now = NowMicros();
    if (now >= *next_renew) {
      *next_renew = now + options_.lease_micros / 3;
      RETURN_NOT_OK(Renew(run));
    }
    const bool look = now >= run.next_cancel_check;
    if (look) run.next_cancel_check = now + options_.cancel_check_micros;
    ASSIGN_OR_RETURN(bool asked, CancelAsked(run, look));
    if (!asked) return Status::OK();
    run.cancelling = true;
    return Status::Aborted("run " + run.record.id + " cancelled by " +
                           run.record.cancel_requested_by);
  };
  return so;
}

Result<RunRecord> Loader::Attempt(Active& run, Status* conflict) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  // --- validate: the whole input, typed and checked, before any mutation ---
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(req.branch));
  Result<const TableState*> target = Target(run, snap);
  if (!target.ok()) return FailWith(run, target.status(), "");
  const TableState& t = **target;
  if (!rec.cancel_requested_by.empty()) return EndCancelled(run);  // asked during a conflict's wait
  ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t.def.name));
  int64_t next_renew = NowMicros() + options_.lease_micros / 3;
  run.next_cancel_check = NowMicros() + options_.cancel_check_micros;
  StageFailure failure;
  const StagerOptions options = StagingOptions(run, &next_renew);
  Result<StagedInput> staged = req.mode == LoadMode::kDelete
                                   ? PlanDeletes(req, t, data, options, &failure)
                                   : StageInput(req, t, data, options, &failure);
  if (!staged.ok()) {
    rec.counters = failure.counters;
    if (run.cancelling) return EndCancelled(run);
    return FailWith(run, staged.status(), failure.file, std::move(failure.errors));
  }
  rec.counters = staged->counters;
  rec.validated_micros = NowMicros();
  auto discard = [&] {
    NoteCleanupFailure("removing a run's unpublished fragments", data.DeleteStaged(staged->staged));
  };
  Status after_validate = KeepErrors(run, std::move(staged->rejected));
  if (after_validate.ok()) after_validate = Fail(failpoint::kRunAfterValidate);
  if (!after_validate.ok()) {
    discard();
    return after_validate;
  }
  if (req.error_policy == ErrorPolicy::kValidationOnly) {
    rec.validation_only = true;
    return Finish(run, DoneState(rec.counters));
  }
  // --- commit: recorded as committing only for a run whose validation took
  // a third of its lease; a small run goes from validating to its end in one
  // write. The last look for a cancel request comes before it. ---
  rec.state = RunState::kCommitting;
  Status committing = RenewIfOld(run);
  if (committing.ok()) committing = Fail(failpoint::kRunBeforeCommit);
  Result<bool> cancel = committing.ok() ? CancelAsked(run, true) : Result<bool>(false);
  if (!committing.ok() || !cancel.ok() || *cancel) {
    discard();
    if (!committing.ok()) return committing;
    if (!cancel.ok()) return cancel.status();
    return EndCancelled(run);
  }
  const bool nothing = req.mode == LoadMode::kDelete
                           ? staged->counters.deleted == 0
                           : staged->staged.empty() && req.mode != LoadMode::kReplace;
  if (nothing) {
    rec.table_version = t.head.table_version;
    return Finish(run, DoneState(rec.counters));  // nothing to write (empty, or all unchanged)
  }
  return Commit(run, t, data, *staged, conflict);
}

Result<RunRecord> Loader::Commit(Active& run, const TableState& t, Dataset& data,
                                 const StagedInput& staged, Status* conflict) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  WriteRequest w = CommitRequest(req, rec, t, staged);
  w.journal_floor = run.journal_floor;
  auto discard = [&] {
    NoteCleanupFailure("removing a run's unpublished fragments", data.DeleteStaged(staged.staged));
  };
  run.reached_commit = true;
  // gc removes unreferenced files past its grace period: never commit a
  // reference to a staged file that is gone (the run stays resumable).
  for (const Fragment& f : staged.staged) {
    Status there = data.StagedExists(f);
    if (!there.ok()) {
      return Status::Unavailable("run " + rec.id + ": a staged file is gone (" + there.message() +
                                 "; was gc run with a short grace?); repeat the command to "
                                 "stage the input again");
    }
  }
  const int64_t commit_start = NowMicros();
  Result<WriteResult> written = [&] {
    LeaseKeeper keeper([&] { return Renew(run); }, options_.lease_micros / 3);
    return options_.commit ? options_.commit(w) : ws_->Write(w);
  }();
  LOAM_LOG_DEBUG("load phase 'commit': {} ms", (NowMicros() - commit_start) / 1000);
  if (written.ok()) {
    if (req.mode == LoadMode::kUpsert) {  // as committed (planned again if it had to be)
      rec.counters.inserted = written->merge.inserted;
      rec.counters.updated = written->merge.updated;
    }
    rec.manifest_version = written->manifest_version;
    rec.commit_id = written->commit_id;
    rec.table_version = written->table_version;
    return Finish(run, DoneState(rec.counters));
  }
  const Status& s = written.status();
  if (s.Is(ErrorCode::kRunAlreadyCommitted)) {
    // Committed by an earlier attempt of this run whose answer was lost.
    discard();
    rec.state = RunState::kCommitting;
    run.resumed = true;
    return Execute(run);
  }
  if (!EndsRun(s)) return s;  // outcome unknown: resume decides (the staged files may be in use)
  discard();
  if (s.Is(ErrorCode::kConflict)) {
    *conflict = s;
    return s;
  }
  return FailWith(run, s, "");
}

}  // namespace loam::ingest
