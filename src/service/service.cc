#include "service/service.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/principal.h"
#include "common/quarantine.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "common/utf8.h"
#include "ingest/input_source.h"
#include "service/staging.h"

namespace loam::service {
namespace {

using json = nlohmann::json;
constexpr size_t kMinSecretBytes = 32;

// An upload's file name as errors will quote it: "" (none) or 1-255 bytes of
// UTF-8 without '/' or control characters.
Status CheckFileName(const std::string& name) {
  bool ok = name.size() <= 255 && IsValidUtf8(name);
  for (unsigned char c : name) ok = ok && c >= 0x20 && c != 0x7f && c != '/';
  if (ok) return Status::OK();
  return Status::InvalidArgument(
      "fileName must be 1 to 255 bytes of UTF-8 without '/' or control characters");
}

WriteMode WriteModeOf(ingest::LoadMode m) {
  switch (m) {
    case ingest::LoadMode::kReplace:
      return WriteMode::kReplace;
    case ingest::LoadMode::kDelete:
      return WriteMode::kDelete;
    default:
      return WriteMode::kAppend;
  }
}

}  // namespace

Service::Service(std::shared_ptr<WorkspaceEngine> ws, ServiceOptions options)
    : ws_(std::move(ws)),
      options_(std::move(options)),
      pipelines_(ws_->store(), ws_->root()),
      uploads_(ws_->store(), ws_->root()),
      requests_(ws_->store(), ws_->root(), ws_->id()),
      operation_keys_(ws_->store(), ws_->root(), ws_->id()),
      queue_(ws_->store(), ws_->root()),
      cleaner_(ws_->store(), ws_->root(), options_.clock),
      admission_(options_.limits, options_.clock, options_.workers, options_.small_run_workers,
                 options_.small_run_bytes) {
  ingest::LoaderOptions lo;
  lo.lease_micros = options_.lease_micros;
  lo.max_attempts = options_.max_run_attempts;
  lo.retry_backoff_micros = options_.run_retry_backoff_micros;
  lo.skip_rows_enabled = options_.skip_rows_enabled;
  lo.key_memory_bytes = options_.key_memory_bytes;
  lo.scratch_dir = options_.scratch_dir;
  lo.failpoint = options_.failpoint;
  std::shared_ptr<ObjectStore> store = ws_->store();
  lo.open_input = [store](const std::string& key) -> Result<std::unique_ptr<ByteSource>> {
    ASSIGN_OR_RETURN(std::unique_ptr<ingest::ObjectByteSource> src,
                     ingest::ObjectByteSource::Open(store, key));
    return std::unique_ptr<ByteSource>(std::move(src));
  };
  lo.claim = [this](const ingest::RunRecord& rec) { return ClaimSource(rec); };
  lo.before_terminal = [this](const ingest::RunRecord& rec) { return SettleSource(rec); };
  if (options_.group_commit_runs > 1) {
    committer_ = std::make_unique<GroupCommitter>(
        ws_, GroupCommitOptions{options_.group_commit_runs, options_.group_commit_interval_micros});
    lo.commit = [this](const WriteRequest& w) { return committer_->Commit(w); };
  }
  loader_ = std::make_unique<ingest::Loader>(ws_, std::move(lo));
  maintenance_lease_ = std::make_unique<MaintenanceLease>(
      ws_->store(), ws_->root(), NewUlidString(), options_.clock,
      std::max<int64_t>(5 * options_.compaction_interval_micros, 60'000'000));
}

Result<std::unique_ptr<Service>> Service::Open(std::shared_ptr<WorkspaceEngine> ws,
                                               ServiceOptions options) {
  RETURN_NOT_OK(CheckQuarantineSwitch());
  if (ws->id().empty()) {
    return Status::FailedPrecondition(
        "the workspace has no id (it was made before workspace ids existed); the service needs "
        "one: create a new workspace with 'loam init'");
  }
  if (!options.presign && ws->store()->CanPresign()) {
    options.presign = [store = ws->store()](
                          const std::string& key, int64_t expires,
                          const std::vector<std::pair<std::string, std::string>>& headers) {
      return store->PresignPut(key, expires, headers);
    };
  }
  if (!options.presign && options.upload_secret.size() < kMinSecretBytes) {
    return Status::InvalidArgument("the upload secret must be at least " +
                                   std::to_string(kMinSecretBytes) +
                                   " bytes (it signs upload tokens for local workspaces)");
  }
  if (options.limits.idempotency_retention_seconds < 24 * 3600) {
    return Status::InvalidArgument("idempotency retention must be at least 24 h");
  }
  if (options.workers < 0) return Status::InvalidArgument("workers must be 0 or more");
  if (options.limits.max_upload_ttl_seconds > options.limits.staging_grace_seconds) {
    return Status::InvalidArgument(
        "the staging grace must be at least the longest upload lifetime (the sweeper must never "
        "remove an upload that can still be submitted)");
  }
  return std::unique_ptr<Service>(new Service(std::move(ws), std::move(options)));
}

Service::Opener Service::OpenerOver(std::shared_ptr<WorkspaceEngine> ws) {
  return [ws = std::move(ws)](ServiceOptions options) { return Open(ws, std::move(options)); };
}

Service::~Service() { Stop(); }

Result<uint64_t> Service::CurrentManifestVersion() const {
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  return snap.manifest_version;
}

std::string Service::Limits() const { return options_.limits.ToJson().dump(); }

Status Service::Fail(std::string_view point) const {
  return options_.failpoint ? options_.failpoint(point) : Status::OK();
}

Status Service::CheckContext(const CallContext& ctx) const {
  if (ctx.principal.empty()) {
    return Status::PermissionDenied("a service call needs an authenticated principal");
  }
  if (ctx.principal.rfind("loam:", 0) == 0) {
    return Status::PermissionDenied(
        "principals starting with 'loam:' are reserved for Loam itself");
  }
  if (Status valid = CheckPrincipal(ctx.principal); !valid.ok()) {
    return Status::PermissionDenied(valid.message());
  }
  if (ctx.workspace_id != ws_->id()) {
    return Status::PermissionDenied("the caller's workspace '" + ctx.workspace_id +
                                    "' is not this workspace ('" + ws_->id() + "')");
  }
  return Status::OK();
}

Result<Snapshot> Service::AuthorizeLoad(const Pipeline& p, const std::string& principal) const {
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(EngineBranchName(p.spec.branch)));
  if (const TableState* t = snap.FindSid(p.table_sid); t != nullptr) {
    RETURN_NOT_OK(ws_->Authorize(snap, *t, principal, WriteModeOf(p.spec.mode)));
    return snap;
  }
  return Status::NotFound("the table of pipeline '" + p.spec.name + "' (id " +
                          std::to_string(p.table_sid) + ", created as '" + p.spec.table +
                          "') was dropped");
}

Status Service::AuthorizeRead(int64_t table_sid, const std::string& principal,
                              const std::string& branch) const {
  if (principal == ws_->owner()) return Status::OK();
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(branch));
  return AuthorizeRead(snap, table_sid, principal);
}

Status Service::AuthorizeRead(const Snapshot& snap, int64_t table_sid,
                              const std::string& principal) const {
  if (principal == ws_->owner() || snap.RoleOf(table_sid, principal)) return Status::OK();
  return Status::PermissionDenied("principal '" + principal +
                                  "' holds no grant on the pipeline's table");
}

Status Service::CheckAdditive(const PipelineSpec& spec, const Snapshot& snap, const TableState& t,
                              const std::string& principal) const {
  if (!spec.schema_policy.additive) return Status::OK();
  if (spec.mode != ingest::LoadMode::kAppend) {
    return Status::InvalidArgument("schemaPolicy mode \"additive\" is for append pipelines only");
  }
  if (!snap.AllowsAdditiveSchema(t.def.sid)) {
    return Status::PermissionDenied("table '" + t.def.name +
                                    "' does not allow additive schema changes; an admin can "
                                    "allow them first");
  }
  Schema widened = t.def.schema;  // the widest the table can grow to
  for (Field& f : spec.schema_policy.NewColumns(t.def.schema)) widened.fields.push_back(f);
  RETURN_NOT_OK(ValidateColumns(widened, t.def.name));
  Status admin = ws_->Authorize(snap, t, principal, WriteMode::kAddColumn);
  if (!admin.ok()) {
    return admin.WithMessage("only an admin of table '" + t.def.name +
                             "' configures an additive pipeline: " + admin.message());
  }
  return Status::OK();
}

Status Service::SetAdditiveSchema(const CallContext& ctx, const std::string& table, bool allowed) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  const TableState* t = snap.Find(table);
  if (t == nullptr) return Status::NotFound("table '" + table + "' does not exist");
  RETURN_NOT_OK(ws_->Authorize(snap, *t, ctx.principal, WriteMode::kAddColumn));
  return ws_->SetAdditiveSchema(table, allowed, ctx.principal);
}

// --- pipelines ------------------------------------------------------------------------

// Every rule a pipeline's spec obeys against its table, at create and at
// every PATCH: limits only lower the ceilings, flags are on, the caller may
// load in the spec's mode, an upsert matches on the table's declared key (or
// names one on an unkeyed table), and the schema policy fits.
Status Service::CheckSpec(const PipelineSpec& spec, const Snapshot& snap, const TableState& t,
                          const std::string& principal) const {
  RETURN_NOT_OK(LowerOnly(options_.limits.Ceiling(), spec.limits, "pipeline").status());
  if (spec.error_policy == ingest::ErrorPolicy::kSkipRows && !options_.skip_rows_enabled) {
    return Status::PermissionDenied(
        "the skipRows error policy is behind a feature flag that is off");
  }
  RETURN_NOT_OK(ws_->Authorize(snap, t, principal, WriteModeOf(spec.mode)));
  if (spec.mode == ingest::LoadMode::kUpsert) {
    RETURN_NOT_OK(UpsertKeys(t.def, spec.key_columns).status());
  }
  RETURN_NOT_OK(spec.schema_policy.CheckAgainst(t.def.schema));
  return CheckAdditive(spec, snap, t, principal);
}

Result<Pipeline> Service::CreatePipeline(const CallContext& ctx, std::string_view spec_json) {
  RETURN_NOT_OK(CheckContext(ctx));
  Pipeline p;
  ASSIGN_OR_RETURN(p.spec, PipelineSpec::FromJson(spec_json));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current(EngineBranchName(p.spec.branch)));
  const TableState* t = snap.Find(p.spec.table);
  if (t == nullptr) {
    return Status::NotFound("table '" + p.spec.table + "' does not exist; declare it first");
  }
  RETURN_NOT_OK(CheckSpec(p.spec, snap, *t, ctx.principal));
  p.id = NewUlidString();
  p.table_sid = t->def.sid;
  p.created_by = p.updated_by = ctx.principal;
  p.created_micros = p.updated_micros = options_.clock->NowMicros();
  RETURN_NOT_OK(pipelines_.Create(p));
  return p;
}

Result<Pipeline> Service::GetPipeline(const CallContext& ctx, const std::string& id) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(id));
  RETURN_NOT_OK(AuthorizeRead(p.table_sid, ctx.principal, EngineBranchName(p.spec.branch)));
  return p;
}

Result<std::vector<Pipeline>> Service::ListPipelines(const CallContext& ctx) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(std::vector<Pipeline> all, pipelines_.List());
  if (ctx.principal == ws_->owner()) return all;
  std::map<std::string, Snapshot> snaps;  // one snapshot per branch for every pipeline
  std::vector<Pipeline> visible;
  for (Pipeline& p : all) {
    const std::string branch = EngineBranchName(p.spec.branch);
    if (!snaps.count(branch)) {
      Result<Snapshot> snap = ws_->Current(branch);
      if (snap.status().IsNotFound()) continue;  // its branch was deleted
      RETURN_NOT_OK(snap.status());
      snaps.emplace(branch, *std::move(snap));
    }
    if (AuthorizeRead(snaps.at(branch), p.table_sid, ctx.principal).ok()) {
      visible.push_back(std::move(p));
    }
  }
  return visible;
}

namespace {

// If-Match against the pipeline as read ("" and "*" match any state).
Status CheckIfMatch(const Pipeline& p, const std::string& if_match) {
  if (if_match.empty() || if_match == "*" || if_match == p.Etag()) return Status::OK();
  return Status::FailedPrecondition("pipeline " + p.id + " changed: it is " + p.Etag() +
                                    " now, not the " + if_match +
                                    " of If-Match; read it again and repeat the change")
      .WithErrorCode(ErrorCode::kPreconditionFailed);
}

}  // namespace

Result<Pipeline> Service::UpdatePipeline(const CallContext& ctx, const std::string& id,
                                         std::string_view patch_json, const std::string& if_match) {
  RETURN_NOT_OK(CheckContext(ctx));
  std::string etag;
  ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(id, &etag));
  RETURN_NOT_OK(CheckIfMatch(p, if_match));
  ASSIGN_OR_RETURN(json patch, ParseJsonObject(patch_json, "pipeline patch"));
  json merged = p.spec.ToJson();
  for (const auto& [k, v] : patch.items()) {
    if (k == "branch" ? v != json(p.spec.branch)
                      : (k == "name" || k == "table") && v != merged[k]) {
      return Status::InvalidArgument("a pipeline's \"" + k +
                                     "\" cannot change; create another pipeline");
    }
    merged[k] = v;
  }
  ASSIGN_OR_RETURN(PipelineSpec spec, PipelineSpec::FromJson(merged.dump()));
  // The old and the new mode both need the caller's grant; the new spec
  // obeys every rule a create obeys.
  ASSIGN_OR_RETURN(Snapshot snap, AuthorizeLoad(p, ctx.principal));
  const TableState* t = snap.FindSid(p.table_sid);
  if (t == nullptr) return Status::Internal("the pipeline's table left the snapshot");
  RETURN_NOT_OK(CheckSpec(spec, snap, *t, ctx.principal));
  p.spec = std::move(spec);
  p.updated_by = ctx.principal;
  p.updated_micros = options_.clock->NowMicros();
  // Stored only over the state read (and checked against If-Match): a
  // change between the two is `conflict`.
  RETURN_NOT_OK(pipelines_.Update(p, etag));
  NotePause(p);
  return p;
}

Result<OperationClaim> Service::ClaimOperationKey(const CallContext& ctx, const std::string& key,
                                                  const std::string& fingerprint) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(CheckIdempotencyKey(key));
  return operation_keys_.Claim(ctx.principal, key, fingerprint,
                               {options_.clock->NowMicros(), 10 * options_.in_flight_grace_micros,
                                options_.limits.idempotency_retention_seconds * 1'000'000});
}

// One page of operation keys: answers past their retention, reservations
// abandoned for twenty in-flight graces.
Result<int64_t> Service::SweepOperationKeyPage() {
  Result<int64_t> removed =
      operation_keys_.SweepPage(&pass_.operation_cursor, options_.sweep_page,
                                options_.clock->NowMicros(), 20 * options_.in_flight_grace_micros);
  pass_.operations_done = !removed.ok() || pass_.operation_cursor.empty();
  return removed;
}

Status Service::SettleOperationKey(const OperationClaim& claim, KeptAnswer answer) {
  return operation_keys_.Settle(claim, std::move(answer));
}

Status Service::ReleaseOperationKey(const OperationClaim& claim) {
  return operation_keys_.Release(claim);
}

Status Service::RefuseIfPaused(const Pipeline& p) const {
  if (!p.spec.paused) return Status::OK();
  const std::string ms = std::to_string(options_.paused_retry_after_millis);
  return Status::ResourceExhausted("pipeline '" + p.spec.name + "' (" + p.id +
                                   ") is paused: nothing was created; repeat the request after " +
                                   ms + " ms, or once it is resumed")
      .WithErrorCode(ErrorCode::kPipelinePaused)
      .WithDetail("retryAfterMillis", ms);
}

Result<bool> Service::PausedForWorkers(const std::string& pipeline_id) {
  const int64_t now = Clock::System()->NowMicros();
  {
    std::lock_guard lock(mu_);
    auto it = pauses_.find(pipeline_id);
    if (it != pauses_.end() && now - it->second.read_micros < options_.pause_check_micros) {
      return it->second.paused;
    }
  }
  Result<Pipeline> p = pipelines_.Get(pipeline_id);
  if (!p.ok() && !p.status().IsNotFound()) return p.status();
  const bool paused = p.ok() && p->spec.paused;
  std::lock_guard lock(mu_);
  PauseSeen& seen = pauses_[pipeline_id];
  if (seen.read_micros <= now) seen = {paused, now};  // never over a later note
  return paused;
}

void Service::NotePause(const Pipeline& p) {
  {
    std::lock_guard lock(mu_);
    pauses_[p.id] = {p.spec.paused, Clock::System()->NowMicros()};
  }
  if (!p.spec.paused) Wake();  // its queued runs may start now
}

Status Service::DeletePipeline(const CallContext& ctx, const std::string& id,
                               const std::string& if_match) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(id));
  RETURN_NOT_OK(CheckIfMatch(p, if_match));
  Status allowed = AuthorizeLoad(p, ctx.principal).status();
  // A pipeline whose table was dropped, or whose branch was deleted: the
  // owner or whoever configured it deletes it.
  if (allowed.IsNotFound() && (ctx.principal == ws_->owner() || ctx.principal == p.created_by ||
                               ctx.principal == p.updated_by)) {
    allowed = Status::OK();
  }
  RETURN_NOT_OK(allowed);
  return pipelines_.Delete(p);
}

// --- uploads -------------------------------------------------------------------------

Status Service::CheckOutstandingUploads(const std::string& principal) {
  const int64_t cap = options_.limits.max_outstanding_uploads_per_principal;
  const int64_t now = options_.clock->NowMicros();
  ASSIGN_OR_RETURN(OutstandingUploads held, uploads_.CountOutstanding(principal, now, cap));
  if (held.count < cap) return Status::OK();
  // Room comes back when the earliest of them is submitted or expires.
  const int64_t millis = std::max<int64_t>(1000, (held.earliest_expiry_micros - now + 999) / 1000);
  return Status::ResourceExhausted(
             "overloaded (maxOutstandingUploads): principal '" + principal + "' holds " +
             std::to_string(cap) +
             " uploads not yet submitted; submit them, or wait for the earliest to expire, "
             "nothing was created: repeat the request after " +
             std::to_string(millis) + " ms")
      .WithErrorCode(ErrorCode::kOverloaded)
      .WithDetail("limit", "maxOutstandingUploads")
      .WithDetail("retryAfterMillis", std::to_string(millis))
      .WithDetail("quota", std::to_string(cap));
}

UploadRecord Service::NewUploadRecord(const CallContext& ctx, const Pipeline& p,
                                      int64_t ttl_seconds) const {
  UploadRecord r;
  r.id = NewUlidString();
  r.pipeline_id = p.id;
  r.principal = ctx.principal;
  r.table_sid = p.table_sid;
  r.created_micros = options_.clock->NowMicros();
  r.expires_micros = r.created_micros + ttl_seconds * 1'000'000;
  const StagingPlace place{ws_->root(), r.created_micros, ws_->id(), ctx.principal,
                           p.id,        p.table_sid,      r.id};
  r.key = StagingDataKey(place);
  r.prefix = StagingUploadPrefix(place);
  return r;
}

Result<UploadTicket> Service::CreateUpload(const CallContext& ctx, const std::string& pipeline_id,
                                           const UploadRequest& req) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(pipeline_id));
  RETURN_NOT_OK(AuthorizeLoad(p, ctx.principal).status());
  RETURN_NOT_OK(RefuseIfPaused(p));
  RETURN_NOT_OK(admission_.TakeRequestToken(ctx.principal));
  RETURN_NOT_OK(CheckOutstandingUploads(ctx.principal));
  ASSIGN_OR_RETURN(LoadLimits limits,
                   LowerOnly(options_.limits.Ceiling(), p.spec.limits, "pipeline"));
  if (req.size > static_cast<uint64_t>(*limits.max_run_bytes)) {
    return Status::ResourceExhausted("an upload of " + std::to_string(req.size) +
                                     " bytes is over the run limit of " +
                                     std::to_string(*limits.max_run_bytes) + " bytes")
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxRunBytes");
  }
  RETURN_NOT_OK(CheckFileName(req.file_name));
  if (!req.sha256.empty() && !IsSha256Hex(req.sha256)) {
    return Status::InvalidArgument("sha256 must be 64 lower-case hex digits");
  }
  const int64_t ttl = req.ttl_seconds == 0 ? options_.limits.upload_ttl_seconds : req.ttl_seconds;
  if (ttl < 1 || ttl > options_.limits.max_upload_ttl_seconds) {
    return Status::InvalidArgument("an upload expires after 1 to " +
                                   std::to_string(options_.limits.max_upload_ttl_seconds) + " s");
  }
  UploadRecord r = NewUploadRecord(ctx, p, ttl);
  r.size = req.size;
  r.sha256 = req.sha256;
  r.content_type = req.content_type;
  r.file_name = req.file_name;
  RETURN_NOT_OK(uploads_.Create(r));

  UploadTicket t;
  t.upload_id = r.id;
  t.expires_micros = r.expires_micros;
  if (options_.presign) {
    t.headers.emplace_back("content-length", std::to_string(req.size));
    t.headers.emplace_back("if-none-match", "*");  // received once, never overwritten
    if (!req.sha256.empty()) t.headers.emplace_back("x-amz-content-sha256", req.sha256);
    ASSIGN_OR_RETURN(t.url, options_.presign(r.key, ttl, t.headers));
  } else {
    t.token = SignUploadToken({r.id, r.key, r.expires_micros / 1'000'000, r.size, r.sha256},
                              options_.upload_secret);
  }
  return t;
}

Status Service::AcceptUpload(const std::string& upload_id, std::string_view token,
                             ByteSource& body) {
  if (options_.presign) {
    return Status::PermissionDenied("this workspace takes uploads at their presigned S3 URL");
  }
  ASSIGN_OR_RETURN(UploadGrant g, VerifyUploadToken(token, options_.upload_secret,
                                                    options_.clock->NowMicros() / 1'000'000));
  if (g.upload_id != upload_id) {
    return Status::PermissionDenied("upload token refused: it is for another upload");
  }
  std::string etag;
  ASSIGN_OR_RETURN(UploadRecord r, uploads_.Get(upload_id, &etag));
  if (r.key != g.key || r.size != g.size || r.sha256 != g.sha256) {
    return Status::PermissionDenied("upload token refused: it does not match the upload");
  }
  ASSIGN_OR_RETURN(Admission::UploadSlot slot, admission_.ReceiveUpload(upload_id, r.principal));
  return StoreUpload(std::move(r), std::move(etag), body);
}

Result<UploadStatus> Service::GetUpload(const CallContext& ctx, const std::string& upload_id) {
  RETURN_NOT_OK(CheckContext(ctx));
  Result<UploadRecord> r = uploads_.Get(upload_id);
  if (r.ok() && r->principal != ctx.principal)
    r = Status::NotFound("no upload '" + upload_id + "'");
  RETURN_NOT_OK(r.status());
  UploadStatus out;
  out.record = *std::move(r);
  Result<ObjectMeta> there = ws_->store()->Head(out.record.key);
  if (!there.ok() && !there.status().IsNotFound()) return there.status();
  out.received = there.ok() && there->size == out.record.size;
  return out;
}

Result<Usage> Service::GetUsage(const CallContext& ctx) {
  RETURN_NOT_OK(CheckContext(ctx));
  Usage u;
  ASSIGN_OR_RETURN(u.queue, CurrentLoad());
  ASSIGN_OR_RETURN(std::vector<Pipeline> pipelines, ListPipelines(ctx));
  std::vector<std::string> ids;
  for (const Pipeline& p : pipelines) ids.push_back(p.id);
  u.principal = admission_.UsageOf(ctx.principal, ids);
  const int64_t cap = options_.limits.max_outstanding_uploads_per_principal;
  ASSIGN_OR_RETURN(u.outstanding,
                   uploads_.CountOutstanding(ctx.principal, options_.clock->NowMicros(), cap));
  return u;
}

Status Service::StoreUpload(UploadRecord r, std::string etag, ByteSource& body) {
  const UploadGrant g{r.id, r.key, 0, r.size, r.sha256};
  const std::string& upload_id = r.id;
  HashingSource hashing(body, g.size);
  hashing.at_end = [&g](HashingSource& h) -> Status {
    if (h.bytes() != g.size) {
      return Status::InvalidArgument("the body has " + std::to_string(h.bytes()) +
                                     " bytes, the upload declared " + std::to_string(g.size) +
                                     "; nothing was stored");
    }
    if (!g.sha256.empty() && h.HexDigest() != g.sha256) {
      return Status::InvalidArgument(
          "the body's SHA-256 differs from the declared one; nothing was stored");
    }
    return Status::OK();
  };
  Status stored = ws_->store()->Write(r.key, hashing, {PutCondition::kIfAbsent}).status();
  if (stored.IsAlreadyExists()) {
    return Status::AlreadyExists("upload " + upload_id + " was already received");
  }
  RETURN_NOT_OK(stored);
  r.received_sha256 = hashing.HexDigest();
  Status noted = uploads_.Update(r, etag);
  if (noted.IsAborted()) {  // claimed by a submission meanwhile: note it on the new record
    ASSIGN_OR_RETURN(UploadRecord again, uploads_.Get(upload_id, &etag));
    again.received_sha256 = r.received_sha256;
    noted = uploads_.Update(again, etag);
  }
  return noted;
}

}  // namespace loam::service
