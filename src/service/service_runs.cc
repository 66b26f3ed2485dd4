// Service: submission (context -> strict parse -> idempotency -> admission ->
// reserve key -> claim uploads -> enqueue -> run record).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "common/utf8.h"
#include "service/service.h"
#include "service/staging.h"

namespace loam::service {
namespace {

using json = nlohmann::json;
using ingest::RunRecord;
using ingest::RunState;

std::string KnownDigest(const UploadRecord& u) {
  return u.received_sha256.empty() ? u.sha256 : u.received_sha256;
}

// The data a run record carries counts as its one input, as the upload it
// replaces would: the source identity is the same either way.
std::vector<std::string> RecordInputDigests(const SubmitBody& b) {
  if (b.record_input.empty()) return {};
  return {b.record_input_sha256};
}

// The run a submission makes only validates (its body's errorPolicy, else the pipeline's).
bool ValidationOnly(const Pipeline& p, const SubmitBody& b) {
  if (b.error_policy) {
    Result<ingest::ErrorPolicy> policy = ingest::ParseErrorPolicy(*b.error_policy);
    return policy.ok() && *policy == ingest::ErrorPolicy::kValidationOnly;
  }
  return p.spec.error_policy == ingest::ErrorPolicy::kValidationOnly;
}

}  // namespace

Status CheckIdempotencyKey(std::string_view key) {
  if (key.empty()) {
    return Status::InvalidArgument(
               "a run submission needs an idempotency key: one per logical submission, reused "
               "on every retry of it")
        .WithErrorCode(ErrorCode::kIdempotencyKeyRequired);
  }
  if (key.size() > 255) {
    return Status::InvalidArgument("an idempotency key is at most 255 characters");
  }
  for (char c : key) {
    if (c < 0x20 || c > 0x7e) {
      return Status::InvalidArgument("an idempotency key is printable ASCII only");
    }
  }
  return Status::OK();
}

Status CheckSourceId(const std::string& id) {
  if (id.empty() || id.size() > 1024 || !IsValidUtf8(id)) {
    return Status::InvalidArgument("a source id is 1 to 1024 characters of UTF-8");
  }
  return Status::OK();
}

Result<SubmitBody> ParseSubmitBody(std::string_view text, int64_t max_uploads) {
  ASSIGN_OR_RETURN(json j, ParseJsonObject(text, "run submission"));
  StrictObject o(j, "run submission");
  SubmitBody b;
  if (const json* q = o.Field("quarantine"); q != nullptr && *q != false) {
    return Status::PermissionDenied(
        "run submission: quarantine is refused: Loam never keeps rejected rows; use the failRun "
        "or validationOnly error policy");
  }
  RETURN_NOT_OK(o.Strings("uploads", &b.uploads));
  if (b.uploads.empty() || static_cast<int64_t>(b.uploads.size()) > max_uploads) {
    return o.Bad("uploads", "1 to " + std::to_string(max_uploads) + " upload ids");
  }
  for (size_t i = 0; i < b.uploads.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (b.uploads[k] == b.uploads[i]) {
        return Status::InvalidArgument("run submission: upload " + b.uploads[i] + " named twice");
      }
    }
  }
  if (const json* s = o.Field("source"); s != nullptr) {
    if (!s->is_object()) return o.Bad("source", "an object {\"id\": ...}");
    StrictObject so(*s, "run submission source");
    RETURN_NOT_OK(so.String("id", &b.source_id, /*required=*/true));
    if (!CheckSourceId(b.source_id).ok()) return so.Bad("id", "1 to 1024 characters");
    RETURN_NOT_OK(so.Finish());
  }
  RETURN_NOT_OK(o.Bool("reload", &b.reload));
  if (o.Field("errorPolicy") != nullptr) {
    std::string p;
    RETURN_NOT_OK(o.String("errorPolicy", &p));
    RETURN_NOT_OK(ingest::ParseErrorPolicy(p).status());
    b.error_policy = p;
  }
  if (o.Field("expectedTableVersion") != nullptr) {
    int64_t v = 0;
    RETURN_NOT_OK(o.Int("expectedTableVersion", &v, 0, int64_t{1} << 62));
    b.expected_table_version = v;
  }
  if (const json* l = o.Field("limits"); l != nullptr) {
    ASSIGN_OR_RETURN(b.limits, LoadLimits::FromJson(*l, "run submission limits"));
  }
  RETURN_NOT_OK(o.Finish());
  return b;
}

Result<QueueLoad> Service::CurrentLoad() {
  const int64_t now = options_.clock->NowMicros();
  {
    std::lock_guard lock(mu_);
    if (load_at_micros_ >= 0 && now - load_at_micros_ < options_.queue_view_micros) return load_;
  }
  const uint64_t since = ListingStarts();
  ASSIGN_OR_RETURN(std::vector<QueueEntry> entries, queue_.List());
  return RememberLoad(entries, since);
}

uint64_t Service::ListingStarts() {
  std::lock_guard lock(mu_);
  return settles_;
}

QueueLoad Service::RememberLoad(const std::vector<QueueEntry>& entries, uint64_t since) {
  QueueLoad load;
  std::set<std::string> listed;
  const auto count = [&](const std::string& pipeline_id, int64_t bytes) {
    ++load.runs;
    load.bytes += bytes;
    ++load.runs_per_pipeline[pipeline_id];
    if (bytes <= options_.small_run_bytes) {
      ++load.small_runs;
      load.small_bytes += bytes;
    }
  };
  for (const QueueEntry& e : entries) {
    count(e.pipeline_id, e.bytes);
    listed.insert(e.run_id);
  }
  std::lock_guard lock(mu_);
  for (auto it = pending_.begin(); it != pending_.end();) {
    const auto& [run_id, r] = *it;
    // Settled before this listing began: its queue entry is in the listing.
    if (r.settled_at != 0 && r.settled_at <= since) {
      it = pending_.erase(it);
      continue;
    }
    ++it;
    if (listed.count(run_id)) continue;
    count(r.pipeline_id, r.bytes);
  }
  load_ = load;
  load_at_micros_ = options_.clock->NowMicros();
  queued_ids_.clear();
  for (const QueueEntry& e : entries) queued_ids_.push_back(e.run_id);  // oldest first
  return load;
}

Result<int64_t> Service::QueuePosition(const std::string& run_id) {
  RETURN_NOT_OK(CurrentLoad().status());  // the view, listed again when stale
  std::lock_guard lock(mu_);
  // Entries sort by run id (ULIDs): the runs ahead are the smaller ids,
  // listed or admitted here since the listing.
  auto at = std::lower_bound(queued_ids_.begin(), queued_ids_.end(), run_id);
  int64_t ahead = static_cast<int64_t>(at - queued_ids_.begin());
  for (const auto& [id, r] : pending_) {
    if (id < run_id && !std::binary_search(queued_ids_.begin(), queued_ids_.end(), id)) ++ahead;
  }
  return ahead;
}

void Service::CountAdmitted(const std::string& pipeline_id, int64_t bytes,
                            const std::string& run_id) {
  std::lock_guard lock(mu_);
  ++load_.runs;
  load_.bytes += bytes;
  ++load_.runs_per_pipeline[pipeline_id];
  if (!run_id.empty()) pending_[run_id] = {pipeline_id, bytes, 0};
}

void Service::Settle(const std::string& run_id) {
  std::lock_guard lock(mu_);
  // Kept until a listing that began after now: one that began before may
  // have missed the queue entry just written.
  auto it = pending_.find(run_id);
  if (it != pending_.end()) it->second.settled_at = ++settles_;
}

Status Service::AdmitNew(const CallContext& ctx, const std::string& key,
                         const std::string& pipeline_id, int64_t bytes, int64_t max_concurrent,
                         const std::string& run_id) {
  std::lock_guard admit(admit_mu_);
  ASSIGN_OR_RETURN(QueueLoad load, CurrentLoad());
  RETURN_NOT_OK(admission_.Admit(ctx.principal, key, pipeline_id, bytes, max_concurrent, load));
  // Counted at once, so a request admitted next (a waiting line's next
  // holder, say) does not find the room this one took still free.
  CountAdmitted(pipeline_id, bytes, run_id);
  return Status::OK();
}

Result<std::vector<Service::CheckedUpload>> Service::CheckUploads(
    const CallContext& ctx, const Pipeline& p, const std::vector<std::string>& ids,
    const std::string& run_id, bool validation) {
  std::vector<CheckedUpload> out;
  for (const std::string& id : ids) {
    std::string etag;
    ASSIGN_OR_RETURN(UploadRecord u, uploads_.Get(id, &etag));
    if (u.principal != ctx.principal) {
      return Status::PermissionDenied("upload " + id + " belongs to another principal");
    }
    if (u.pipeline_id != p.id) {
      return Status::InvalidArgument("upload " + id + " was made for another pipeline");
    }
    if (options_.clock->NowMicros() - u.created_micros >
        options_.limits.staging_grace_seconds * 1'000'000) {
      return Status::FailedPrecondition("upload " + id +
                                        " is older than the staging grace; upload the data again");
    }
    if (!u.run_id.empty() && u.run_id != run_id) {
      ASSIGN_OR_RETURN(bool stands, ClaimStands(u.run_id));
      if (stands) {
        return Status::FailedPrecondition("upload " + id + " was already submitted in run " +
                                          u.run_id + "; upload the data again for another run")
            .WithDetail("run", u.run_id);
      }
    }
    RETURN_NOT_OK(CheckValidatedBy(u, run_id, validation));
    Result<ObjectMeta> there = ws_->store()->Head(u.key);
    if (there.status().IsNotFound()) {
      return Status::FailedPrecondition("upload " + id +
                                        " has not been received; send its bytes first");
    }
    RETURN_NOT_OK(there.status());
    if (there->size != u.size) {
      return Status::FailedPrecondition("upload " + id + " holds " + std::to_string(there->size) +
                                        " bytes, not the declared " + std::to_string(u.size));
    }
    out.push_back({std::move(u), std::move(etag)});
  }
  return out;
}

// An upload is validated by at most one validationOnly run (whose claim
// stands), and loaded once that run has ended.
Status Service::CheckValidatedBy(const UploadRecord& u, const std::string& run_id,
                                 bool validation) {
  if (u.validated_by.empty() || u.validated_by == run_id) return Status::OK();
  if (validation) {
    ASSIGN_OR_RETURN(bool stands, ClaimStands(u.validated_by));
    if (!stands) return Status::OK();
    return Status::FailedPrecondition("upload " + u.id + " was already validated by run " +
                                      u.validated_by + "; submit it to a load run")
        .WithDetail("run", u.validated_by);
  }
  Result<RunRecord> check = loader_->runs().Get(u.validated_by);
  if (check.ok() && ingest::IsTerminal(check->state)) return Status::OK();
  if (check.status().IsNotFound()) {
    // Claimed by a submission that has not written its run yet, or never will.
    ASSIGN_OR_RETURN(bool stands, ClaimStands(u.validated_by));
    if (!stands) return Status::OK();
  } else {
    RETURN_NOT_OK(check.status());
  }
  return Status::Aborted("upload " + u.id + " is being validated by run " + u.validated_by +
                         "; submit the load once that run has ended")
      .WithErrorCode(ErrorCode::kConflict)
      .WithDetail("run", u.validated_by)
      .WithDetail("retryAfterMillis", "1000");
}

Result<bool> Service::ClaimStands(const std::string& run_id) const {
  Result<RunRecord> there = loader_->runs().Get(run_id);
  // A fence of an abandoned reservation (no pipeline) never loads anything.
  if (there.ok()) return !(there->state == RunState::kCancelled && there->pipeline_id.empty());
  if (!there.status().IsNotFound()) return there.status();
  Result<Ulid> id = Ulid::Parse(run_id);
  if (!id.ok()) return false;
  const int64_t age = options_.clock->NowMicros() - static_cast<int64_t>(id->millis()) * 1000;
  return age <= 10 * options_.in_flight_grace_micros;
}

Status Service::ClaimUploads(std::vector<CheckedUpload>& uploads, const std::string& run_id,
                             bool validation) {
  // A load claims the upload's run_id; a validationOnly run its validated_by.
  std::string UploadRecord::*slot =
      validation ? &UploadRecord::validated_by : &UploadRecord::run_id;
  std::vector<CheckedUpload*> claimed;  // by this call, released again if it fails
  Status s;
  for (size_t i = 0; i < uploads.size() && s.ok();) {
    CheckedUpload& u = uploads[i];
    if (u.record.run_id == run_id) {  // the run's own (staged by its request): nothing to claim
      ++i;
      continue;
    }
    // As read now (again after a lost compare-and-swap): the other slot's
    // claim may forbid this one.
    s = validation ? Status::OK() : CheckValidatedBy(u.record, run_id, false);
    if (s.ok() && validation && !u.record.run_id.empty()) {
      Result<bool> loaded = ClaimStands(u.record.run_id);
      s = !loaded.ok() ? loaded.status()
          : *loaded    ? Status::FailedPrecondition("upload " + u.record.id +
                                                    " was already submitted in run " + u.record.run_id)
                          .WithDetail("run", u.record.run_id)
                    : Status::OK();
    }
    if (!s.ok()) break;
    if ((u.record.*slot).empty()) {
      // As read by the check: claim it with that etag, no second read.
      UploadRecord mine = u.record;
      mine.*slot = run_id;
      s = uploads_.Update(mine, u.etag);
      if (s.ok()) {
        u.record = std::move(mine);
        claimed.push_back(&u);
        ++i;
        continue;
      }
      if (!s.IsAborted()) break;
      s = Status::OK();  // changed meanwhile: read it again
    } else if (u.record.*slot == run_id) {
      ++i;
      continue;
    } else {
      // Held by a claim that lapsed (see ClaimStands).
      Result<bool> stands = ClaimStands(u.record.*slot);
      s = stands.status();
      if (!s.ok()) break;
      if (*stands) {
        s = Status::FailedPrecondition("upload " + u.record.id + " was just submitted in run " +
                                       u.record.*slot)
                .WithDetail("run", u.record.*slot);
        break;
      }
      (u.record.*slot).clear();  // take it over with the etag it was read with
      continue;
    }
    Result<UploadRecord> fresh = uploads_.Get(u.record.id, &u.etag);
    s = fresh.status();
    if (s.ok()) u.record = std::move(*fresh);
  }
  if (s.ok()) return s;
  for (CheckedUpload* u : claimed) {
    std::string etag;
    Result<UploadRecord> now = uploads_.Get(u->record.id, &etag);
    if (!now.ok() || (*now).*slot != run_id) continue;
    ((*now).*slot).clear();
    static_cast<void>(uploads_.Update(*now, etag));  // best effort; a retry reclaims it
  }
  return s;
}

Result<ingest::RunRequest> Service::BuildRequest(const Pipeline& p, const CallContext& ctx,
                                                 const SubmitBody& b,
                                                 const std::vector<CheckedUpload>& uploads) const {
  ASSIGN_OR_RETURN(LoadLimits pipeline_limits,
                   LowerOnly(options_.limits.Ceiling(), p.spec.limits, "pipeline"));
  ASSIGN_OR_RETURN(LoadLimits limits, LowerOnly(pipeline_limits, b.limits, "request"));
  ingest::RunRequest r;
  r.table = p.spec.table;
  r.branch = EngineBranchName(p.spec.branch);
  r.mode = p.spec.mode;
  r.keys = p.spec.key_columns;
  r.format = p.spec.format;
  if (!b.record_input.empty()) {
    r.files.push_back(std::string(ingest::kRecordInputFile));
    r.file_names.push_back("inline data");
  }
  for (const CheckedUpload& u : uploads) {
    r.files.push_back(u.record.key);
    // Errors name the upload, and the client's file name when it gave one.
    const std::string id = "upload " + u.record.id;
    r.file_names.push_back(u.record.file_name.empty() ? id : u.record.file_name + " (" + id + ")");
  }
  r.policy = p.spec.schema_policy;
  r.error_policy = p.spec.error_policy;
  if (b.error_policy) {
    ASSIGN_OR_RETURN(r.error_policy, ingest::ParseErrorPolicy(*b.error_policy));
  }
  if (r.error_policy == ingest::ErrorPolicy::kSkipRows && !options_.skip_rows_enabled) {
    return Status::PermissionDenied(
        "the skipRows error policy is behind a feature flag that is off");
  }
  r.principal = ctx.principal;
  // The admin whose configuration allows the new columns: the commit checks
  // again that they still are one (create and PATCH checked it then).
  if (r.policy.additive) r.additive_admin = p.updated_by;
  r.limits.csv_delimiter = p.spec.csv_delimiter;
  r.limits.csv = p.spec.csv;
  ApplyLimits(limits, &r);
  r.expected_table_version = b.expected_table_version;
  return r;
}

Result<Service::Admissible> Service::CheckNewSubmission(const CallContext& ctx, const Pipeline& p,
                                                        const SubmitBody& b) {
  ASSIGN_OR_RETURN(Snapshot snap, AuthorizeLoad(p, ctx.principal));
  if (b.expected_table_version) {
    // Refused now when already stale; the commit checks it again.
    const TableState* t = snap.FindSid(p.table_sid);
    const int64_t now_at = t == nullptr ? -1 : t->head.table_version;
    if (now_at != *b.expected_table_version) {
      return Status::FailedPrecondition("the table is at version " + std::to_string(now_at) +
                                        ", not the expected " +
                                        std::to_string(*b.expected_table_version));
    }
  }
  RETURN_NOT_OK(BuildRequest(p, ctx, b, {}).status());  // its limits and policies
  Admissible a;
  if (!b.staged.empty()) {
    // Staged by this request a moment ago, already claimed: not read again.
    for (const UploadRecord& u : b.staged) a.uploads.push_back({u, ""});
  } else {
    ASSIGN_OR_RETURN(a.uploads, CheckUploads(ctx, p, b.uploads, b.run_id, ValidationOnly(p, b)));
  }
  std::vector<std::string> digests = RecordInputDigests(b);
  a.bytes = static_cast<int64_t>(b.record_input.size());
  for (const CheckedUpload& u : a.uploads) {
    a.bytes += static_cast<int64_t>(u.record.size);
    digests.push_back(KnownDigest(u.record));
  }
  ASSIGN_OR_RETURN(LoadLimits limits,
                   LowerOnly(options_.limits.Ceiling(), p.spec.limits, "pipeline"));
  ASSIGN_OR_RETURN(limits, LowerOnly(limits, b.limits, "request"));
  a.max_concurrent = *limits.max_concurrent_runs;
  if (a.bytes > *limits.max_run_bytes) {
    return Status::ResourceExhausted("the uploads hold " + std::to_string(a.bytes) +
                                     " bytes, over the run limit of " +
                                     std::to_string(*limits.max_run_bytes))
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxRunBytes");
  }
  const std::string digest = CombineDigests(digests);
  if (!b.source_id.empty() && digest.empty()) {
    return Status::InvalidArgument(
        "a run with a source identity needs the SHA-256 of every upload: declare sha256 when "
        "creating the uploads");
  }
  if (b.source_id.empty() || b.reload) return a;
  ASSIGN_OR_RETURN(std::optional<SourceRecord> src,
                   requests_.FindSource(p.id, b.source_id, digest));
  if (src && src->loaded) {
    return Status::FailedPrecondition("source '" + b.source_id +
                                      "' with these bytes was already loaded by run " +
                                      src->run_id + "; send \"reload\": true to load it again")
        .WithErrorCode(ErrorCode::kSourceAlreadyLoaded)
        .WithDetail("run", src->run_id);
  }
  return a;
}

Result<Submission> Service::SubmitRun(const CallContext& ctx, const std::string& pipeline_id,
                                      std::string_view idempotency_key, std::string_view body) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(CheckIdempotencyKey(idempotency_key));
  ASSIGN_OR_RETURN(SubmitBody b, ParseSubmitBody(body, options_.limits.max_uploads_per_run));
  return Submit(ctx, pipeline_id, std::string(idempotency_key), Fingerprint(body, pipeline_id),
                [&b](const Pipeline&, const RequestRecord*) -> Result<SubmitBody> { return b; });
}

std::string Service::Fingerprint(std::string_view body, const std::string& pipeline_id) {
  std::string fp_input(body);
  fp_input += '\0' + pipeline_id + '\0' + "submit";
  return Sha256Hex(fp_input);
}

Result<Submission> Service::Submit(const CallContext& ctx, const std::string& pipeline_id,
                                   const std::string& key, const std::string& fingerprint,
                                   const BodyFn& body) {
  // Idempotency: a known key answers before anything else is looked at.
  ASSIGN_OR_RETURN(std::optional<RequestRecord> known, requests_.Find(ctx.principal, key));
  const int64_t now = options_.clock->NowMicros();
  if (known) {
    bool expired = false;
    ASSIGN_OR_RETURN(std::optional<Submission> answered,
                     AnswerKnownKey(*known, fingerprint, now, &expired));
    if (answered) return *answered;
    if (expired) return Submit(ctx, pipeline_id, key, fingerprint, body);
    // Its creator stopped half way: finish the creation under the same run id.
    ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(pipeline_id));
    ASSIGN_OR_RETURN(SubmitBody b, body(p, &*known));
    return CreateRun(ctx, p, *known, b, nullptr);
  }
  ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(pipeline_id));
  if (p.spec.paused) {  // refused before anything is staged; told only to its loaders
    RETURN_NOT_OK(AuthorizeLoad(p, ctx.principal).status());
    return RefuseIfPaused(p);
  }
  ASSIGN_OR_RETURN(SubmitBody b, body(p, nullptr));
  Result<Admissible> a = CheckNewSubmission(ctx, p, b);
  if (!a.ok()) {
    // A twin of this request (same key) may have reserved the key and
    // claimed the uploads or the source since the lookup above: its run
    // answers for both, as a replay or as in flight.
    ASSIGN_OR_RETURN(std::optional<RequestRecord> twin, requests_.Find(ctx.principal, key));
    if (twin) return Submit(ctx, pipeline_id, key, fingerprint, body);
    return a.status();
  }
  const std::string run_id = b.run_id.empty() ? NewUlidString() : b.run_id;
  RETURN_NOT_OK(AdmitNew(ctx, key, p.id, a->bytes, a->max_concurrent, run_id));
  // Pending until CreateRun has written the queue entry (or given up).
  struct Settler {
    Service* service;
    const std::string& run_id;
    ~Settler() { service->Settle(run_id); }
  } settle{this, run_id};

  RequestRecord reservation{
      key,    ctx.principal, fingerprint,
      run_id, now,           now + options_.limits.idempotency_retention_seconds * 1'000'000};
  if (b.staged_here) reservation.staged_uploads = b.uploads;
  Status reserved = requests_.Reserve(reservation);
  if (reserved.IsAlreadyExists()) return Submit(ctx, pipeline_id, key, fingerprint, body);
  RETURN_NOT_OK(reserved);
  return CreateRun(ctx, p, reservation, b, &a->uploads);
}

Result<Submission> Service::CreateRun(const CallContext& ctx, const Pipeline& p,
                                      const RequestRecord& reservation, const SubmitBody& b,
                                      std::vector<CheckedUpload>* checked) {
  const std::string& run_id = reservation.run_id;
  const bool resuming = checked == nullptr;
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterReserve));
  std::vector<CheckedUpload> rechecked;
  Status claimed;
  if (resuming) {
    Result<std::vector<CheckedUpload>> again =
        CheckUploads(ctx, p, b.uploads, run_id, ValidationOnly(p, b));
    claimed = again.status();
    if (claimed.ok()) rechecked = std::move(*again);
    checked = &rechecked;
  }
  if (claimed.ok()) claimed = ClaimUploads(*checked, run_id, ValidationOnly(p, b));
  if (!claimed.ok()) {
    // A refusal: nothing exists for this key but the reservation, so free it
    // for a corrected request. Transient trouble keeps it: a retry of this
    // request resumes under the same run id.
    if (!claimed.IsUnavailable() && !claimed.IsAborted()) {
      NoteCleanupFailure("releasing an idempotency reservation", requests_.Delete(reservation));
    }
    return claimed;
  }
  const std::vector<CheckedUpload>& uploads = *checked;
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterClaimUploads));
  ASSIGN_OR_RETURN(ingest::RunRequest request, BuildRequest(p, ctx, b, uploads));
  RunRecord run;
  run.id = run_id;
  run.request = request.ToJson();
  run.table = p.spec.table;
  run.table_sid = p.table_sid;
  run.created_micros = options_.clock->NowMicros();
  run.pipeline_id = p.id;
  run.validation_only = request.error_policy == ingest::ErrorPolicy::kValidationOnly;
  run.input_text = std::string(b.record_input);
  run.input_bytes = static_cast<int64_t>(b.record_input.size());
  std::vector<std::string> digests = RecordInputDigests(b);
  for (const CheckedUpload& u : uploads) {
    run.uploads.push_back(u.record.id);
    run.input_bytes += static_cast<int64_t>(u.record.size);
    digests.push_back(KnownDigest(u.record));
  }
  run.source_id = b.source_id;
  run.source_sha256 = CombineDigests(digests);
  run.source_reload = b.reload;
  RETURN_NOT_OK(queue_.Enqueue(run.id, p.id, run.input_bytes));
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterEnqueue));
  std::string etag;
  Status created = loader_->runs().Create(run, &etag);
  if (created.IsAlreadyExists()) return Replay(reservation, reservation.fingerprint);
  RETURN_NOT_OK(created);
  // Submitted for good: no longer outstanding (a lost delete only counts an
  // upload until it expires; a claim released before this point keeps it).
  // (Uploads the request staged itself never were.)
  // A validation's uploads stay outstanding: the load that follows submits them.
  if (!b.staged_here && !ValidationOnly(p, b)) {
    for (const CheckedUpload& u : uploads) static_cast<void>(uploads_.ForgetOutstanding(u.record));
  }
  // A resumed creation is old enough that a worker may have removed its
  // queue entry as an orphan just before the run record appeared: again.
  if (resuming) RETURN_NOT_OK(queue_.Enqueue(run.id, p.id, run.input_bytes));
  if (resuming) CountAdmitted(p.id, run.input_bytes);  // a fresh run was counted at admission
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterRun));
  Wake();
  return Submission{ViewOf(run), /*replayed=*/false};
}

}  // namespace loam::service
