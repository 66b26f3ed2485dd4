// Service: the ingestion service as a library (docs/architecture.md;
// docs/service.md). Pipelines, signed-upload staging, submissions with the
// three identities, admission, a durable queue drained by workers in any
// number of processes, and cleanup. Nothing here knows HTTP: results are
// Status / Result with stable error codes (docs/errors.md).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "engine/group_commit.h"
#include "engine/retention.h"
#include "engine/table_maintenance.h"
#include "engine/workspace.h"
#include "ingest/loader.h"
#include "service/admission.h"
#include "service/cleanup.h"
#include "service/compaction_trigger.h"
#include "service/operation_keys.h"
#include "service/pipeline.h"
#include "service/request_store.h"
#include "service/run_queue.h"
#include "service/run_view.h"
#include "service/submission.h"
#include "service/tables.h"
#include "service/upload_store.h"

namespace loam::service {

// Who is calling, as verified by the caller (the server: from a JWT).
struct CallContext {
  std::string workspace_id;
  std::string principal;
};

// Named failpoints of the service, in the order a run meets them (the
// loader's and the write protocol's lie between claim and terminal).
namespace failpoint {
inline constexpr std::string_view kSubmitAfterReserve = "submit.after_reserve";
inline constexpr std::string_view kSubmitAfterClaimUploads = "submit.after_claim_uploads";
inline constexpr std::string_view kSubmitAfterEnqueue = "submit.after_enqueue";
inline constexpr std::string_view kSubmitAfterRun = "submit.after_run";
inline constexpr std::string_view kWorkerAfterTerminal = "worker.after_terminal";
}  // namespace failpoint

// Signs a PUT of `key` for an S3 workspace: (key, expiry seconds, headers
// that become signed and must be sent) -> URL.
using Presigner = std::function<Result<std::string>(
    const std::string& key, int64_t expires_seconds,
    const std::vector<std::pair<std::string, std::string>>& headers)>;

struct ServiceOptions {
  ServiceLimits limits;
  int workers = 2;  // worker threads StartWorkers runs, taking any run
  // Worker threads that take only small runs (inputs of at most
  // small_run_bytes), so a long load never holds every worker while small
  // runs wait: the small-run lane. With a lane, the general workers take the
  // oldest large run first, then small ones.
  int small_run_workers = 0;
  int64_t small_run_bytes = 1 << 20;
  // Inline data of at most this many bytes (UTF-8 text) travels in the run
  // record: an acceptance writes the reservation, the queue entry and the
  // run record, and stages nothing. Larger (or non-UTF-8) data is staged as
  // an upload first. 0: always staged.
  int64_t inline_record_bytes = 64 << 10;
  // Group commit: runs of this process appending to one table that reach
  // their commit together share one table and manifest commit, each with its
  // own run_commit row (GroupCommitter). At most this many runs per commit;
  // 1 commits every run alone. A table commits at most once per interval
  // (GroupCommitOptions::interval_micros; loam serve: 50 ms), an idle one at
  // once.
  int group_commit_runs = 64;
  int64_t group_commit_interval_micros = 0;
  // HMAC key of local upload tokens, at least 32 bytes. Required unless
  // `presign` is set (S3 workspaces); Open picks the S3 store's presigner.
  std::string upload_secret;
  Presigner presign;
  Clock* clock = Clock::System();
  int64_t lease_micros = 30'000'000;
  // A run whose attempts keep ending in resumable errors fails after this
  // many (LoaderOptions::max_attempts, retry_backoff_micros).
  int max_run_attempts = 5;
  int64_t run_retry_backoff_micros = 10'000'000;
  // Polling of the shared queue when idle: from min, doubling up to max;
  // submissions in this process wake workers at once.
  int64_t poll_min_micros = 20'000;
  int64_t poll_max_micros = 1'000'000;
  int64_t cleaner_interval_micros = 1'000'000;
  // A request reserved its key but its run does not exist yet: for this
  // long a retry is told request_in_flight, then it finishes the creation.
  // Reservations and queue entries whose run never appeared are removed
  // after 10 times this.
  int64_t in_flight_grace_micros = 60'000'000;
  // Records of each kind one SweepRecords call reads.
  size_t sweep_page = 500;
  // How long admission trusts its last LIST of the queue (0: always list).
  int64_t queue_view_micros = 100'000;
  // How long the workers work through one listing of the queue before they
  // list it again (a LIST per run would grow with the backlog).
  int64_t worker_listing_micros = 1'000'000;
  bool skip_rows_enabled = false;
  // A paused pipeline's refusals ask the client back after this long.
  // Workers read a pipeline's pause at most once per pause_check_micros:
  // a pause or resume made through another process reaches this one's
  // workers within it (through this one, at once).
  int64_t paused_retry_after_millis = 30'000;
  int64_t pause_check_micros = 1'000'000;
  // Keyed runs: their key checks' memory bound and where they spill past it
  // (ingest::LoaderOptions::key_memory_bytes, scratch_dir).
  size_t key_memory_bytes = ingest::StagerOptions::kDefaultKeyMemoryBytes;
  std::string scratch_dir;
  // Called by this process's workers for each run they bring to a terminal
  // state (metrics).
  std::function<void(const RunInfo&)> on_run_finished;
  // Automatic compaction: every interval, the process holding the
  // workspace's maintenance lease (MaintenanceLease) compacts the tables
  // that are due on every branch (CompactAllBranches) as the workspace's
  // owner; 0: never (loam serve: 1 s). Between intervals a pass also runs
  // as soon as this process's commits may have brought a table to
  // compaction.min_fragments (CompactionTrigger). The lease lasts 5 intervals (at
  // least 60 s) and is renewed after a third of it.
  int64_t compaction_interval_micros = 0;
  CompactionPolicy compaction;
  // Called after each compaction pass this process makes (metrics); may run
  // at the same time as on_retention_pass (each pass has its thread).
  std::function<void(const MaintenanceReport&)> on_compaction_pass;
  // Retention: every interval, the lease holder applies the workspace's
  // time-travel window (ExpireVersions); 0: never (loam serve: 3600 s).
  // Unreferenced files younger than the grace period stay.
  int64_t retention_interval_micros = 0;
  int64_t retention_grace_micros = 86'400'000'000;
  std::function<void(const RetentionReport&)> on_retention_pass;
  // Failpoints of the service, the loader and the write protocol.
  std::function<Status(std::string_view)> failpoint;
};

struct UploadRequest {
  uint64_t size = 0;
  std::string sha256;  // lower-case hex, optional
  std::string content_type;
  int64_t ttl_seconds = 0;  // 0 = the default
  // The client's name for the data (1-255 bytes of UTF-8, no '/' or control
  // characters): a run's errors name it next to the upload id.
  std::string file_name;
};

// GET /v1/usage: what admission counts for the caller, as this process's
// next admission would see it (docs/service.md, "Usage").
struct Usage {
  QueueLoad queue;  // the shared queue (every process)
  Admission::PrincipalUsage principal;
  OutstandingUploads outstanding;  // counted up to the limit + 1
};

struct UploadStatus {
  UploadRecord record;
  bool received = false;
};

struct UploadTicket {
  std::string upload_id;
  std::string method = "PUT";
  std::string url;    // S3: the presigned URL; local: "" (the server's route + token)
  std::string token;  // local: the capability for AcceptUpload
  std::vector<std::pair<std::string, std::string>> headers;  // to send exactly
  int64_t expires_micros = 0;
};

struct InlineLoad {
  std::string content_type;  // text/csv or application/x-ndjson
  std::string_view data;
  std::string source_id;  // "" = none
  bool reload = false;
};

struct Submission {
  RunInfo run;
  bool replayed = false;  // the same request answered before: no new work
};

struct RunStatus {
  RunInfo run;
  int64_t queue_position = -1;  // 0-based among queued runs; -1 when not queued
};

class Service {
 public:
  // Fails when the quarantine switch is set, the workspace has no id, or the
  // upload capability cannot be made (no secret of 32+ bytes, no presigner).
  static Result<std::unique_ptr<Service>> Open(std::shared_ptr<WorkspaceEngine> ws,
                                               ServiceOptions options);
  // Opens a service over `ws` with the options its opener's caller (a
  // server) chooses: that caller knows the service, never the workspace.
  using Opener = std::function<Result<std::unique_ptr<Service>>(ServiceOptions)>;
  static Opener OpenerOver(std::shared_ptr<WorkspaceEngine> ws);
  ~Service();  // Stop()
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  const std::string& workspace_id() const { return ws_->id(); }
  // The published ceilings and retention (JSON).
  std::string Limits() const;
  const ServiceLimits& limits() const { return options_.limits; }

  // --- pipelines ------------------------------------------------------------
  Result<Pipeline> CreatePipeline(const CallContext& ctx, std::string_view spec_json);
  Result<Pipeline> GetPipeline(const CallContext& ctx, const std::string& id);
  Result<std::vector<Pipeline>> ListPipelines(const CallContext& ctx);
  // `patch_json`: the fields to change; "name" and "table" cannot change.
  // `if_match`: an entity tag the pipeline must still have (Pipeline::Etag;
  // "" = any, "*" = it exists): precondition_failed otherwise.
  Result<Pipeline> UpdatePipeline(const CallContext& ctx, const std::string& id,
                                  std::string_view patch_json, const std::string& if_match = "");
  Status DeletePipeline(const CallContext& ctx, const std::string& id,
                        const std::string& if_match = "");

  // Allows (or forbids) additive schema changes on `table`: admin only,
  // recorded in the journal as the caller's grant-like change.
  Status SetAdditiveSchema(const CallContext& ctx, const std::string& table, bool allowed);

  // --- tables -----------------------------------------------------------------
  // The workspace owner only; `doc_json` as ParseTableDocument reads it.
  Result<WriteResult> CreateTable(const CallContext& ctx, std::string_view doc_json);
  // The tables the caller may read (all for the owner).
  Result<std::vector<TableInfo>> ListTables(const CallContext& ctx);
  Result<TableInfo> DescribeTable(const CallContext& ctx, const std::string& name);
  // Streams the rows as JSON Lines to `sink`, a batch's rows at a time.
  Status ReadRows(const CallContext& ctx, const std::string& name, const RowQuery& query,
                  const std::function<Status(std::string_view)>& sink);
  Result<std::vector<TableHistoryEntry>> TableHistory(const CallContext& ctx,
                                                      const std::string& name);
  // The owner or an admin of `table`; `role` nullopt revokes. With
  // `if_head_commit` ("" = any), only while the table is still at that head
  // commit (TableInfo::head_commit), checked inside the commit.
  Status SetTableGrant(const CallContext& ctx, const std::string& table,
                       const std::string& principal, std::optional<Role> role,
                       const std::string& if_head_commit = "");

  // --- branches (service_branches.cc; "main" names main) ------------------------
  // Any caller lists and reads them: their rows are read through table grants.
  Result<std::vector<BranchState>> ListBranches(const CallContext& ctx);
  Result<BranchState> DescribeBranch(const CallContext& ctx, const std::string& name);
  // The workspace owner only (as tables are created by the owner).
  Result<BranchState> CreateBranch(const CallContext& ctx, const std::string& name,
                                   const std::string& from, std::optional<uint64_t> version);
  Status DeleteBranch(const CallContext& ctx, const std::string& name);
  // Only merges change a protected branch's tables (docs/branches.md).
  Result<BranchState> ProtectBranch(const CallContext& ctx, const std::string& name, bool on);
  // The branch's current version (what a merge's SQL checks pin).
  Result<uint64_t> BranchVersion(const CallContext& ctx, const std::string& name);
  // WorkspaceEngine::Merge as the caller: their grants decide, inside the commit.
  Result<MergeResult> MergeBranch(const CallContext& ctx, MergeRequest request);
  // The merge committed under `merge_id` (a retry's answer), if any.
  Result<std::optional<MergeResult>> FindMerge(const CallContext& ctx, const std::string& branch,
                                               const std::string& merge_id,
                                               const std::string& into);
  // WorkspaceEngine::RevertMerge as the caller, on branch `into`.
  Result<MergeRevertResult> RevertMerge(const CallContext& ctx, const std::string& merge_id,
                                        const std::string& into);

  // --- uploads --------------------------------------------------------------
  Result<UploadTicket> CreateUpload(const CallContext& ctx, const std::string& pipeline_id,
                                    const UploadRequest& request);
  // Local workspaces: checks `token` and stores `body` at the upload's key.
  Status AcceptUpload(const std::string& upload_id, std::string_view token, ByteSource& body);
  // An upload as its creator sees it: whether its bytes were received (the
  // staging object exists with the declared size), so a client whose PUT
  // met "already received" (409, or 412 from S3) can confirm it. NotFound
  // for another principal's upload, as for one that does not exist.
  Result<UploadStatus> GetUpload(const CallContext& ctx, const std::string& upload_id);
  // The caller's usage: the queue, its request tokens and receiving
  // uploads, the tiny-run windows of the pipelines it may see, its
  // outstanding uploads.
  Result<Usage> GetUsage(const CallContext& ctx);

  // --- runs -----------------------------------------------------------------
  // `body`: {"uploads":[id...], "source":{"id":...}?, "errorPolicy"?,
  // "expectedTableVersion"?, "reload"?, "limits"?}. Never reads the data.
  Result<Submission> SubmitRun(const CallContext& ctx, const std::string& pipeline_id,
                               std::string_view idempotency_key, std::string_view body);
  // A small load sent with the request itself: the service stages `data`
  // as an upload and submits it. The request's identity is the data's
  // SHA-256, its content type and source id, so a retry with the same key
  // and bytes replays (a refused submission removes what it staged).
  Result<Submission> SubmitInline(const CallContext& ctx, const std::string& pipeline_id,
                                  std::string_view idempotency_key, const InlineLoad& load);
  // A delete of `table`'s rows as a run (docs/service.md, "Deleting rows"):
  // `body` is {"where": [filter...]} or {"keys": [{column: value...}...],
  // "keyColumns"?}, with "errorPolicy"? (failRun, validationOnly) and
  // "expectedTableVersion"?. Checked now (the writer grant, the filters, the
  // key columns), queued, and carried out by a worker as one commit; keys
  // travel in the run's record. Idempotent under `idempotency_key` as
  // submissions are.
  Result<Submission> SubmitDelete(const CallContext& ctx, const std::string& table,
                                  std::string_view idempotency_key, std::string_view body);
  Result<RunStatus> GetRun(const CallContext& ctx, const std::string& run_id);
  // Every error the run kept (RunInfo::error_count of them), in input order.
  Result<std::vector<RunInfo::Error>> RunErrors(const CallContext& ctx, const std::string& run_id);
  // The caller's runs and those of tables it may read, in the filter's order
  // (newest first by default), at most 1,000 records read per call.
  Result<RunPage> ListRuns(const CallContext& ctx, const RunFilter& filter);
  // Idempotency-Key on requests other than submissions (pipeline and upload
  // creation, cancel, revert): the caller's claim on `key` for a request
  // with `fingerprint`; a replay carries the kept answer. The same
  // retention and in-flight grace as run keys.
  Result<OperationClaim> ClaimOperationKey(const CallContext& ctx, const std::string& key,
                                           const std::string& fingerprint);
  Status SettleOperationKey(const OperationClaim& claim, KeptAnswer answer);
  Status ReleaseOperationKey(const OperationClaim& claim);
  // A queued run ends cancelled here; a started one (or one a worker
  // claims meanwhile) is asked to stop and comes back not yet terminal,
  // with cancel_requested_by set: its worker ends it cancelled between
  // batches or before its commit, never after it asked for the commit.
  // A finished run: precondition_failed.
  Result<RunInfo> CancelRun(const CallContext& ctx, const std::string& run_id);
  // One new commit that undoes the succeeded run `run_id`. An append run's
  // rows are deleted (by the fragments its run_commit row names), whatever
  // committed since, unless a compaction or replace rewrote them
  // (revert_blocked). An upsert run's rows leave and the rows it replaced
  // return, whatever committed since, unless a later commit deleted or
  // rewrote one of its rows (revert_blocked naming it). A delete run's rows
  // return, unless a row holding one of their keys was written since
  // (revert_blocked). A replace run
  // restores the table to its version before the run; revert_blocked naming
  // the later commits when any touched the table since. Needs the writer
  // grant (admin for a replace run).
  Result<WriteResult> RevertRun(const CallContext& ctx, const std::string& run_id);

  // --- workers and cleanup ----------------------------------------------------
  void StartWorkers();
  // Stops taking runs, lets the running ones finish, joins the threads.
  void Stop();
  // Waits until the shared queue is empty (checked whenever a run of this
  // process ends); Unavailable after `timeout`, saying how many remain.
  Status WaitForEmptyQueue(std::chrono::milliseconds timeout);
  // Claims and runs the oldest run it can to a terminal state (with
  // `small_only`, the oldest of at most small_run_bytes). False when no run
  // was due.
  Result<bool> RunWorkerOnce(bool small_only = false);
  // One cleaner pass over the entries of runs that are terminal.
  Result<CleanupReport> RunCleanerOnce();
  // Staging uploads under days older than the grace that no live run needs.
  Result<SweepReport> SweepStaging();
  // Expired idempotency and source records; reservations whose run never
  // appeared; upload records never submitted, once their URL's expiry is a
  // staging grace past. Returns how many records were removed.
  // Each call sweeps one page (`sweep_page` records) of each kind, the next
  // call the next page: its cost and memory do not grow with the records.
  Result<int64_t> SweepRecords();
  // A pass of SweepRecords is mid-listing: the next call continues it.
  bool RecordSweepUnderway();
  // The shared queue as admission sees it (a LIST at most queue_view old).
  Result<QueueLoad> QueueLoadNow() { return CurrentLoad(); }
  // Upload bodies this process is receiving now.
  size_t UploadsReceiving() const { return admission_.ReceivingUploads(); }
  // Runs this process's workers hold the lease of now.
  int64_t RunsActive() {
    std::lock_guard lock(mu_);
    return static_cast<int64_t>(active_.size());
  }
  bool workers_running() {
    std::lock_guard lock(mu_);
    return !threads_.empty() && !stopping_;
  }
  // Age in µs of the oldest pending cleanup (0: none).
  Result<int64_t> CleanupBacklog() const { return cleaner_.Backlog(); }

  // The workspace's current manifest version, read from the store (a
  // readiness probe: the store answers).
  Result<uint64_t> CurrentManifestVersion() const;

 private:
  Result<std::optional<std::vector<int64_t>>> AppendedRows(const ingest::RunRecord& run,
                                                           const ingest::RunRequest& req,
                                                           const Snapshot& snap,
                                                           const TableState& t) const;
  Result<WriteResult> RevertAppend(const CallContext& ctx, const ingest::RunRecord& run,
                                   const ingest::RunRequest& req, const TableState& t,
                                   std::vector<int64_t> rows);
  Status CommitInHistory(const ingest::RunRecord& run, const ingest::RunRequest& req,
                         const TableState& t) const;
  Result<WriteResult> RevertDelete(const CallContext& ctx, const ingest::RunRecord& run,
                                   const ingest::RunRequest& req, const Snapshot& snap,
                                   const TableState& t);
  Result<WriteResult> RevertUpsert(const CallContext& ctx, const ingest::RunRecord& run,
                                   const ingest::RunRequest& req, const Snapshot& snap,
                                   const TableState& t);
  Result<std::string> FirstChangeAfter(const Dataset& data, const std::vector<Fragment>& added,
                                       uint64_t version, const TableState& t,
                                       const std::string& branch) const;
  Service(std::shared_ptr<WorkspaceEngine> ws, ServiceOptions options);

  Status CheckContext(const CallContext& ctx) const;
  Status OwnerOnly(const CallContext& ctx, const std::string& what) const;
  Result<BranchState> BranchOf(const std::string& name) const;  // "main" or a branch
  // The run's record, if the caller submitted it or may read its table.
  Result<ingest::RunRecord> ReadableRun(const CallContext& ctx, const std::string& run_id);
  // CancelRun of a run a worker holds.
  Result<RunInfo> RequestCancel(const CallContext& ctx, const std::string& run_id);
  Status Fail(std::string_view point) const;
  // The table of `p` now (not_found when dropped) and `principal`'s right to
  // load it in the pipeline's mode.
  Result<Snapshot> AuthorizeLoad(const Pipeline& p, const std::string& principal) const;
  Result<int64_t> SweepOperationKeyPage();
  // pipeline_paused (429 with a retry-after) for a paused pipeline.
  Status RefuseIfPaused(const Pipeline& p) const;
  // Whether workers leave the pipeline's queued runs waiting, as read at
  // most pause_check_micros ago (a deleted pipeline is not paused).
  Result<bool> PausedForWorkers(const std::string& pipeline_id);
  void NotePause(const Pipeline& p);
  Status AuthorizeRead(int64_t table_sid, const std::string& principal,
                       const std::string& branch = "") const;
  Status AuthorizeRead(const Snapshot& snap, int64_t table_sid, const std::string& principal) const;
  // The live table `name` if `principal` may read it.
  Result<const TableState*> ReadableTable(const Snapshot& snap, const std::string& name,
                                          const std::string& principal) const;
  // Every rule a pipeline spec obeys against its table (create and PATCH).
  Status CheckSpec(const PipelineSpec& spec, const Snapshot& snap, const TableState& t,
                   const std::string& principal) const;
  // An additive pipeline: append mode, a table that allows it, an admin.
  Status CheckAdditive(const PipelineSpec& spec, const Snapshot& snap, const TableState& t,
                       const std::string& principal) const;
  // The queue's load as admission sees it: the last LIST while it is fresh.
  Result<QueueLoad> CurrentLoad();
  // The load of a listing begun when ListingStarts() returned `since`,
  // plus the admitted runs it may have missed (pending_).
  uint64_t ListingStarts();
  QueueLoad RememberLoad(const std::vector<QueueEntry>& entries, uint64_t since);
  // A run admitted (or its creation resumed) counts in the remembered load
  // at once. With `run_id` it is also pending until Settle (its queue entry
  // written, or its creation given up): a listing taken meanwhile cannot see
  // it, so the load remembered from one adds it.
  void CountAdmitted(const std::string& pipeline_id, int64_t bytes, const std::string& run_id = "");
  void Settle(const std::string& run_id);
  // The admission decision and its count as one step: concurrent handlers
  // never admit past a limit on the same free room.
  // Deletes have no pipeline: they share the room of pipeline id "".
  Status AdmitNew(const CallContext& ctx, const std::string& key, const std::string& pipeline_id,
                  int64_t bytes, int64_t max_concurrent, const std::string& run_id);
  // A delete's run as its body asks, checked against the table now
  // (service_deletes.cc): the request, and the keys it carries.
  struct DeleteRun {
    ingest::RunRequest request;
    int64_t table_sid = 0;
    std::string keys_jsonl;
  };
  Result<DeleteRun> CheckDelete(const CallContext& ctx, const std::string& table,
                                std::string_view body) const;
  // `resuming`: a creation its first request left half way.
  Result<Submission> CreateDeleteRun(const RequestRecord& reservation, const DeleteRun& d,
                                     bool resuming);
  // The request a queued run executes.
  // An upload record as read for a submission, with its etag for the claim.
  struct CheckedUpload {
    UploadRecord record;
    std::string etag;
  };
  Result<ingest::RunRequest> BuildRequest(const Pipeline& p, const CallContext& ctx,
                                          const SubmitBody& b,
                                          const std::vector<CheckedUpload>& uploads) const;
  Result<Submission> Replay(const RequestRecord& r, const std::string& fingerprint);
  // A key reserved before: its run (a replay), another request's key
  // (idempotency_key_reused), request_in_flight while its first request may
  // still be creating the run, or nullopt: a creation to finish, or, with
  // *expired, a reservation past its retention, removed (the request is new).
  Result<std::optional<Submission>> AnswerKnownKey(const RequestRecord& known,
                                                   const std::string& fingerprint, int64_t now,
                                                   bool* expired);
  static std::string Fingerprint(std::string_view body, const std::string& pipeline_id);
  // The submission under `key` whose identity is `fingerprint`: a replay, or
  // a new run of `body(pipeline, resuming)` (called at most once per
  // attempt; with the reservation when it finishes a creation that stopped
  // half way).
  using BodyFn =
      std::function<Result<SubmitBody>(const Pipeline& p, const RequestRecord* resuming)>;
  Result<Submission> Submit(const CallContext& ctx, const std::string& pipeline_id,
                            const std::string& key, const std::string& fingerprint,
                            const BodyFn& body);
  // Runs ahead of queued run `run_id` in the queue view (at most
  // queue_view_micros old, listed again when older).
  Result<int64_t> QueuePosition(const std::string& run_id);
  // `overloaded` (maxOutstandingUploads) when `principal` holds the cap of
  // uploads not yet submitted, with a retry-after to the earliest expiry.
  Status CheckOutstandingUploads(const std::string& principal);
  // Stores `body` as upload `r` (read with `etag`), checking size and digest.
  Status StoreUpload(UploadRecord r, std::string etag, ByteSource& body);
  // A new upload's record: ids, owner, expiry and its staging place.
  UploadRecord NewUploadRecord(const CallContext& ctx, const Pipeline& p,
                               int64_t ttl_seconds) const;
  // Inline data staged in two writes (the data, then its upload record,
  // received and already claimed by `run_id`); returns that record.
  Result<UploadRecord> StageInline(const CallContext& ctx, const Pipeline& p,
                                   const InlineLoad& load, const std::string& sha256,
                                   const std::string& run_id);
  // What admission needs to know of a new submission that passed every check
  // but admission: grants, limits, uploads, the source identity.
  struct Admissible {
    int64_t bytes = 0;
    int64_t max_concurrent = 0;
    std::vector<CheckedUpload> uploads;
  };
  Result<Admissible> CheckNewSubmission(const CallContext& ctx, const Pipeline& p,
                                        const SubmitBody& b);
  // `validation`: for a validationOnly run, which claims an upload's
  // validated_by rather than its run_id (docs/service.md, "Validate, then load").
  Result<std::vector<CheckedUpload>> CheckUploads(const CallContext& ctx, const Pipeline& p,
                                                  const std::vector<std::string>& ids,
                                                  const std::string& run_id, bool validation);
  Status CheckValidatedBy(const UploadRecord& u, const std::string& run_id, bool validation);
  Status ClaimUploads(std::vector<CheckedUpload>& uploads, const std::string& run_id,
                      bool validation);
  // `checked`: the uploads a new submission already checked; nullptr when a
  // retry resumes a creation stopped half way (everything is checked again).
  Result<Submission> CreateRun(const CallContext& ctx, const Pipeline& p,
                               const RequestRecord& reservation, const SubmitBody& b,
                               std::vector<CheckedUpload>* checked);
  // Whether run `run_id`'s claim on an upload still stands: its run exists,
  // or it is younger than ten in-flight graces (its submission may finish).
  Result<bool> ClaimStands(const std::string& run_id) const;
  // Writes the cancelled run record that stands in for the run of an
  // abandoned reservation (no pipeline: nothing to clean or load); a stalled
  // submission's own create of that run then fails. AlreadyExists when the
  // run appeared meanwhile.
  Status FenceAbandoned(const RequestRecord& r);
  // Loader hooks.
  Result<int64_t> SweepRequestPage();
  Result<int64_t> SweepSourcePage();
  // The next entry of the workers' shared listing (listed again when used
  // up or stale, which sets `listed`); nullopt when the queue is empty.
  // With `small_only`, the first entry of at most small_run_bytes (the
  // larger ones stay for the general workers).
  Result<std::optional<QueueEntry>> NextQueueEntry(bool small_only, bool* listed);
  // Takes the next entry of queued_ (mu_ held).
  std::optional<QueueEntry> TakeQueued(bool small_only);
  // Works on queue entry `e`: true when a run was brought to a terminal
  // state, nullopt when the worker should look at the next entry (a failure
  // of the run goes to `first_error`).
  Result<std::optional<bool>> WorkOn(const QueueEntry& e, Status* first_error);
  // Drops the remembered leases of runs no longer queued.
  void ForgetLeasesOutside(const std::vector<QueueEntry>& entries);
  Status ClaimSource(const ingest::RunRecord& rec);
  // SettleSource, then EnqueueCleanup: for a run made terminal outside a
  // worker's attempt (cancel, the queue pass).
  Status BeforeTerminal(const ingest::RunRecord& rec);
  // The loader's hook before a run's terminal write: its source identity
  // marked loaded when it committed, its claim released otherwise.
  Status SettleSource(const ingest::RunRecord& rec);
  Status EnqueueCleanup(const ingest::RunRecord& rec);
  Status CleanUpInputs(const ingest::RunRecord& rec);
  // What a terminal run's cleanup removes: every input, except the uploads a
  // validationOnly run validated, kept for the load that may follow (the
  // staging sweep removes them if none does).
  Result<CleanupEntry> InputsToRemove(const ingest::RunRecord& rec);
  void WorkerLoop(int index, bool small_only);
  void MaintenanceLoop();
  void RetentionLoop();
  // A run this process brought to its end: its commit, if any, counted
  // towards the next compaction pass (CompactionTrigger).
  void NoteCommit(const ingest::RunRecord& run);
  // Whether a task of this interval is due now (0: never); moves *next on.
  bool Due(int64_t interval_micros, int64_t* next_micros) const;
  // Takes or renews the workspace's maintenance lease (one request pair);
  // the compaction and retention threads ask in turn.
  bool HoldsMaintenanceLease() LOAM_EXCLUDES(lease_mu_);
  // Under the lease: a compaction pass, and a retention pass.
  void CompactNow();
  void ExpireNow();
  void Wake();

  std::shared_ptr<WorkspaceEngine> ws_;
  ServiceOptions options_;
  PipelineStore pipelines_;
  UploadStore uploads_;
  RequestStore requests_;
  OperationKeyStore operation_keys_;
  RunQueue queue_;
  Cleaner cleaner_;
  Admission admission_;
  std::unique_ptr<GroupCommitter> committer_;
  std::unique_ptr<ingest::Loader> loader_;
  std::mutex lease_mu_;
  std::unique_ptr<MaintenanceLease> maintenance_lease_;  // asked under lease_mu_
  MaintenanceMemo compaction_memo_;                      // the maintenance thread's only
  CompactionTrigger compaction_trigger_{options_.compaction.min_fragments};

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  uint64_t wakeups_ = 0;
  std::set<std::string> active_;  // runs this process is working on
  // Runs another worker holds, by when its lease ends as last read: a poll
  // reads such a run's record again only after that, so a poll's reads do
  // not grow with the runs being worked on ahead of the free ones. Only
  // runs of the last listing are kept.
  std::map<std::string, int64_t> leased_until_;
  struct PauseSeen {
    bool paused = false;
    int64_t read_micros = 0;
  };
  std::map<std::string, PauseSeen> pauses_;  // by pipeline id
  QueueLoad load_;
  int64_t load_at_micros_ = -1;
  std::vector<std::string> queued_ids_;  // the listing behind load_, oldest first
  struct PendingRun {
    std::string pipeline_id;
    int64_t bytes = 0;
    uint64_t settled_at = 0;  // settles_ when its creation ended (0: not yet)
  };
  // Admitted runs a listing may miss: without a queue entry yet, or settled
  // after the last listing began.
  std::map<std::string, PendingRun> pending_;
  uint64_t settles_ = 0;
  // The workers' shared listing of the queue: entries not yet looked at,
  // oldest first, and when it was listed.
  std::deque<QueueEntry> queued_;
  int64_t listed_at_micros_ = -1;
  std::mutex list_mu_;   // one worker listing at a time
  std::mutex admit_mu_;  // one admission decision at a time
  std::mutex sweep_mu_;  // one record sweep at a time
  // The record sweep's pass: where each kind's next page starts, and
  // whether its listing ended.
  struct SweepPass {
    bool underway = false;
    std::string request_cursor;
    std::string source_cursor;
    std::string operation_cursor;
    bool requests_done = false;
    bool sources_done = false;
    bool operations_done = false;
  };
  SweepPass pass_;
  std::vector<std::thread> threads_;
};

}  // namespace loam::service
