// Api routes: health, metrics, the OpenAPI document, limits, usage, tables,
// pipelines and uploads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "server/api.h"
#include "server/listing_page.h"
#include "server/problem.h"

namespace loam::server {

using nlohmann::json;

namespace {

json TableJson(const service::TableInfo& t) {
  json j = {{"name", t.name},
            {"tableId", t.table_id},
            {"columns", json::parse(SchemaToJson(t.schema))},
            {"keys", t.keys},
            {"version", t.table_version},
            {"rowCount", t.row_count},
            {"schemaVersion", t.schema_version},
            {"manifestVersion", t.manifest_version},
            {"additiveSchema", t.additive_schema}};
  if (!t.grants.empty()) {
    json grants = json::array();
    for (const Grant& g : t.grants) {
      grants.push_back({{"principal", g.principal}, {"role", RoleName(g.role)}});
    }
    j["grants"] = grants;
  }
  return j;
}

Result<json> ParseBody(const std::string& body, const char* what) {
  return ParseJsonObject(body, what);
}

}  // namespace

Response Api::Healthz(Call&) { return JsonResponse(200, {{"status", "ok"}}); }

Response Api::Readyz(Call&) {
  if (!svc_->workers_running()) {
    return Problem(Status::Unavailable("the service's workers are not running"));
  }
  Result<uint64_t> version = svc_->CurrentManifestVersion();
  if (!version.ok())
    return Problem(Status::Unavailable("workspace unreachable: " + version.status().message()));
  return JsonResponse(
      200,
      {{"status", "ready"}, {"workspaceId", svc_->workspace_id()}, {"manifestVersion", *version}});
}

Response Api::Metrics(Call&) {
  GaugeSample g;
  if (Result<service::QueueLoad> load = svc_->QueueLoadNow(); load.ok()) {
    g.queue_runs = load->runs;
    g.queue_bytes = load->bytes;
  }
  g.leases_held = svc_->RunsActive();
  if (Result<int64_t> backlog = svc_->CleanupBacklog(); backlog.ok()) {
    g.cleanup_backlog_seconds = static_cast<double>(*backlog) / 1e6;
  }
  if (options_.in_flight) g.in_flight_requests = options_.in_flight();
  Response r{http::status::ok, 11};
  r.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
  r.body() = metrics_.Render(g);
  return r;
}

Response Api::OpenApi(Call&) {
  Response r{http::status::ok, 11};
  r.set(http::field::content_type, "application/json");
  r.body() = options_.openapi_json;
  return r;
}

Response Api::GetLimits(Call&) {
  Response r{http::status::ok, 11};
  r.set(http::field::content_type, "application/json");
  r.body() = svc_->Limits() + "\n";
  return r;
}

Response Api::GetUsage(Call& c) {
  Result<service::Usage> u = svc_->GetUsage(c.ctx);
  if (!u.ok()) return Problem(u.status());
  const service::ServiceLimits& l = svc_->limits();
  json pipelines = json::object();
  for (const auto& [id, tiny] : u->principal.tiny_runs_last_minute) {
    auto active = u->queue.runs_per_pipeline.find(id);
    pipelines[id] = {
        {"activeRuns", active == u->queue.runs_per_pipeline.end() ? 0 : active->second},
        {"tinyRunsLastMinute", tiny}};
  }
  const json out = {
      {"principal", c.ctx.principal},
      {"queue",
       {{"runs", u->queue.runs},
        {"bytes", u->queue.bytes},
        {"maxRuns", l.max_queued_runs},
        {"maxBytes", l.max_queued_bytes}}},
      {"requests",
       {{"tokens", std::floor(u->principal.request_tokens)},
        {"burst", l.principal_burst},
        {"perSecond", l.principal_requests_per_second}}},
      {"uploads",
       {{"outstanding", u->outstanding.count},
        {"maxOutstanding", l.max_outstanding_uploads_per_principal},
        {"receiving", u->principal.receiving_uploads},
        {"maxReceiving", l.max_receiving_uploads_per_principal}}},
      {"tinyRuns", {{"belowBytes", l.tiny_run_bytes}, {"perMinute", l.tiny_runs_per_minute}}},
      {"pipelines", pipelines}};
  return JsonResponse(200, out);
}

// --- tables -------------------------------------------------------------------

Response Api::CreateTable(Call& c) {
  Result<WriteResult> w = svc_->CreateTable(c.ctx, c.body);
  if (!w.ok()) return Problem(w.status());
  Result<service::TableInfo> t = svc_->DescribeTable(c.ctx, StringAt(ParseJson(c.body), "name"));
  if (!t.ok()) return Problem(t.status());
  Response r = JsonResponse(201, TableJson(*t));
  r.set(http::field::location, "/v1/tables/" + t->name);
  return r;
}

Response Api::ListTables(Call& c) {
  Result<std::vector<service::TableInfo>> tables = svc_->ListTables(c.ctx);
  if (!tables.ok()) return Problem(tables.status());
  Result<json> page = ListingPage(
      std::move(*tables), c.target, "tables", [](const service::TableInfo& t) { return t.name; },
      TableJson);
  if (!page.ok()) return Problem(page.status());
  return JsonResponse(200, *page);
}

namespace {

// The one If-Match of a request ("" when absent); InvalidArgument when sent
// twice or as a list (one state is named at a time).
Result<std::string> IfMatch(const RequestHeader& h) {
  ASSIGN_OR_RETURN(std::string value, OneHeader(h, "If-Match"));
  if (value.find(',') != std::string::npos) {
    return Status::InvalidArgument("send one If-Match entity tag (from ETag), not a list");
  }
  return value;
}

// A table's entity tag: its head commit, marked when the grants are shown.
std::string TableEtag(const service::TableInfo& t) {
  return "\"" + t.head_commit + (t.grants.empty() ? "" : "-g") + "\"";
}

// The head commit an If-Match names ("" for none or "*"); a value that is
// no table tag names no commit and matches none.
Result<std::string> IfMatchCommit(const RequestHeader& h) {
  ASSIGN_OR_RETURN(std::string tag, IfMatch(h));
  if (tag.empty() || tag == "*") return std::string();
  if (tag.size() < 3 || tag.front() != '"' || tag.back() != '"') return std::string("-");
  std::string commit = tag.substr(1, tag.size() - 2);
  if (commit.ends_with("-g")) commit.resize(commit.size() - 2);
  return commit.empty() ? std::string("-") : commit;
}

}  // namespace

// A table's answer changes with its head commit, and with whether the
// caller is shown its grants; If-None-Match naming it is 304.
Response Api::GetTable(Call& c) {
  Result<service::TableInfo> t = svc_->DescribeTable(c.ctx, c.params["name"]);
  if (!t.ok()) return Problem(t.status());
  const std::string etag = TableEtag(*t);
  Result<std::string> if_none = OneHeader(c.header, "If-None-Match");
  if (!if_none.ok()) return Problem(if_none.status());
  Response r =
      (*if_none == etag || *if_none == "*") ? EmptyResponse(304) : JsonResponse(200, TableJson(*t));
  r.set(http::field::etag, etag);
  return r;
}

Response Api::GetRows(Call& c) {
  service::RowQuery q;
  for (const auto& [name, value] : c.target.query) {
    if (name == "where" || name == "branch") {
      (name == "where" ? q.where : q.branch) = value;
      continue;
    }
    Result<int64_t> n = ParseQueryInt(name, value, 0, std::numeric_limits<int64_t>::max());
    if (!n.ok()) return Problem(n.status());
    (name == "limit" ? q.limit : q.manifest_version) = *n;
  }
  // Up to rows_chunk the answer goes whole; beyond, in chunks as the scan
  // produces them, so no answer is held in memory. Errors found before the
  // first chunk (grant, table, where, version) are still problems; one after
  // it cuts the body short, which the client sees as an incomplete answer.
  Response head{http::status::ok, 11};
  head.set(http::field::content_type, "application/x-ndjson");
  head.set("Request-Id", c.request_id);
  std::string pending;
  StreamSlot slot(this, c.ctx.principal);
  const auto flush = [&]() -> Status {
    if (!c.out->begun()) {
      RETURN_NOT_OK(slot.Take());
      RETURN_NOT_OK(c.out->Begin(head));
    }
    Status s = c.out->Write(pending);
    pending.clear();
    return s;
  };
  Status s = svc_->ReadRows(c.ctx, c.params["name"], q, [&](std::string_view rows) -> Status {
    pending += rows;
    return pending.size() < options_.rows_chunk ? Status::OK() : flush();
  });
  if (!c.out->begun()) {
    if (!s.ok()) return Problem(s);
    head.body() = std::move(pending);
    return head;
  }
  if (s.ok()) s = flush();
  if (s.ok()) s = c.out->End();
  if (!s.ok()) c.cut_short = ErrorCodeName(s.error_code());
  return head;  // the status that went out
}

Status Api::StreamSlot::Take() {
  std::lock_guard lock(api_->streams_mu_);
  int& mine = api_->streams_per_principal_[principal_];
  if (mine >= api_->options_.max_streams_per_principal) {
    const std::string cap = std::to_string(api_->options_.max_streams_per_principal);
    return Status::ResourceExhausted(
               "overloaded (maxRowStreamsPerPrincipal): this principal reads " + cap +
               " streamed answers already; finish one, then repeat "
               "the request after 1000 ms")
        .WithErrorCode(ErrorCode::kOverloaded)
        .WithDetail("limit", "maxRowStreamsPerPrincipal")
        .WithDetail("retryAfterMillis", "1000")
        .WithDetail("quota", cap);
  }
  ++mine;
  held_ = true;
  return Status::OK();
}

Api::StreamSlot::~StreamSlot() {
  if (!held_) return;
  std::lock_guard lock(api_->streams_mu_);
  auto it = api_->streams_per_principal_.find(principal_);
  if (it != api_->streams_per_principal_.end() && --it->second <= 0) {
    api_->streams_per_principal_.erase(it);
  }
}

Response Api::GetHistory(Call& c) {
  Result<std::vector<TableHistoryEntry>> h = svc_->TableHistory(c.ctx, c.params["name"]);
  if (!h.ok()) return Problem(h.status());
  json out = json::array();
  for (const TableHistoryEntry& e : *h) {
    json j = {{"event", e.event},
              {"tableVersion", e.table_version},
              {"commitId", e.commit_id},
              {"actor", e.actor},
              {"createdAt", Rfc3339(e.created_micros)}};
    if (e.row_count) j["rowCount"] = *e.row_count;
    if (!e.detail.empty()) j["detail"] = e.detail;
    if (!e.run_ids.empty()) j["runIds"] = e.run_ids;
    out.push_back(std::move(j));
  }
  return JsonResponse(200, {{"table", c.params["name"]}, {"history", out}});
}

Response Api::PutGrant(Call& c) {
  Result<json> j = ParseBody(c.body, "grant");
  if (!j.ok()) return Problem(j.status());
  StrictObject o(*j, "grant");
  std::string role_name;
  Status s = o.String("role", &role_name, /*required=*/true);
  if (s.ok()) s = o.Finish();
  Result<Role> role = s.ok() ? ParseRole(role_name) : Result<Role>(s);
  if (!role.ok()) return Problem(role.status());
  Result<std::string> if_head = IfMatchCommit(c.header);
  if (!if_head.ok()) return Problem(if_head.status());
  s = svc_->SetTableGrant(c.ctx, c.params["name"], c.params["principal"], *role, *if_head);
  if (!s.ok()) return Problem(s);
  return JsonResponse(
      200,
      {{"table", c.params["name"]}, {"principal", c.params["principal"]}, {"role", role_name}});
}

Response Api::DeleteGrant(Call& c) {
  Result<std::string> if_head = IfMatchCommit(c.header);
  if (!if_head.ok()) return Problem(if_head.status());
  Status s =
      svc_->SetTableGrant(c.ctx, c.params["name"], c.params["principal"], std::nullopt, *if_head);
  if (!s.ok()) return Problem(s);
  return EmptyResponse(204);
}

// --- pipelines ----------------------------------------------------------------

namespace {

// The stored document, with `paused` also when false.
json PipelineJson(const service::Pipeline& p) {
  json doc = p.ToJson();
  doc["paused"] = p.spec.paused;
  return doc;
}

// A pipeline's answer, with its entity tag.
Response PipelineResponse(int status, const service::Pipeline& p) {
  Response r = JsonResponse(status, PipelineJson(p));
  r.set(http::field::etag, p.Etag());
  return r;
}

}  // namespace

Response Api::CreatePipeline(Call& c) {
  Result<service::Pipeline> p = svc_->CreatePipeline(c.ctx, c.body);
  if (!p.ok()) return Problem(p.status());
  Response r = PipelineResponse(201, *p);
  r.set(http::field::location, "/v1/pipelines/" + p->id);
  return r;
}

Response Api::ListPipelines(Call& c) {
  Result<std::vector<service::Pipeline>> ps = svc_->ListPipelines(c.ctx);
  if (!ps.ok()) return Problem(ps.status());
  Result<json> page = ListingPage(
      std::move(*ps), c.target, "pipelines", [](const service::Pipeline& p) { return p.id; },
      [](const service::Pipeline& p) { return PipelineJson(p); });
  if (!page.ok()) return Problem(page.status());
  return JsonResponse(200, *page);
}

Response Api::GetPipeline(Call& c) {
  Result<service::Pipeline> p = svc_->GetPipeline(c.ctx, c.params["id"]);
  if (!p.ok()) return Problem(p.status());
  return PipelineResponse(200, *p);
}

Response Api::PatchPipeline(Call& c) {
  Result<std::string> if_match = IfMatch(c.header);
  if (!if_match.ok()) return Problem(if_match.status());
  Result<service::Pipeline> p = svc_->UpdatePipeline(c.ctx, c.params["id"], c.body, *if_match);
  if (!p.ok()) return Problem(p.status());
  return PipelineResponse(200, *p);
}

Response Api::DeletePipeline(Call& c) {
  Result<std::string> if_match = IfMatch(c.header);
  if (!if_match.ok()) return Problem(if_match.status());
  Status s = svc_->DeletePipeline(c.ctx, c.params["id"], *if_match);
  if (!s.ok()) return Problem(s);
  return EmptyResponse(204);
}

// --- uploads --------------------------------------------------------------------

Response Api::CreateUpload(Call& c) {
  Result<json> j = ParseBody(c.body, "upload");
  if (!j.ok()) return Problem(j.status());
  StrictObject o(*j, "upload");
  service::UploadRequest req;
  Status s = o.Int("size", &req.size, 0, int64_t{1} << 50);
  if (s.ok() && o.Field("size") == nullptr) s = o.Bad("size", "given (the upload's bytes)");
  if (s.ok()) s = o.String("sha256", &req.sha256);
  if (s.ok()) s = o.String("contentType", &req.content_type);
  if (s.ok()) s = o.String("fileName", &req.file_name);
  if (s.ok()) s = o.Int("ttlSeconds", &req.ttl_seconds, 1, int64_t{1} << 31);
  if (s.ok()) s = o.Finish();
  if (!s.ok()) return Problem(s);
  Result<service::UploadTicket> t = svc_->CreateUpload(c.ctx, c.params["id"], req);
  if (!t.ok()) return Problem(t.status());
  json headers = json::object();
  for (const auto& [name, value] : t->headers) headers[name] = value;
  std::string url = t->url;
  if (url.empty()) {
    url = options_.public_url + "/v1/uploads/" + t->upload_id + "?token=" + t->token;
    headers["content-length"] = std::to_string(req.size);
  }
  return JsonResponse(201, {{"uploadId", t->upload_id},
                            {"url", url},
                            {"method", t->method},
                            {"headers", headers},
                            {"expiresAt", Rfc3339(t->expires_micros)}});
}

Response Api::GetUpload(Call& c) {
  Result<service::UploadStatus> u = svc_->GetUpload(c.ctx, c.params["uploadId"]);
  if (!u.ok()) return Problem(u.status());
  const service::UploadRecord& r = u->record;
  json out = {{"uploadId", r.id},
              {"pipelineId", r.pipeline_id},
              {"size", r.size},
              {"received", u->received},
              {"expiresAt", Rfc3339(r.expires_micros)}};
  if (!r.sha256.empty()) out["sha256"] = r.sha256;
  if (!r.file_name.empty()) out["fileName"] = r.file_name;
  if (!r.run_id.empty()) out["runId"] = r.run_id;
  if (!r.validated_by.empty()) out["validatedBy"] = r.validated_by;
  return JsonResponse(200, out);
}

Response Api::PutUpload(Call& c) {
  auto token = c.target.query.find("token");
  if (token == c.target.query.end()) {
    return Problem(Status::PermissionDenied("an upload URL carries its token; this one has none"));
  }
  Status s = svc_->AcceptUpload(c.params["uploadId"], token->second, *c.stream);
  // A body over the size its ticket declared is a request body over its
  // limit: 413 (docs/errors.md), not the 422 of a load limit.
  if (s.Is(ErrorCode::kLimitExceeded)) {
    Response r = JsonResponse(413, ProblemDocument(s, 413));
    r.set(http::field::content_type, "application/problem+json");
    return r;
  }
  if (!s.ok()) return Problem(s);
  return JsonResponse(200, {{"uploadId", c.params["uploadId"]}, {"received", true}});
}

}  // namespace loam::server
