// The run pipeline: every load is a run that validates its whole input
// before it mutates anything, then commits all rows in one atomic write that
// also records run_commit:<run_id>. The CLI and (later) the HTTP service are
// clients of this one pipeline.
//
//   queued -> validating -> committing -> succeeded | failed   (partial: skipRows)
//
// A run is owned through a lease in its record. A cancel asked for while a
// run is held (RunStore::RequestCancel) is honoured between batches and
// before the commit is asked for, never after: the run ends cancelled
// having written nothing.
//
// A run is owned through a lease in its record. The same idempotency key with
// the same request returns the existing run, or resumes it when its owner
// died (the lease expired): recovery settles any half-done commit first, and
// the run_commit row makes a second commit impossible.
#pragma once

#include <functional>
#include <memory>

#include "engine/workspace.h"
#include "ingest/run_record.h"
#include "ingest/stager.h"

namespace loam::ingest {

// Named failpoints of a run, in order.
namespace failpoint {
inline constexpr std::string_view kRunAfterValidate = "run.after_validate";
inline constexpr std::string_view kRunBeforeCommit = "run.before_commit";
}  // namespace failpoint

struct LoaderOptions {
  int64_t lease_micros = 30'000'000;
  // The skipRows error policy is behind this feature flag (off by default).
  bool skip_rows_enabled = false;
  size_t batch_rows = 1 << 16;
  // Upserts: parsed input kept between the two passes up to this many bytes
  // (StagerOptions::retain_bytes).
  size_t retain_bytes = size_t{64} << 20;
  // Keyed runs: the key checks' memory bound, and where they spill beyond
  // it (StagerOptions::key_memory_bytes, scratch_dir).
  size_t key_memory_bytes = StagerOptions::kDefaultKeyMemoryBytes;
  std::string scratch_dir;
  size_t key_map_bytes = StagerOptions{}.key_map_bytes;  // StagerOptions::key_map_bytes
  bool collide_content_hashes = false;  // tests (StagerOptions::collide_content_hashes)
  // Opens one of the request's files; default: a local path read through a
  // LocalObjectStore on its directory.
  std::function<Result<std::unique_ptr<ByteSource>>(const std::string& file)> open_input;
  // Called after each parsed batch and at each state change.
  std::function<void(const RunRecord&)> on_progress;
  // Called at each named failpoint; non-OK stops the run there as a crash would.
  std::function<Status(std::string_view)> failpoint;
  // Claims what a load must hold alone (the service: the run's source
  // identity), once per attempt, before validation: a run that loses the
  // claim fails at once instead of validating against the winner's rows, and
  // a claim, once held, stays the run's until it ends (so the commit needs no
  // second look). A status that ends runs (source_already_loaded, ...) fails
  // the run; any other leaves it resumable. Validation-only runs claim nothing.
  std::function<Status(const RunRecord&)> claim;
  // Called with the terminal record before it is saved, so durable follow-up
  // work (the service's cleanup entry) exists before anyone sees the run
  // terminal. Non-OK leaves the run resumable; a resume calls it again.
  std::function<Status(const RunRecord&)> before_terminal;
  // Makes a run's commit (default: WorkspaceEngine::Write); the service's group
  // committer shares one commit among runs that reach it together.
  std::function<Result<WriteResult>(const WriteRequest&)> commit;
  // Resume (the service's workers) gives a run this many attempts that end
  // in a resumable error (I/O trouble, data loss, a bug), then fails it with
  // the last error. Between them the run's lease is held for the backoff:
  // retry_backoff_micros, doubling per attempt, at most 5 minutes (by
  // default 10+20+40+80 s: an outage shorter than that fails nothing).
  int max_attempts = 5;
  int64_t retry_backoff_micros = 10'000'000;
  // Between batches a run looks for a cancel request in its stored record
  // at most this often (one HEAD); before its commit, always.
  int64_t cancel_check_micros = 1'000'000;
};

// A local file as a ByteSource, read through the ObjectStore interface.
Result<std::unique_ptr<ByteSource>> OpenLocalFile(const std::string& path);

class Loader {
 public:
  Loader(std::shared_ptr<WorkspaceEngine> workspace, LoaderOptions options = {});

  // Runs `request` to a terminal state and returns its record (a failed run is
  // a record, not an error). Errors are for requests refused before any run
  // exists or continues: a malformed or refused request (skipRows while its
  // feature flag is off: PermissionDenied), an idempotency key used with a
  // different request (FailedPrecondition, naming the run), a run held by a
  // live process (FailedPrecondition), or I/O trouble that leaves the run
  // resumable. `reused` is set when an existing finished run is returned.
  Result<RunRecord> Run(const RunRequest& request, bool* reused = nullptr);

  // Works on the existing run `run_id` (queued by the service, or left by a
  // process that died) to a terminal state. The lease is taken by
  // compare-and-swap: Aborted when another process took it first,
  // FailedPrecondition (request_in_flight) while a live process holds it. A
  // terminal run is returned as it is.
  Result<RunRecord> Resume(const std::string& run_id);

  RunStore& runs() { return runs_; }

 private:
  struct Active;  // loader_internal.h
  // Carries a claimed run to its end (loader_run.cc): settles a resumed
  // run's commit, then validates and commits, again after each conflict.
  Result<RunRecord> Execute(Active& run);
  // One validation of the whole input and its commit. A commit that a
  // concurrent change refused comes back in *conflict (its staged files
  // removed) for Execute to try again; every other outcome ends here.
  Result<RunRecord> Attempt(Active& run, Status* conflict);
  // The table the run loads, checked: it exists, it is at the expected
  // version, and the request fits it (grant, keys, coercions).
  Result<const TableState*> Target(Active& run, const Snapshot& snap);
  // The stager's options; its progress renews the lease every third of it.
  StagerOptions StagingOptions(Active& run, int64_t* next_renew);
  // The run's one atomic write, recorded as run_commit:<id>.
  Result<RunRecord> Commit(Active& run, const TableState& t, Dataset& data,
                           const StagedInput& staged, Status* conflict);
  // Whether the journal holds the run's commit (it may have landed though
  // its answer was lost); if so, the record takes the commit's identity.
  Result<bool> Committed(Active& run);
  // Ends the run failed with `s` unless `s` leaves it resumable (returned
  // as is) or its commit landed after all (then it ends committed).
  // `found`: the invalid rows validation listed (StageFailure::errors).
  Result<RunRecord> FailWith(Active& run, const Status& s, const std::string& file,
                             std::vector<RunError> found = {});
  // Puts `errors` in the record, the first kRecordErrors in it and all of
  // them (when there are more) next to it.
  Status KeepErrors(Active& run, std::vector<RunError> errors);
  // Records the terminal `state` (the before_terminal hook first).
  Result<RunRecord> Finish(Active& run, RunState state);
  // After an attempt of a resumed run ended in resumable `s`: records it and
  // backs off, or, at the last attempt, fails the run with it.
  Result<RunRecord> AfterFailedAttempt(Active& run, const Status& s);
  // Whether the run's cancel was asked for: the record this process holds
  // says so, or, with `look`, the stored one does (one HEAD; a GET when it
  // changed). Aborted when another process took the run.
  Result<bool> CancelAsked(Active& run, bool look);
  // Takes a cancel request that made a save of this process's record lose
  // its compare-and-swap; false when something else did (another process
  // took the run), an error when the record could not be read.
  Result<bool> AdoptCancel(Active& run);
  // Ends the run cancelled; nothing it staged is committed.
  Result<RunRecord> EndCancelled(Active& run);
  Status Renew(Active& run);
  // Renews only when a third of the lease has passed since the last
  // renewal; otherwise the lease held proves ownership without a write.
  Status RenewIfOld(Active& run);
  Status Save(Active& run);
  Status Fail(std::string_view point) const;

  std::shared_ptr<WorkspaceEngine> ws_;
  LoaderOptions options_;
  RunStore runs_;
  std::string owner_;  // this loader's lease identity
};

}  // namespace loam::ingest
