// Service: workers draining the shared queue, the loader hooks that keep the
// source identity and cleanup durable, and the staging and record sweeps
// (the maintenance threads that run them: service_maintenance.cc).
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "common/status_macros.h"
#include "service/service.h"
#include "service/staging.h"

namespace loam::service {
namespace {

using ingest::RunRecord;
using ingest::RunState;

int64_t WallMicros() { return Clock::System()->NowMicros(); }

// The staging keys of a service run's inputs: every file but the data its
// record carries, which goes with the record's terminal state.
Result<std::vector<std::string>> StagedInputs(const RunRecord& rec) {
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(rec.request));
  std::erase(req.files, std::string(ingest::kRecordInputFile));
  return std::move(req.files);
}

}  // namespace

void Service::Wake() {
  {
    std::lock_guard lock(mu_);
    ++wakeups_;
  }
  wake_.notify_all();
}

void Service::StartWorkers() {
  std::lock_guard lock(mu_);
  if (!threads_.empty()) return;
  stopping_ = false;
  for (int i = 0; i < options_.workers; ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(i, false); });
  }
  for (int i = 0; i < options_.small_run_workers; ++i) {
    threads_.emplace_back([this, i] { WorkerLoop(options_.workers + i, true); });
  }
  threads_.emplace_back([this] { MaintenanceLoop(); });
  if (options_.retention_interval_micros > 0) threads_.emplace_back([this] { RetentionLoop(); });
}

void Service::Stop() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  wake_.notify_all();
  for (std::thread& t : threads) t.join();
}

Status Service::WaitForEmptyQueue(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    uint64_t seen = 0;
    {
      std::lock_guard lock(mu_);
      seen = wakeups_;
    }
    ASSIGN_OR_RETURN(std::vector<QueueEntry> entries, queue_.List());
    if (entries.empty()) return Status::OK();
    std::unique_lock lock(mu_);
    const auto poll =
        std::chrono::steady_clock::now() + std::chrono::microseconds(options_.poll_max_micros);
    wake_.wait_until(lock, std::min(deadline, poll), [&] { return wakeups_ != seen; });
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Unavailable("the queue still holds " + std::to_string(entries.size()) +
                                 " runs after " + std::to_string(timeout.count()) + " ms");
    }
  }
}

void Service::WorkerLoop(int index, bool small_only) {
  int64_t poll = options_.poll_min_micros;
  for (;;) {
    uint64_t seen = 0;
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      seen = wakeups_;
    }
    Result<bool> worked = RunWorkerOnce(small_only);
    if (!worked.ok()) LOAM_LOG_WARN("worker {}: {}", index, worked.status().ToString());
    if (worked.ok() && *worked) {
      poll = options_.poll_min_micros;
      continue;
    }
    std::unique_lock lock(mu_);
    const bool woken = wake_.wait_for(lock, std::chrono::microseconds(poll),
                                      [&] { return stopping_ || wakeups_ != seen; });
    poll = woken ? options_.poll_min_micros : std::min(poll * 2, options_.poll_max_micros);
  }
}

Result<CleanupReport> Service::RunCleanerOnce() {
  return cleaner_.RunOnce([this](const std::string& run_id) -> Result<bool> {
    Result<RunRecord> run = loader_->runs().Get(run_id);
    if (run.status().IsNotFound()) return true;
    RETURN_NOT_OK(run.status());
    return ingest::IsTerminal(run->state);
  });
}

// The process's workers share one listing of the queue, oldest first, and
// take its entries in turn: a run costs no LIST of the whole queue (a deep
// backlog would make that quadratic). The queue is listed again when the
// listing is used up or older than worker_listing_micros.
// With a small-run lane, the general workers take the oldest large run
// first: small runs have the lane, and a large run never waits behind a
// backlog of small ones.
std::optional<QueueEntry> Service::TakeQueued(bool small_only) {
  const auto small = [&](const QueueEntry& e) { return e.bytes <= options_.small_run_bytes; };
  auto it = queued_.begin();
  if (small_only) {
    it = std::find_if(queued_.begin(), queued_.end(), small);
  } else if (options_.small_run_workers > 0) {
    it = std::find_if_not(queued_.begin(), queued_.end(), small);
    if (it == queued_.end()) it = queued_.begin();
  }
  if (it == queued_.end()) return std::nullopt;
  QueueEntry e = std::move(*it);
  queued_.erase(it);
  return e;
}

Result<std::optional<QueueEntry>> Service::NextQueueEntry(bool small_only, bool* listed) {
  if (*listed) {  // a call that listed works through its listing, however long that takes
    std::lock_guard lock(mu_);
    return TakeQueued(small_only);
  }
  const auto take_fresh = [&]() -> std::optional<QueueEntry> {
    std::lock_guard lock(mu_);
    if (WallMicros() - listed_at_micros_ >= options_.worker_listing_micros) return std::nullopt;
    return TakeQueued(small_only);
  };
  if (std::optional<QueueEntry> e = take_fresh()) return e;
  std::lock_guard listing(list_mu_);  // one LIST at a time; the others wait for it
  if (std::optional<QueueEntry> e = take_fresh()) return e;  // listed while this one waited
  const uint64_t since = ListingStarts();
  const int64_t listed_at = WallMicros();
  ASSIGN_OR_RETURN(std::vector<QueueEntry> entries, queue_.List());
  *listed = true;
  RememberLoad(entries, since);
  ForgetLeasesOutside(entries);
  std::lock_guard lock(mu_);
  queued_.assign(std::make_move_iterator(entries.begin()), std::make_move_iterator(entries.end()));
  listed_at_micros_ = listed_at;
  return TakeQueued(small_only);
}

Result<bool> Service::RunWorkerOnce(bool small_only) {
  // Trouble with one run never holds up the others: the first error is
  // returned only when no run was finished. A call that found nothing to do
  // has looked at a listing it made itself (the shared one may predate a
  // submission).
  Status first_error;
  for (bool listed = false;;) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return false;
    }
    ASSIGN_OR_RETURN(std::optional<QueueEntry> next, NextQueueEntry(small_only, &listed));
    if (!next) break;
    const QueueEntry& e = *next;
    if (!e.pipeline_id.empty()) {
      ASSIGN_OR_RETURN(bool paused, PausedForWorkers(e.pipeline_id));
      if (paused) continue;  // its entries wait, unread (docs/service.md, "Pipelines")
    }
    {
      std::lock_guard lock(mu_);
      if (active_.count(e.run_id)) continue;
      auto held = leased_until_.find(e.run_id);
      if (held != leased_until_.end() && held->second > WallMicros()) continue;
    }
    ASSIGN_OR_RETURN(std::optional<bool> worked, WorkOn(e, &first_error));
    if (worked) return *worked;
  }
  if (!first_error.ok()) return first_error;
  return false;
}

// One queue entry: nullopt when the caller should look at the next one.
Result<std::optional<bool>> Service::WorkOn(const QueueEntry& e, Status* first_error) {
  Result<RunRecord> rec = loader_->runs().Get(e.run_id);
  if (rec.status().IsNotFound()) {
    // Its submission stopped before the run record: a retry of that
    // request creates it (and the entry again) until the entry is this old.
    ASSIGN_OR_RETURN(bool stands, ClaimStands(e.run_id));
    if (!stands) RETURN_NOT_OK(queue_.Remove(e));
    return std::optional<bool>();
  }
  RETURN_NOT_OK(rec.status());
  if (ingest::IsTerminal(rec->state)) {
    // Its cleanup entry normally exists already; make sure before the
    // queue entry, the last trace of the run, goes.
    RETURN_NOT_OK(BeforeTerminal(*rec));
    RETURN_NOT_OK(queue_.Remove(e));
    return std::optional<bool>();
  }
  if (rec->lease_expires_micros > WallMicros()) {  // a live worker has it
    std::lock_guard lock(mu_);
    leased_until_[e.run_id] = rec->lease_expires_micros;
    return std::optional<bool>();
  }
  {
    std::lock_guard lock(mu_);
    if (!active_.insert(e.run_id).second) return std::optional<bool>();
  }
  Result<RunRecord> done = loader_->Resume(e.run_id);
  {
    std::lock_guard lock(mu_);
    active_.erase(e.run_id);
  }
  if (done.status().IsAborted() || done.status().Is(ErrorCode::kRequestInFlight)) {
    return std::optional<bool>();
  }
  if (!done.ok()) {
    LOAM_LOG_WARN("run {}: {}", e.run_id, done.status().ToString());
    if (first_error->ok()) *first_error = done.status();
    return std::optional<bool>();
  }
  if (done->started_micros > 0 && done->finished_micros > done->started_micros) {
    admission_.RecordRun(done->input_bytes, done->finished_micros - done->started_micros);
  }
  if (options_.on_run_finished) options_.on_run_finished(ViewOf(*done));
  NoteCommit(*done);
  RETURN_NOT_OK(Fail(failpoint::kWorkerAfterTerminal));
  RETURN_NOT_OK(CleanUpInputs(*done));
  RETURN_NOT_OK(queue_.Remove(e));
  Wake();  // the cleaner, when the inputs went to it
  return std::optional<bool>(true);
}

void Service::ForgetLeasesOutside(const std::vector<QueueEntry>& entries) {
  std::set<std::string_view> listed;
  for (const QueueEntry& e : entries) listed.insert(e.run_id);
  std::lock_guard lock(mu_);
  std::erase_if(leased_until_, [&](const auto& held) { return !listed.count(held.first); });
}

Status Service::ClaimSource(const RunRecord& rec) {
  if (rec.pipeline_id.empty() || rec.source_id.empty()) return Status::OK();
  const std::string& digest = rec.source_sha256;  // known: submission requires it
  if (digest.empty()) return Status::Internal("run " + rec.id + " has a source without a digest");
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string etag;
    ASSIGN_OR_RETURN(std::optional<SourceRecord> src,
                     requests_.FindSource(rec.pipeline_id, rec.source_id, digest, &etag));
    SourceRecord mine{rec.source_id, digest, rec.id, false, options_.clock->NowMicros(), 0};
    if (!src) {
      Status put = requests_.PutSource(rec.pipeline_id, mine);
      if (put.IsAlreadyExists()) continue;
      return put;
    }
    if (src->run_id == rec.id) return Status::OK();
    if (src->loaded) {
      if (rec.source_reload) return Status::OK();  // recorded again when it succeeds
      return Status::FailedPrecondition("source '" + rec.source_id +
                                        "' with these bytes was already loaded by run " +
                                        src->run_id)
          .WithErrorCode(ErrorCode::kSourceAlreadyLoaded)
          .WithDetail("run", src->run_id);
    }
    // Claimed by another run: the claim stands while that run can still
    // commit, and the first claim wins. This run fails now, naming the
    // winner (a poll would hold it for the winner's whole load).
    Result<RunRecord> other = loader_->runs().Get(src->run_id);
    if (other.ok() && !ingest::IsTerminal(other->state)) {
      return Status::FailedPrecondition("source '" + rec.source_id +
                                        "' with these bytes is being loaded by run " + src->run_id +
                                        "; if that run fails, submit again")
          .WithErrorCode(ErrorCode::kSourceAlreadyLoaded)
          .WithDetail("run", src->run_id);
    }
    if (!other.ok() && !other.status().IsNotFound()) return other.status();
    Status put = requests_.PutSource(rec.pipeline_id, mine, &etag);
    if (put.IsAborted()) continue;
    return put;
  }
  return Status::Unavailable("source '" + rec.source_id + "' is contended; the run will retry");
}

Status Service::BeforeTerminal(const RunRecord& rec) {
  RETURN_NOT_OK(SettleSource(rec));
  return EnqueueCleanup(rec);
}

Status Service::SettleSource(const RunRecord& rec) {
  if (rec.pipeline_id.empty()) return Status::OK();
  if (!rec.source_id.empty() && !rec.validation_only) {
    const std::string& digest = rec.source_sha256;
    std::string etag;
    std::optional<SourceRecord> src;
    if (!digest.empty()) {
      ASSIGN_OR_RETURN(src, requests_.FindSource(rec.pipeline_id, rec.source_id, digest, &etag));
    }
    const int64_t now = options_.clock->NowMicros();
    if (ingest::HasCommitted(rec.state)) {
      SourceRecord loaded{
          rec.source_id, digest, rec.id,
          true,          now,    now + options_.limits.idempotency_retention_seconds * 1'000'000};
      Status put = requests_.PutSource(rec.pipeline_id, loaded, src ? &etag : nullptr);
      if (put.IsAborted() || put.IsAlreadyExists()) {
        return Status::Unavailable("source record of run " + rec.id + " changed; retrying");
      }
      RETURN_NOT_OK(put);
    } else if (src && src->run_id == rec.id && !src->loaded) {
      RETURN_NOT_OK(requests_.DeleteSource(rec.pipeline_id, *src));  // release the claim
    }
  }
  return Status::OK();
}

Result<CleanupEntry> Service::InputsToRemove(const RunRecord& rec) {
  CleanupEntry entry;
  entry.run_id = rec.id;
  ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(rec.request));
  if (req.error_policy != ingest::ErrorPolicy::kValidationOnly) {
    entry.upload_ids = rec.uploads;
    ASSIGN_OR_RETURN(entry.prefixes, StagedInputs(rec));  // the exact keys
    return entry;
  }
  for (const std::string& id : rec.uploads) {
    Result<UploadRecord> u = uploads_.Get(id);
    if (u.status().IsNotFound()) continue;
    RETURN_NOT_OK(u.status());
    if (u->run_id != rec.id) continue;  // validated for a load, or a load's already
    entry.upload_ids.push_back(id);
    entry.prefixes.push_back(u->key);
  }
  return entry;
}

Status Service::EnqueueCleanup(const RunRecord& rec) {
  if (rec.pipeline_id.empty()) return Status::OK();
  ASSIGN_OR_RETURN(CleanupEntry entry, InputsToRemove(rec));
  for (std::string& key : entry.prefixes) {
    if (const size_t slash = key.rfind('/'); slash != std::string::npos) key.resize(slash + 1);
  }
  return cleaner_.Enqueue(entry);
}

// The run is terminal and its queue entry still stands (a crash before the
// entry goes leaves the queue pass to write the cleanup entry). Its inputs
// go at once; the cleaner takes over what could not be deleted.
Status Service::CleanUpInputs(const RunRecord& rec) {
  if (rec.pipeline_id.empty()) return Status::OK();
  Result<CleanupEntry> inputs = InputsToRemove(rec);
  Status s = inputs.status();
  // Relaxed: data that comes back after a power loss has no record left,
  // and the staging sweeper removes it.
  for (size_t i = 0; s.ok() && i < inputs->prefixes.size(); ++i) {
    s = ws_->store()->DeleteRelaxed(inputs->prefixes[i]);
  }
  for (size_t i = 0; s.ok() && i < inputs->upload_ids.size(); ++i) {
    s = uploads_.Delete(inputs->upload_ids[i]);
  }
  if (s.ok()) return s;
  LOAM_LOG_WARN("run {}: its inputs go to the cleaner: {}", rec.id, s.ToString());
  return EnqueueCleanup(rec);
}

Result<SweepReport> Service::SweepStaging() {
  const auto keep = [this](const std::string& upload_id) -> Result<bool> {
    Result<UploadRecord> u = uploads_.Get(upload_id);
    if (u.status().IsNotFound()) return false;
    RETURN_NOT_OK(u.status());
    // Kept while the run that loads it, or the one validating it, runs.
    for (const std::string* id : {&u->run_id, &u->validated_by}) {
      if (id->empty()) continue;
      Result<RunRecord> run = loader_->runs().Get(*id);
      if (run.status().IsNotFound()) continue;
      RETURN_NOT_OK(run.status());
      if (!ingest::IsTerminal(run->state)) return true;
    }
    return false;
  };
  return cleaner_.Sweep(options_.limits.staging_grace_seconds * 1'000'000, keep);
}

Status Service::FenceAbandoned(const RequestRecord& r) {
  ingest::RunRequest req;
  req.principal = r.principal;
  req.idempotency_key = r.key;
  RunRecord fence;
  fence.id = r.run_id;
  fence.request = req.ToJson();
  fence.state = RunState::kCancelled;
  fence.created_micros = fence.finished_micros = options_.clock->NowMicros();
  fence.error = "abandoned: the submission that reserved idempotency key '" + r.key +
                "' stopped before creating this run; the key was released";
  std::string etag;
  return loader_->runs().Create(fence, &etag);
}

bool Service::RecordSweepUnderway() {
  std::lock_guard lock(sweep_mu_);
  return pass_.underway;
}

// A pass lists each kind once, a page per call; a kind whose page fails
// ends its part of the pass (the next pass starts it again), so one bad
// record never holds the others or the pass.
Result<int64_t> Service::SweepRecords() {
  std::lock_guard lock(sweep_mu_);
  int64_t removed = 0;
  Status first_error;
  if (!pass_.underway) {
    pass_ = {};
    pass_.underway = true;
    Result<int64_t> uploads = uploads_.SweepExpired(
        options_.clock->NowMicros(), options_.limits.staging_grace_seconds * 1'000'000);
    if (uploads.ok()) removed += *uploads;
    first_error = uploads.status();
  }
  const auto step = [&](bool* done, Result<int64_t> (Service::*page)()) {
    if (*done) return;
    Result<int64_t> r = (this->*page)();
    if (r.ok()) removed += *r;
    if (!r.ok() && first_error.ok()) first_error = r.status();
    *done = !r.ok() || *done;
  };
  step(&pass_.requests_done, &Service::SweepRequestPage);
  step(&pass_.sources_done, &Service::SweepSourcePage);
  step(&pass_.operations_done, &Service::SweepOperationKeyPage);
  if (pass_.requests_done && pass_.sources_done && pass_.operations_done) pass_.underway = false;
  if (!first_error.ok()) return first_error;
  return removed;
}

// One page of idempotency records: a reservation whose run never appeared
// goes (its run id fenced first); an expired record of a terminal run goes,
// and the run's record with it (retention: the run record goes second, so a
// crash between leaves an orphan record, never a key whose run is gone).
Result<int64_t> Service::SweepRequestPage() {
  const int64_t now = options_.clock->NowMicros();
  const int64_t abandoned = 10 * options_.in_flight_grace_micros;
  int64_t removed = 0;
  ASSIGN_OR_RETURN(auto page, requests_.RequestsPage(pass_.request_cursor, options_.sweep_page));
  pass_.request_cursor = page.next;
  pass_.requests_done = page.next.empty();
  for (const RequestRecord& r : page.records) {
    Result<RunRecord> run = loader_->runs().Get(r.run_id);
    bool drop = false;
    if (run.status().IsNotFound()) {
      if (now - r.created_micros <= abandoned) continue;
      // Its run never appeared. Fence the run id first, so a submission that
      // only stalled cannot create that run after the key is released.
      Status fenced = FenceAbandoned(r);
      if (fenced.IsAlreadyExists()) {
        // The run appeared meanwhile, or an earlier sweep fenced it and
        // stopped before the reservation went.
        ASSIGN_OR_RETURN(bool stands, ClaimStands(r.run_id));
        if (stands) continue;
        fenced = Status::OK();
      }
      RETURN_NOT_OK(fenced);
      drop = true;
    } else {
      RETURN_NOT_OK(run.status());
      drop = r.expires_micros < now && ingest::IsTerminal(run->state);
    }
    if (drop) {
      RETURN_NOT_OK(requests_.Delete(r));
      ++removed;
      if (run.ok()) RETURN_NOT_OK(loader_->runs().Delete(*run));
    }
  }
  return removed;
}

// One page of source records: loaded ones past their expiry, and claims of
// runs that ended without loading once the retention has passed.
Result<int64_t> Service::SweepSourcePage() {
  const int64_t now = options_.clock->NowMicros();
  int64_t removed = 0;
  ASSIGN_OR_RETURN(auto page, requests_.SourcesPage(pass_.source_cursor, options_.sweep_page));
  pass_.source_cursor = page.next;
  pass_.sources_done = page.next.empty();
  for (const auto& [pipeline, s] : page.records) {
    bool drop = s.loaded && s.expires_micros < now;
    // A claim left by a run that ended without loading: only after the
    // retention (a delete is unconditional, and a run may be taking it over).
    const int64_t retention = options_.limits.idempotency_retention_seconds * 1'000'000;
    if (!s.loaded && now - s.created_micros > retention) {
      Result<RunRecord> run = loader_->runs().Get(s.run_id);
      drop = run.status().IsNotFound() || (run.ok() && ingest::IsTerminal(run->state));
    }
    if (drop) {
      RETURN_NOT_OK(requests_.DeleteSource(pipeline, s));
      ++removed;
    }
  }
  return removed;
}

}  // namespace loam::service
