// Server: `loam serve` as a library. Opens the service on a workspace,
// verifies its configuration (auth keys, upload secret), and serves the API
// over HTTP until Shutdown (docs/server.md).
#pragma once

#include <memory>
#include <string>

#include "server/api.h"
#include "server/http_server.h"
#include "service/service.h"

namespace loam::server {

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";  // HOST:PORT; port 0 = ephemeral
  std::string public_url;                 // default http://<listen address>
  int workers = 2;                        // run workers in this process
  // Workers that take only runs of at most 1 MiB of input (the small-run
  // lane; small runs are I/O bound, so many are in flight and their commits
  // share groups); -1: 16 when `workers` > 0, else none.
  int small_run_workers = -1;
  // At most this many runs share one commit (group commit); 1: each alone.
  int group_commit_runs = 64;
  // A table commits at most once per this many ms (an idle one at once), so
  // runs that follow each other closely share commits; 0: no interval.
  int64_t group_commit_interval_millis = 50;
  // Inline data up to this many bytes travels in the run record
  // (ServiceOptions::inline_record_bytes); 0: always staged as an upload.
  int64_t inline_record_bytes = 64 << 10;
  // Automatic compaction: every this many seconds, the serve process that
  // holds the workspace's maintenance lease compacts the tables with at
  // least `compaction_min_fragments` small fragments; 0: never.
  int64_t compaction_interval_seconds = 1;
  int64_t compaction_min_fragments = 16;
  int64_t compaction_target_rows = 1 << 20;
  // Retention: every this many seconds, the lease holder removes versions
  // past the workspace's time-travel window (`loam retention`); 0: never.
  int64_t retention_interval_seconds = 3600;
  // A worker's hold on a run; a run whose process died is taken over this
  // long after its last renewal.
  int64_t lease_seconds = 30;
  // Keyed runs: MiB their key checks hold before they spill to sorted runs
  // under `scratch_dir` (empty: the system's temporary directory).
  int64_t key_memory_mib = 512;
  std::string scratch_dir;
  // Threads, limits and timeouts of the HTTP layer (address and port come
  // from `listen`).
  HttpServerOptions http;
  // Authentication: exactly one of the three key sources.
  std::string hs256_secret_file;
  std::string public_key_file;
  std::string jwks_file;
  std::string issuer;
  std::string audience;
  int64_t leeway_seconds = 60;
  // The HMAC key of local upload URLs (32+ bytes). Default: derived from
  // the HS256 secret, else random per process (one server per local root).
  std::string upload_secret_file;
  bool access_log = true;  // one JSON line per request on stderr
  // Another HOST:PORT that answers only /healthz, /readyz and /metrics, with
  // threads and connections of its own, so probes answer whatever floods
  // the main listener ("" = none).
  std::string health_listen;
  // Streamed row answers one principal reads at once.
  int max_streams_per_principal = 2;
  // POST /v1/sql: each statement's bounds, and SQLite's heap ceiling for
  // all statements of the process together (0: none).
  SqlLimits sql;
  int64_t sql_heap_bytes = int64_t{512} << 20;
  // GET /v1/runs/{id}?wait=N: the longest wait, and how often a waited run
  // is read again (a run another process finishes is seen that late).
  int64_t max_run_wait_seconds = 60;
  int64_t run_wait_poll_millis = 1000;
  service::ServiceLimits limits;

  // A --config FILE: a JSON object with these fields in camelCase.
  static Result<ServerConfig> FromJsonFile(const std::string& path);
};

// The verifier the configuration names; InvalidArgument when none, several,
// or a weak one (an HS256 secret under 32 bytes) is configured.
Result<std::shared_ptr<JwtVerifier>> LoadVerifier(const ServerConfig& config);

class Server {
 public:
  // The service is opened by `open` (Service::OpenerOver a workspace) with
  // the options `config` gives; POST /v1/sql reads `tables`, the same
  // workspace (nullptr: the route answers 501).
  static Result<std::unique_ptr<Server>> Start(const service::Service::Opener& open,
                                               const ServerConfig& config,
                                               std::shared_ptr<const Workspace> tables = nullptr);
  ~Server();

  uint16_t port() const { return http_->port(); }
  const std::string& url() const { return url_; }
  // The health listener's port (0 without one).
  uint16_t health_port() const { return health_http_ ? health_http_->port() : 0; }
  service::Service& service() { return *service_; }
  // Requests waiting for a run to end (GET /v1/runs/{id}?wait=N).
  size_t parked_requests() const { return api_->parked_requests(); }
  // Stops accepting, answers the requests in flight, then lets the workers
  // finish their runs; queued runs stay queued for the next server.
  void Shutdown();

 private:
  Server() = default;
  std::unique_ptr<service::Service> service_;
  std::unique_ptr<Api> api_;
  std::unique_ptr<HttpHandler> health_handler_;  // the health listener's: probes only
  std::unique_ptr<HttpServer> http_;
  std::unique_ptr<HttpServer> health_http_;
  std::string url_;
};

}  // namespace loam::server
