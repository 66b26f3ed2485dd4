// Service: inline submissions, whose data travels in the request itself.
#include <nlohmann/json.hpp>

#include "common/status_macros.h"
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
  const auto stage = [&](const RequestRecord* resuming) -> Result<SubmitBody> {
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
    ASSIGN_OR_RETURN(Pipeline p, pipelines_.Get(pipeline_id));
    if (csv != (p.spec.format == ingest::InputFormat::kCsv)) {
      return Status::InvalidArgument("pipeline '" + p.spec.name + "' loads " +
                                     (csv ? "JSON Lines" : "CSV") + ", not " + load.content_type);
    }
    UploadRequest req;
    req.size = load.data.size();
    req.sha256 = sha;
    req.content_type = load.content_type;
    ASSIGN_OR_RETURN(UploadTicket t, CreateUpload(ctx, pipeline_id, req));
    staged.push_back(t.upload_id);
    std::string etag;
    ASSIGN_OR_RETURN(UploadRecord r, uploads_.Get(t.upload_id, &etag));
    StringSource data(load.data);
    RETURN_NOT_OK(StoreUpload(std::move(r), std::move(etag), data));
    b.uploads = {t.upload_id};
    return b;
  };
  Result<Submission> out = Submit(ctx, pipeline_id, std::string(idempotency_key),
                                  Fingerprint(identity.dump(), pipeline_id), stage);
  // A refusal leaves nothing behind: what this request staged and no run
  // claimed goes now (the staging sweeper would, a day later).
  for (const std::string& id : staged) {
    Result<UploadRecord> r = uploads_.Get(id);
    if (!r.ok() || !r->run_id.empty()) continue;
    static_cast<void>(ws_->store()->Delete(r->key));
    static_cast<void>(uploads_.Delete(id));
  }
  return out;
}

}  // namespace loam::service
