#include "server/server.h"

#include <openssl/rand.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "server/openapi.h"
#include "sql/sql.h"

namespace loam::server {

namespace {

Result<std::string> ReadWholeFile(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::InvalidArgument(std::string("cannot read the ") + what + " '" + path + "'");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A secret file's bytes without a trailing newline.
Result<std::string> ReadSecret(const std::string& path, const char* what) {
  ASSIGN_OR_RETURN(std::string s, ReadWholeFile(path, what));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// The health listener's handler: the API's probes, and 404 for anything else.
class ProbesOnly : public HttpHandler {
 public:
  explicit ProbesOnly(Api* api) : api_(api) {}
  BodyPlan PlanBody(const RequestHeader&) override { return {false, 0, {}}; }
  Response Handle(const Request& request, ChunkedBody& out, const std::any& context) override {
    const std::string_view target = request.target();
    const std::string_view path = target.substr(0, target.find('?'));
    if (request.method() == http::verb::get &&
        (path == "/healthz" || path == "/readyz" || path == "/metrics")) {
      return api_->Handle(request, out, context);
    }
    return api_->Refuse(request.base(), http::status::not_found,
                        Status::NotFound("the health listener answers only /healthz, /readyz "
                                         "and /metrics"));
  }
  Response HandleStream(const RequestHeader& header, ByteSource&, const std::any&) override {
    return api_->Refuse(header, http::status::not_found,
                        Status::NotFound("the health listener takes no bodies"));
  }
  Response Refuse(const RequestHeader& header, http::status status, const Status& why) override {
    return api_->Refuse(header, status, why);
  }

 private:
  Api* api_;
};

Result<std::pair<std::string, uint16_t>> SplitListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::InvalidArgument("--listen takes HOST:PORT, e.g. 127.0.0.1:8080");
  }
  char* end = nullptr;
  const std::string port = listen.substr(colon + 1);
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return Status::InvalidArgument("--listen: '" + port + "' is not a port");
  }
  return std::make_pair(listen.substr(0, colon), static_cast<uint16_t>(p));
}

Result<std::string> UploadSecret(const ServerConfig& c) {
  if (!c.upload_secret_file.empty()) {
    ASSIGN_OR_RETURN(std::string s, ReadSecret(c.upload_secret_file, "upload secret file"));
    if (s.size() < 32) {
      return Status::InvalidArgument("the upload secret must be at least 32 bytes; this one has " +
                                     std::to_string(s.size()));
    }
    return s;
  }
  if (!c.hs256_secret_file.empty()) {
    ASSIGN_OR_RETURN(std::string s, ReadSecret(c.hs256_secret_file, "HS256 secret file"));
    return s + "/loam upload tokens";  // a key of its own, derived
  }
  std::string s(32, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(s.data()), 32) != 1) {
    return Status::Internal("no random bytes for the upload secret");
  }
  return s;
}

}  // namespace

Result<ServerConfig> ServerConfig::FromJsonFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path, "config file"));
  ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonObject(text, path));
  ServerConfig c;
  StrictObject o(j, path);
  RETURN_NOT_OK(o.String("listen", &c.listen));
  RETURN_NOT_OK(o.String("publicUrl", &c.public_url));
  RETURN_NOT_OK(o.Int("workers", &c.workers, 0, 256));
  RETURN_NOT_OK(o.Int("smallRunWorkers", &c.small_run_workers, 0, 256));
  RETURN_NOT_OK(o.Int("groupCommitRuns", &c.group_commit_runs, 1, 1024));
  RETURN_NOT_OK(o.Int("groupCommitIntervalMillis", &c.group_commit_interval_millis, 0, 1000));
  RETURN_NOT_OK(o.Int("inlineRecordBytes", &c.inline_record_bytes, 0, 1 << 20));
  RETURN_NOT_OK(o.Int("compactionIntervalSeconds", &c.compaction_interval_seconds, 0, 86400));
  RETURN_NOT_OK(o.Int("compactionMinFragments", &c.compaction_min_fragments, 2, 1 << 20));
  RETURN_NOT_OK(o.Int("compactionTargetRows", &c.compaction_target_rows, 2, int64_t{1} << 32));
  RETURN_NOT_OK(o.Int("retentionIntervalSeconds", &c.retention_interval_seconds, 0, 7 * 86400));
  RETURN_NOT_OK(o.Int("leaseSeconds", &c.lease_seconds, 5, 3600));
  RETURN_NOT_OK(o.Int("keyMemoryMiB", &c.key_memory_mib, 1, int64_t{1} << 20));
  RETURN_NOT_OK(o.String("scratchDirectory", &c.scratch_dir));
  RETURN_NOT_OK(o.Int("ioThreads", &c.http.io_threads, 1, 256));
  RETURN_NOT_OK(o.Int("handlerThreads", &c.http.handler_threads, 1, 1024));
  RETURN_NOT_OK(o.Int("maxConnections", &c.http.max_connections, 1, 1 << 20));
  RETURN_NOT_OK(o.Int("uploadThreads", &c.http.upload_threads, 1, 1024));
  RETURN_NOT_OK(o.Int("maxConnectionsPerClient", &c.http.max_connections_per_client, 1, 1 << 20));
  RETURN_NOT_OK(o.Int("maxStreamsPerPrincipal", &c.max_streams_per_principal, 1, 1024));
  RETURN_NOT_OK(o.Int("sqlTimeBudgetMillis", &c.sql.time_budget_millis, 1, 3'600'000));
  RETURN_NOT_OK(o.Int("sqlMaxRows", &c.sql.max_rows, 1, int64_t{1} << 40));
  RETURN_NOT_OK(o.Int("sqlMaxValueBytes", &c.sql.max_value_bytes, 1 << 10, 1 << 30));
  RETURN_NOT_OK(o.Int("sqlHeapBytes", &c.sql_heap_bytes, 0, int64_t{1} << 40));
  RETURN_NOT_OK(o.Int("maxRunWaitSeconds", &c.max_run_wait_seconds, 0, 3600));
  RETURN_NOT_OK(o.Int("runWaitPollMillis", &c.run_wait_poll_millis, 10, 60'000));
  RETURN_NOT_OK(o.Int("minTransferRate", &c.http.min_transfer_rate, 1, int64_t{1} << 30));
  RETURN_NOT_OK(
      o.Int("maxBufferedBodyBytes", &c.http.max_buffered_bytes, 1 << 20, int64_t{1} << 40));
  RETURN_NOT_OK(o.String("authHs256SecretFile", &c.hs256_secret_file));
  RETURN_NOT_OK(o.String("authPublicKeyFile", &c.public_key_file));
  RETURN_NOT_OK(o.String("authJwksFile", &c.jwks_file));
  RETURN_NOT_OK(o.String("authIssuer", &c.issuer));
  RETURN_NOT_OK(o.String("authAudience", &c.audience));
  RETURN_NOT_OK(o.Int("authLeewaySeconds", &c.leeway_seconds, 0, 300));
  RETURN_NOT_OK(o.String("uploadSecretFile", &c.upload_secret_file));
  RETURN_NOT_OK(o.Bool("accessLog", &c.access_log));
  RETURN_NOT_OK(o.String("healthListen", &c.health_listen));
  if (const nlohmann::json* a = o.Field("admission"); a != nullptr) {
    if (!a->is_object()) return o.Bad("admission", "an object");
    StrictObject ao(*a, path + " admission");
    service::ServiceLimits& l = c.limits;
    RETURN_NOT_OK(ao.Int("maxQueuedRuns", &l.max_queued_runs, 1, int64_t{1} << 40));
    RETURN_NOT_OK(ao.Int("maxQueuedBytes", &l.max_queued_bytes, 1, int64_t{1} << 60));
    RETURN_NOT_OK(
        ao.Int("maxConcurrentRunsPerPipeline", &l.max_concurrent_runs_per_pipeline, 1, 1 << 20));
    RETURN_NOT_OK(
        ao.Number("principalRequestsPerSecond", &l.principal_requests_per_second, 0.001, 1e9));
    RETURN_NOT_OK(ao.Number("principalBurst", &l.principal_burst, 1, 1e9));
    RETURN_NOT_OK(ao.Int("tinyRunsPerMinute", &l.tiny_runs_per_minute, 1, int64_t{1} << 40));
    RETURN_NOT_OK(ao.Int("maxQueueWaitSeconds", &l.max_queue_wait_seconds, 0, 86'400));
    RETURN_NOT_OK(ao.Int("maxOutstandingUploadsPerPrincipal",
                         &l.max_outstanding_uploads_per_principal, 1, 1 << 20));
    RETURN_NOT_OK(ao.Int("maxReceivingUploadsPerPrincipal", &l.max_receiving_uploads_per_principal,
                         1, 1 << 20));
    RETURN_NOT_OK(ao.Finish());
  }
  RETURN_NOT_OK(o.Finish());
  return c;
}

Result<std::shared_ptr<JwtVerifier>> LoadVerifier(const ServerConfig& c) {
  const int sources =
      !c.hs256_secret_file.empty() + !c.public_key_file.empty() + !c.jwks_file.empty();
  if (sources != 1) {
    return Status::InvalidArgument(
        "configure exactly one of --auth-hs256-secret-file, --auth-public-key-file and "
        "--auth-jwks-file (" +
        std::to_string(sources) + " given)");
  }
  JwtPolicy policy;
  policy.issuer = c.issuer;
  policy.audience = c.audience;
  policy.leeway_seconds = c.leeway_seconds;
  if (!c.hs256_secret_file.empty()) {
    ASSIGN_OR_RETURN(std::string secret, ReadSecret(c.hs256_secret_file, "HS256 secret file"));
    return JwtVerifier::FromSecret(std::move(secret), policy);
  }
  if (!c.public_key_file.empty()) {
    ASSIGN_OR_RETURN(std::string pem, ReadWholeFile(c.public_key_file, "public key file"));
    return JwtVerifier::FromPublicKeyPem(pem, policy);
  }
  ASSIGN_OR_RETURN(std::string jwks, ReadWholeFile(c.jwks_file, "JWKS file"));
  return JwtVerifier::FromJwks(jwks, policy);
}

Result<std::unique_ptr<Server>> Server::Start(const service::Service::Opener& open,
                                              const ServerConfig& config,
                                              std::shared_ptr<const Workspace> tables) {
  ASSIGN_OR_RETURN(std::shared_ptr<JwtVerifier> verifier, LoadVerifier(config));
  ASSIGN_OR_RETURN(auto listen, SplitListen(config.listen));
  ASSIGN_OR_RETURN(std::string openapi, OpenApiJson());
  std::unique_ptr<Server> server(new Server());
  service::ServiceOptions so;
  so.limits = config.limits;
  so.workers = config.workers;
  so.small_run_workers = config.small_run_workers >= 0 ? config.small_run_workers
                         : config.workers > 0          ? 16
                                                       : 0;
  so.group_commit_runs = config.group_commit_runs;
  so.group_commit_interval_micros = config.group_commit_interval_millis * 1000;
  so.inline_record_bytes = config.inline_record_bytes;
  so.lease_micros = config.lease_seconds * 1'000'000;
  so.compaction_interval_micros = config.compaction_interval_seconds * 1'000'000;
  so.compaction.min_fragments = static_cast<uint64_t>(config.compaction_min_fragments);
  so.compaction.options.target_rows = static_cast<uint64_t>(config.compaction_target_rows);
  so.retention_interval_micros = config.retention_interval_seconds * 1'000'000;
  so.key_memory_bytes = static_cast<size_t>(config.key_memory_mib) << 20;
  so.scratch_dir = config.scratch_dir;
  ASSIGN_OR_RETURN(so.upload_secret, UploadSecret(config));
  // The metrics live in the Api, made after the service: runs finished
  // before it exists are not counted.
  Server* self = server.get();
  so.on_run_finished = [self](const RunInfo& r) {
    if (!self->api_) return;
    self->api_->metrics().RunFinished(r);
    self->api_->RunChanged(r.id);
  };
  so.on_compaction_pass = [self](const MaintenanceReport& pass) {
    if (self->api_) self->api_->metrics().CompactionPass(pass);
  };
  so.on_retention_pass = [self](const RetentionReport& pass) {
    if (self->api_) self->api_->metrics().RetentionPass(pass);
  };
  ASSIGN_OR_RETURN(server->service_, open(std::move(so)));

  ApiOptions ao;
  ao.verifier = std::move(verifier);
  ao.openapi_json = std::move(openapi);
  ao.max_streams_per_principal = config.max_streams_per_principal;
  ao.workspace = std::move(tables);
  ao.sql = config.sql;
  ao.max_run_wait_seconds = config.max_run_wait_seconds;
  ao.run_wait_poll = std::chrono::milliseconds(config.run_wait_poll_millis);
  sql::SetSqlHeapLimit(config.sql_heap_bytes);
  if (config.access_log) {
    ao.access_log = [](const std::string& line) { std::cerr << line + "\n" << std::flush; };
  }
  ao.in_flight = [self] { return self->http_ ? self->http_->in_flight() : 0; };
  HttpServerOptions ho = config.http;
  ho.address = listen.first;
  ho.port = listen.second;
  // The port is known once bound; local upload URLs name it.
  server->api_ = std::make_unique<Api>(server->service_.get(), ao);
  ASSIGN_OR_RETURN(server->http_, HttpServer::Bind(ho, server->api_.get()));
  server->url_ = "http://" + listen.first + ":" + std::to_string(server->http_->port());
  server->api_->set_public_url(config.public_url.empty() ? server->url_ : config.public_url);
  if (!config.health_listen.empty()) {
    ASSIGN_OR_RETURN(auto health, SplitListen(config.health_listen));
    HttpServerOptions hho;
    hho.address = health.first;
    hho.port = health.second;
    hho.io_threads = 1;
    hho.handler_threads = 2;
    hho.upload_threads = 1;
    hho.max_connections = 64;
    hho.max_connections_per_client = 16;
    server->health_handler_ = std::make_unique<ProbesOnly>(server->api_.get());
    ASSIGN_OR_RETURN(server->health_http_, HttpServer::Bind(hho, server->health_handler_.get()));
  }
  server->service_->StartWorkers();
  server->http_->Serve();
  if (server->health_http_) server->health_http_->Serve();
  return server;
}

Server::~Server() { Shutdown(); }

void Server::Shutdown() {
  if (api_) api_->StopWaiting();  // parked requests answer before the drain
  if (http_) http_->Shutdown();
  if (health_http_) health_http_->Shutdown();
  if (service_) service_->Stop();
}

}  // namespace loam::server
