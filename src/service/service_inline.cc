// Service: inline submissions, whose data travels in the request itself.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "common/utf8.h"
#include "service/service.h"
#include "service/staging.h"

namespace loam::service {

Result<Submission> Service::SubmitInline(const CallContext& ctx, const std::string& pipeline_id,
                                         std::string_view idempotency_key, const InlineLoad& load) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(CheckIdempotencyKey(idempotency_key));
  const bool csv = load.content_type == "text/csv";
  if (!csv && load.content_type != "application/x-ndjson") {
    return Status::InvalidArgument("inline data is text/csv or application/x-ndjson, not '" +
                                   load.content_type + "'");
  }
  if (!load.source_id.empty()) RETURN_NOT_OK(CheckSourceId(load.source_id));
  const std::string sha = Sha256Hex(load.data);
  nlohmann::json identity = {
      {"inline",
       {{"sha256", sha}, {"size", load.data.size()}, {"contentType", load.content_type}}}};
  if (!load.source_id.empty()) identity["source"] = {{"id", load.source_id}};
  if (load.reload) identity["reload"] = true;
  std::vector<std::string> staged;  // upload ids this request stored
  // Called only when the key is new or its creation stopped half way (a
  // replay never stages): the pipeline as it is now must take this data. A
  // creation finished for a request that stopped uses the upload that
  // request staged (and may have claimed) while it is still there.
  const auto stage = [&](const Pipeline& p, const RequestRecord* resuming) -> Result<SubmitBody> {
    SubmitBody b;
    b.source_id = load.source_id;
    b.reload = load.reload;
    b.staged_here = true;
    if (resuming != nullptr && !resuming->staged_uploads.empty()) {
      bool there = true;
      for (const std::string& id : resuming->staged_uploads) {
        Result<UploadRecord> r = uploads_.Get(id);
        there = there && r.ok() && !r->received_sha256.empty();
      }
      if (there) {
        b.uploads = resuming->staged_uploads;
        return b;
      }
    }
    if (csv != (p.spec.format == ingest::InputFormat::kCsv)) {
      return Status::InvalidArgument("pipeline '" + p.spec.name + "' loads " +
                                     (csv ? "JSON Lines" : "CSV") + ", not " + load.content_type);
    }
    b.run_id = resuming != nullptr ? resuming->run_id : NewUlidString();
    if (!load.data.empty() &&
        static_cast<int64_t>(load.data.size()) <= options_.inline_record_bytes &&
        IsValidUtf8(load.data)) {
      b.record_input = load.data;
      b.record_input_sha256 = sha;
      return b;
    }
    ASSIGN_OR_RETURN(UploadRecord r, StageInline(ctx, p, load, sha, b.run_id));
    staged.push_back(r.id);
    b.uploads = {r.id};
    b.staged = {std::move(r)};
    return b;
  };
  Result<Submission> out = Submit(ctx, pipeline_id, std::string(idempotency_key),
                                  Fingerprint(identity.dump(), pipeline_id), stage);
  if (out.ok() || staged.empty()) return out;
  // A refusal leaves nothing behind: what this request staged goes now (the
  // staging sweeper would, a day later), unless the key's reservation names
  // it, for a retry to finish the creation with.
  Result<std::optional<RequestRecord>> kept =
      requests_.Find(ctx.principal, std::string(idempotency_key));
  for (const std::string& id : staged) {
    if (!kept.ok()) break;
    const RequestRecord* r = kept->has_value() ? &**kept : nullptr;
    if (r != nullptr && std::find(r->staged_uploads.begin(), r->staged_uploads.end(), id) !=
                            r->staged_uploads.end()) {
      continue;
    }
    Result<UploadRecord> u = uploads_.Get(id);
    if (!u.ok()) continue;
    NoteCleanupFailure("removing an inline upload", ws_->store()->Delete(u->key));
    NoteCleanupFailure("removing an inline upload's record", uploads_.Delete(id));
  }
  return out;
}

Result<UploadRecord> Service::StageInline(const CallContext& ctx, const Pipeline& p,
                                          const InlineLoad& load, const std::string& sha256,
                                          const std::string& run_id) {
  // The request itself is admitted by the submission (one request token):
  // staging takes none, and an inline upload is never outstanding.
  ASSIGN_OR_RETURN(LoadLimits limits,
                   LowerOnly(options_.limits.Ceiling(), p.spec.limits, "pipeline"));
  if (static_cast<int64_t>(load.data.size()) > *limits.max_run_bytes) {
    return Status::ResourceExhausted("the inline data holds " + std::to_string(load.data.size()) +
                                     " bytes, over the run limit of " +
                                     std::to_string(*limits.max_run_bytes))
        .WithErrorCode(ErrorCode::kLimitExceeded)
        .WithDetail("limit", "maxRunBytes");
  }
  UploadRecord r = NewUploadRecord(ctx, p, options_.limits.upload_ttl_seconds);
  r.size = load.data.size();
  r.sha256 = r.received_sha256 = sha256;
  r.content_type = load.content_type;
  r.run_id = run_id;
  // The data first: a record always names data that is there (the staging
  // sweeper removes data whose record never came).
  RETURN_NOT_OK(ws_->store()->PutIfAbsent(r.key, load.data).status());
  RETURN_NOT_OK(uploads_.CreateRecord(r));
  return r;
}

}  // namespace loam::service
