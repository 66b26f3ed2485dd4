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
#include "ingest/loader_internal.h"
#include "ingest/stager.h"

namespace loam::ingest {

namespace loader_internal {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void StartValidating(RunRecord& r, int64_t now_micros) {
  r.state = RunState::kValidating;
  r.started_micros = now_micros;
  r.counters = {};
  r.errors.clear();
  r.error_count = 0;
}

}  // namespace loader_internal

using loader_internal::NowMicros;
using loader_internal::StartValidating;

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

namespace {

Status TakenOver(const std::string& run_id) {
  return Status::Aborted("run " + run_id +
                         " was taken over by another process (its lease expired); this process "
                         "stops working on it");
}

}  // namespace

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
    Result<bool> adopted = AdoptCancel(run);
    if (!adopted.ok()) return adopted.status();
    if (*adopted) s = runs_.Update(run.record, &run.etag);
  }
  if (s.IsAborted()) {
    return TakenOver(run.record.id);
  }
  if (s.ok() && options_.on_progress) options_.on_progress(run.record);
  return s;
}

Result<bool> Loader::AdoptCancel(Active& run) {
  RunRecord& r = run.record;
  if (!r.cancel_requested_by.empty()) return false;  // a request comes once
  std::string etag;
  Result<RunRecord> stored = runs_.Get(r.id, &etag);
  if (stored.status().IsNotFound()) return false;
  RETURN_NOT_OK(stored.status());
  if (stored->lease_owner != owner_ || IsTerminal(stored->state) ||
      stored->cancel_requested_by.empty()) {
    return false;
  }
  r.cancel_requested_by = stored->cancel_requested_by;
  r.cancel_requested_micros = stored->cancel_requested_micros;
  run.etag = std::move(etag);
  return true;
}

Result<bool> Loader::CancelAsked(Active& run, bool look) {
  RunRecord& r = run.record;
  if (!r.cancel_requested_by.empty()) return true;
  if (!look) return false;
  ASSIGN_OR_RETURN(std::string etag, runs_.Etag(r.id));
  if (etag == run.etag) return false;
  ASSIGN_OR_RETURN(bool adopted, AdoptCancel(run));
  if (!adopted) return TakenOver(r.id);
  return true;
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

// What a run request must be before a run of it exists.
Status CheckRunnable(const RunRequest& request, bool skip_rows_enabled) {
  if (request.error_policy == ErrorPolicy::kSkipRows && !skip_rows_enabled) {
    return Status::PermissionDenied(
        "the skipRows error policy is behind a feature flag that is off "
        "(LOAM_FEATURE_SKIP_ROWS); use failRun, or validationOnly to check the input without "
        "loading it");
  }
  if (request.mode == LoadMode::kDelete) {
    if (request.where.empty() == request.files.empty()) {
      return Status::InvalidArgument(
          "a delete names its rows by filters or by keys files (one of the two)");
    }
    if (request.error_policy == ErrorPolicy::kSkipRows) {
      return Status::InvalidArgument("a delete is all or nothing: skipRows is not for deletes");
    }
  } else if (request.files.empty()) {
    return Status::InvalidArgument("a load needs at least one input file");
  } else if (!request.where.empty()) {
    return Status::InvalidArgument("filters (where) are for deletes only");
  }
  if (request.policy.additive) {
    return Status::PermissionDenied(
        "additive schema mode runs only through a service pipeline that an admin configured on a "
        "table that allows it; declare the columns with 'loam table' commands instead");
  }
  return Status::OK();
}

}  // namespace

Result<RunRecord> Loader::Run(const RunRequest& request, bool* reused) {
  if (reused) *reused = false;
  RETURN_NOT_OK(CheckRunnable(request, options_.skip_rows_enabled));
  Active run;
  run.request = request;
  const std::string text = request.ToJson();
  // What the record keeps must read back (a listing, a resume, the
  // service's run views): a request whose record could not is refused
  // before the run exists.
  RETURN_NOT_OK(RunRequest::FromJson(text).status());
  // Taken just before this call mints a run id, which exists nowhere else
  // yet: a run is executed only by the process that created its record or
  // one that took it over from the record, so its commit comes after this
  // floor (0 when it cannot be read: the look-ups then read everything).
  auto floor = [&] { return ws_->manifest().JournalFloor(request.branch).value_or(0); };
  if (!request.idempotency_key.empty()) {
    ASSIGN_OR_RETURN(std::optional<std::string> existing, runs_.FindKey(request.idempotency_key));
    if (!existing) {
      run.journal_floor = floor();
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
    run.journal_floor = floor();
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

}  // namespace loam::ingest
