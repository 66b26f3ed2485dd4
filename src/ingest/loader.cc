#include "ingest/loader.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "common/backoff.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "ingest/input_source.h"
#include "ingest/stager.h"

namespace loam::ingest {

// A run retries a commit that lost to a concurrent change at least this many
// times, and for as long as the conflicts last less than the budget: writers
// sharing a table under load lose often, and a valid run must not fail for it.
constexpr int kConflictRetries = 8;
constexpr auto kConflictBudget = std::chrono::seconds(120);
namespace {

using json = nlohmann::json;

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

WriteMode ToWriteMode(LoadMode m) {
  switch (m) {
    case LoadMode::kAppend:
      return WriteMode::kAppend;
    case LoadMode::kUpsert:
      return WriteMode::kUpsert;
    case LoadMode::kReplace:
      return WriteMode::kReplace;
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

}  // namespace

Result<std::unique_ptr<ByteSource>> OpenLocalFile(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path p = std::filesystem::absolute(path, ec);
  if (ec || !std::filesystem::is_regular_file(p, ec)) {
    return Status::NotFound("input file '" + path + "' does not exist or is not a regular file");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> dir, OpenObjectStore(p.parent_path().string()));
  ASSIGN_OR_RETURN(std::unique_ptr<ObjectByteSource> src,
                   ObjectByteSource::Open(std::move(dir), p.filename().string()));
  return std::unique_ptr<ByteSource>(std::move(src));
}

struct Loader::Active {
  RunRequest request;
  RunRecord record;
  std::string etag;
  bool resumed = false;
};

Loader::Loader(std::shared_ptr<WorkspaceEngine> workspace, LoaderOptions options)
    : ws_(std::move(workspace)),
      options_(std::move(options)),
      runs_(ws_->store(), ws_->root()),
      owner_(NewUlidString()) {
  if (!options_.open_input) options_.open_input = OpenLocalFile;
}

Status Loader::Fail(std::string_view point) const {
  return options_.failpoint ? options_.failpoint(point) : Status::OK();
}

Status Loader::Save(Active& run) {
  Status s = runs_.Update(run.record, &run.etag);
  if (s.IsAborted()) {
    return Status::Aborted("run " + run.record.id +
                           " was taken over by another process (its lease expired); this process "
                           "stops working on it");
  }
  if (s.ok() && options_.on_progress) options_.on_progress(run.record);
  return s;
}

Status Loader::Renew(Active& run) {
  run.record.lease_owner = owner_;
  run.record.lease_expires_micros = NowMicros() + options_.lease_micros;
  return Save(run);
}

Status Loader::RenewIfOld(Active& run) {
  const RunRecord& r = run.record;
  if (r.lease_owner == owner_ &&
      r.lease_expires_micros - NowMicros() > options_.lease_micros * 2 / 3) {
    if (options_.on_progress) options_.on_progress(r);
    return Status::OK();
  }
  return Renew(run);
}

namespace {

// A run taken up from `queued` is recorded as validating by the same write
// that claims it.
void StartValidating(RunRecord& r, int64_t now_micros) {
  r.state = RunState::kValidating;
  r.started_micros = now_micros;
  r.counters = {};
  r.errors.clear();
}

}  // namespace

Result<RunRecord> Loader::Run(const RunRequest& request, bool* reused) {
  if (reused) *reused = false;
  if (request.error_policy == ErrorPolicy::kSkipRows && !options_.skip_rows_enabled) {
    return Status::PermissionDenied(
        "the skipRows error policy is behind a feature flag that is off "
        "(LOAM_FEATURE_SKIP_ROWS); use failRun, or validationOnly to check the input without "
        "loading it");
  }
  if (request.files.empty()) return Status::InvalidArgument("a load needs at least one input file");
  if (request.policy.additive) {
    return Status::PermissionDenied(
        "additive schema mode runs only through a service pipeline that an admin configured on a "
        "table that allows it; declare the columns with 'loam table' commands instead");
  }
  Active run;
  run.request = request;
  const std::string text = request.ToJson();
  if (!request.idempotency_key.empty()) {
    ASSIGN_OR_RETURN(std::optional<std::string> existing, runs_.FindKey(request.idempotency_key));
    if (!existing) {
      const std::string id = NewUlidString();
      Status bound = runs_.BindKey(request.idempotency_key, id);
      if (bound.IsAlreadyExists()) return Run(request, reused);  // lost a race: look again
      RETURN_NOT_OK(bound);
      existing = id;
    }
    Result<RunRecord> rec = runs_.Get(*existing, &run.etag);
    if (rec.ok()) {
      if (rec->request != text) {
        return Status::FailedPrecondition(
                   "idempotency key '" + request.idempotency_key + "' already belongs to run " +
                   rec->id +
                   " with a different request; use a new key, or repeat that run's exact request")
            .WithErrorCode(ErrorCode::kIdempotencyKeyReused);
      }
      if (IsTerminal(rec->state)) {
        if (reused) *reused = true;
        return *rec;
      }
      if (rec->lease_owner != owner_ && rec->lease_expires_micros > NowMicros()) {
        return Status::FailedPrecondition(
                   "run " + rec->id + " is in progress in another process (its lease runs " +
                   std::to_string((rec->lease_expires_micros - NowMicros()) / 1000) +
                   " ms more); wait, then repeat the command to resume it if that process died")
            .WithErrorCode(ErrorCode::kRequestInFlight);
      }
      run.record = std::move(*rec);
      run.resumed = true;
      RETURN_NOT_OK(Renew(run));  // CAS: exactly one process takes over
    } else if (rec.status().IsNotFound()) {
      run.record.id = *existing;  // bound, but the record was never written
    } else {
      return rec.status();
    }
  } else {
    run.record.id = NewUlidString();
  }
  if (!run.resumed) {
    run.record.request = text;
    run.record.table = request.table;
    run.record.created_micros = NowMicros();
    run.record.lease_owner = owner_;
    run.record.lease_expires_micros = NowMicros() + options_.lease_micros;
    StartValidating(run.record, NowMicros());
    Status created = runs_.Create(run.record, &run.etag);
    if (created.IsAlreadyExists()) return Run(request, reused);  // another process created it
    RETURN_NOT_OK(created);
    if (options_.on_progress) options_.on_progress(run.record);
  }
  return Execute(run);
}

Result<RunRecord> Loader::Resume(const std::string& run_id) {
  Active run;
  ASSIGN_OR_RETURN(run.record, runs_.Get(run_id, &run.etag));
  if (IsTerminal(run.record.state)) return run.record;
  if (run.record.lease_owner != owner_ && run.record.lease_expires_micros > NowMicros()) {
    return Status::FailedPrecondition("run " + run_id + " is held by a live process")
        .WithErrorCode(ErrorCode::kRequestInFlight)
        .WithDetail("run", run_id);
  }
  ASSIGN_OR_RETURN(run.request, RunRequest::FromJson(run.record.request));
  if (run.request.error_policy == ErrorPolicy::kSkipRows && !options_.skip_rows_enabled) {
    return Status::PermissionDenied("run " + run_id +
                                    " uses skipRows, whose feature flag is off in this process");
  }
  // A run past `queued` may have reached its commit: resume settles that first.
  run.resumed = run.record.state != RunState::kQueued;
  if (!run.resumed) StartValidating(run.record, NowMicros());
  RETURN_NOT_OK(Renew(run));  // CAS: exactly one process takes it
  Result<RunRecord> done = Execute(run);
  if (done.ok()) return done;
  return AfterFailedAttempt(run, done.status());
}

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

Result<RunRecord> Loader::Execute(Active& run) {
  RunRecord& rec = run.record;
  const RunRequest& req = run.request;
  auto finish = [&](RunState state) -> Result<RunRecord> {
    // Before the hook acts on the run's behalf, this process must own it for
    // at least two thirds of a lease: renewed unless it just was.
    if (options_.before_terminal) RETURN_NOT_OK(RenewIfOld(run));
    rec.state = state;
    rec.finished_micros = NowMicros();
    rec.lease_expires_micros = 0;
    if (options_.before_terminal) RETURN_NOT_OK(options_.before_terminal(rec));
    RETURN_NOT_OK(Save(run));
    return rec;
  };
  // A run that reached its commit may have committed (an answer lost, or an
  // owner that lost its lease but carried on): the journal decides.
  auto committed = [&]() -> Result<bool> {
    ASSIGN_OR_RETURN(auto row, ws_->manifest().FindJournalRow(req.branch, RunCommitId(rec.id)));
    if (!row) return false;
    json meta = ParseJson(row->metadata);
    rec.commit_id = meta.is_object() ? StringAt(meta, "commit") : "";
    rec.manifest_version = meta.is_object()
                               ? static_cast<uint64_t>(std::max<int64_t>(
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
  };
  auto finish_committed = [&]() {
    return finish(rec.counters.rejected > 0 ? RunState::kPartial : RunState::kSucceeded);
  };
  bool reached_commit = run.resumed;
  auto fail_with = [&](const Status& s, const std::string& file) -> Result<RunRecord> {
    if (!EndsRun(s)) return s;  // resumable: the record stays as it is
    if (reached_commit) {
      ASSIGN_OR_RETURN(bool done, committed());
      if (done) return finish_committed();
    }
    rec.error_code = std::string(ErrorCodeName(RunErrorCode(s)));
    rec.error = s.message();
    if (rec.errors.size() < 10) rec.errors.push_back({file, s.message()});
    ForgetWrites(&rec.counters);
    return finish(RunState::kFailed);
  };

  if (run.resumed) {
    // The previous owner is gone: settle whatever commit it left half done.
    ASSIGN_OR_RETURN(RecoveryReport settled, ws_->RecoverRun(rec.id));
    if (!settled.failures.empty()) {
      return Status::Unavailable("run " + rec.id + ": a half-done commit could not be settled (" +
                                 settled.failures.front() + "); repeat the command to retry");
    }
    ASSIGN_OR_RETURN(bool done, committed());
    if (done) return finish_committed();
  }
  StartValidating(rec, NowMicros());
  RETURN_NOT_OK(RenewIfOld(run));  // recorded already when the claim just took it from queued
  if (options_.claim && req.error_policy != ErrorPolicy::kValidationOnly) {
    if (Status claim = options_.claim(rec); !claim.ok()) return fail_with(claim, "");
  }

  std::optional<std::chrono::steady_clock::time_point> first_conflict;
  for (int attempt = 0;; ++attempt) {
    // --- validate: the whole input, typed and checked, before any mutation ---
    ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(req.branch));
    const TableState* t = rec.table_sid != 0 ? snap.FindSid(rec.table_sid) : snap.Find(req.table);
    if (t == nullptr) {
      return fail_with(Status::NotFound("table '" + req.table + "' does not exist on branch '" +
                                        (req.branch.empty() ? "main" : req.branch) + "'" +
                                        (rec.table_sid ? " (it was dropped)" : "")),
                       "");
    }
    rec.table_sid = t->def.sid;
    rec.table = t->def.name;
    if (req.expected_table_version && t->head.table_version != *req.expected_table_version) {
      return fail_with(
          Status::FailedPrecondition("table '" + t->def.name + "' is at version " +
                                     std::to_string(t->head.table_version) + ", not the expected " +
                                     std::to_string(*req.expected_table_version) +
                                     " (expectedTableVersion): it moved; nothing was written")
              .WithErrorCode(ErrorCode::kPreconditionFailed),
          "");
    }
    Status ready = CheckRequest(*ws_, req, snap, *t);
    if (!ready.ok()) return fail_with(ready, "");
    ASSIGN_OR_RETURN(Dataset data, ws_->OpenTable(snap, t->def.name));

    int64_t next_renew = NowMicros() + options_.lease_micros / 3;
    StagerOptions so;
    so.batch_rows = options_.batch_rows;
    so.retain_bytes = options_.retain_bytes;
    so.key_memory_bytes = options_.key_memory_bytes;
    so.scratch_dir = options_.scratch_dir;
    so.key_map_bytes = options_.key_map_bytes;
    so.collide_content_hashes = options_.collide_content_hashes;
    so.stage = req.error_policy != ErrorPolicy::kValidationOnly;
    so.open_input = [&](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      if (file != kRecordInputFile) return options_.open_input(file);
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(rec.input_text));
    };
    so.on_batch = [&](const RunCounters& counters) -> Status {
      rec.counters = counters;
      if (options_.on_progress) options_.on_progress(rec);
      if (NowMicros() < next_renew) return Status::OK();
      next_renew = NowMicros() + options_.lease_micros / 3;
      return Renew(run);
    };
    std::string failed_file;
    Result<StagedInput> staged = StageInput(req, *t, data, so, &failed_file);
    if (!staged.ok()) return fail_with(staged.status(), failed_file);
    rec.counters = staged->counters;
    rec.errors = staged->rejected;
    rec.validated_micros = NowMicros();
    // skipRows: a run that left rows out ends partial.
    const RunState done = staged->counters.rejected > 0 ? RunState::kPartial : RunState::kSucceeded;
    auto discard = [&] {
      NoteCleanupFailure("removing a run's unpublished fragments",
                         data.DeleteStaged(staged->staged));
    };
    Status after_validate = Fail(failpoint::kRunAfterValidate);
    if (!after_validate.ok()) {
      discard();
      return after_validate;
    }
    if (req.error_policy == ErrorPolicy::kValidationOnly) {
      rec.validation_only = true;
      return finish(done);
    }

    // --- commit: one atomic write, recorded as run_commit:<id> ---
    // Recorded only for a run whose validation took a third of its lease:
    // a small run goes from validating to its end in one write.
    rec.state = RunState::kCommitting;
    Status committing = RenewIfOld(run);
    if (committing.ok()) committing = Fail(failpoint::kRunBeforeCommit);
    if (!committing.ok()) {
      discard();
      return committing;
    }
    if (staged->staged.empty() && req.mode != LoadMode::kReplace) {
      rec.table_version = t->head.table_version;
      return finish(done);  // nothing to write (empty input, or all unchanged)
    }
    WriteRequest w;
    w.table = t->def.name;
    w.table_sid = t->def.sid;
    w.branch = req.branch;
    w.mode = ToWriteMode(req.mode);
    w.staged_rows = true;
    w.staged = staged->staged;
    w.keys = req.keys;
    if (req.policy.additive) {
      w.add_columns = req.policy.NewColumns(t->def.schema);
      w.additive_admin = req.additive_admin;
    }
    if (staged->plan) w.merge_plan = &*staged->plan;
    // An upsert's plan was made on this version, and a keyed append's key
    // checks: a later version takes them only when no commit since touched
    // one of their keys (CarryMergePlan, KeysStillAbsent).
    if (req.mode == LoadMode::kUpsert || (req.mode == LoadMode::kAppend && !t->def.keys.empty()) ||
        req.expected_table_version) {
      w.expected_version = t->head.table_version;
    }
    w.expected_for_keys = (req.mode == LoadMode::kAppend || req.mode == LoadMode::kUpsert) &&
                          !req.expected_table_version;
    w.expected_schema_version = t->def.schema_version;
    w.run_id = rec.id;
    w.principal = req.principal;
    reached_commit = true;
    // gc removes unreferenced files past its grace period: never commit a
    // reference to a staged file that is gone (the run stays resumable).
    for (const Fragment& f : staged->staged) {
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
      return finish(done);
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
    if (s.Is(ErrorCode::kConflict) && !first_conflict) {
      first_conflict = std::chrono::steady_clock::now();
    }
    if (s.Is(ErrorCode::kConflict) &&
        (attempt < kConflictRetries ||
         std::chrono::steady_clock::now() - *first_conflict < kConflictBudget)) {
      // The table moved, or a write to it is in progress: back off, then
      // validate and plan against it again. Jittered (a quarter of the cap
      // at least): writers that collided once must not retry in step (several processes appending
      // to one table collide often).
      Backoff{100'000, 2'000'000, 0.25}.Sleep(attempt);
      rec.state = RunState::kValidating;
      RETURN_NOT_OK(Renew(run));
      continue;
    }
    return fail_with(s, "");
  }
}

}  // namespace loam::ingest
