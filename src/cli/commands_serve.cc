// serve, token: the HTTP server (docs/server.md) and the tokens it accepts.
#include <signal.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/test_hooks.h"
#include "common/principal.h"
#include "common/status_macros.h"
#include "server/jwt.h"
#include "server/server.h"

namespace loam::cli {
namespace {

struct ServeFlags {
  std::string config;
  std::string listen;
  std::string health_listen;
  std::string public_url;
  int workers = -1;
  int small_run_workers = -1;
  int64_t compaction_interval_seconds = -1;
  int64_t retention_interval_seconds = -1;
  std::string hs256, public_key, jwks, issuer, audience, upload_secret;
  bool no_access_log = false;
  TestStoreFlags test_store;  // trees that build the tests only
};

Result<server::ServerConfig> BuildConfig(const ServeFlags& f) {
  server::ServerConfig c;
  if (!f.config.empty()) {
    ASSIGN_OR_RETURN(c, server::ServerConfig::FromJsonFile(f.config));
  }
  const auto set = [](std::string* into, const std::string& v) {
    if (!v.empty()) *into = v;
  };
  set(&c.listen, f.listen);
  set(&c.health_listen, f.health_listen);
  set(&c.public_url, f.public_url);
  set(&c.hs256_secret_file, f.hs256);
  set(&c.public_key_file, f.public_key);
  set(&c.jwks_file, f.jwks);
  set(&c.issuer, f.issuer);
  set(&c.audience, f.audience);
  set(&c.upload_secret_file, f.upload_secret);
  if (f.workers >= 0) c.workers = f.workers;
  if (f.small_run_workers >= 0) c.small_run_workers = f.small_run_workers;
  if (f.compaction_interval_seconds >= 0) {
    c.compaction_interval_seconds = f.compaction_interval_seconds;
  }
  if (f.retention_interval_seconds >= 0) {
    c.retention_interval_seconds = f.retention_interval_seconds;
  }
  if (f.no_access_log) c.access_log = false;
  return c;
}

Status Serve(const Context& ctx, const ServeFlags& f) {
  ASSIGN_OR_RETURN(server::ServerConfig config, BuildConfig(f));
  // SIGTERM and SIGINT are taken by sigwait below; blocked before any
  // thread starts so that every thread inherits the mask.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::shared_ptr<WorkspaceEngine> ws;
  ASSIGN_OR_RETURN(ws, OpenWithTestStore(ctx, f.test_store));
  if (ws == nullptr) {
    ASSIGN_OR_RETURN(ws, ctx.Open());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<server::Server> srv,
                   server::Server::Start(service::Service::OpenerOver(ws), config, ctx.Public(ws)));
  std::cout << "loam serve: listening on " << srv->url() << " (workspace " << ws->id() << ")"
            << std::endl;
  if (srv->health_port() != 0) {
    std::cout << "loam serve: health listener on "
              << config.health_listen.substr(0, config.health_listen.rfind(':')) << ":"
              << srv->health_port() << std::endl;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  std::cout << "loam serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": finishing requests in flight" << std::endl;
  srv->Shutdown();
  std::cout << "loam serve: stopped" << std::endl;
  return Status::OK();
}

// "90", "90s", "15m", "1h", "2d" -> seconds.
Result<int64_t> ParseTtl(const std::string& text) {
  char* end = nullptr;
  const long long n = std::strtoll(text.c_str(), &end, 10);
  const std::string unit = end;
  const int64_t scale = unit.empty() || unit == "s" ? 1
                        : unit == "m"               ? 60
                        : unit == "h"               ? 3600
                        : unit == "d"               ? 86400
                                                    : 0;
  if (text.empty() || end == text.c_str() || n <= 0 || scale == 0) {
    return Status::InvalidArgument("--ttl takes a duration such as 90s, 15m, 1h or 2d");
  }
  return n * scale;
}

// The console's sign-in link: the token in the fragment, which a browser
// never sends to the server (nor in a Referer).
Result<std::string> ConsoleLink(std::string server) {
  if (server.empty()) {
    return Status::InvalidArgument(
        "--console needs --server, the URL of `loam serve` (http://HOST:PORT)");
  }
  if (server.rfind("http://", 0) != 0 && server.rfind("https://", 0) != 0) {
    return Status::InvalidArgument("--server: '" + server +
                                   "' is not an http:// or https:// URL of `loam serve`");
  }
  while (!server.empty() && server.back() == '/') server.pop_back();
  return server + "/console/#token=";
}

Status Token(const Context& ctx, const std::string& secret_file, const std::string& sub,
             const std::string& ttl, const std::string& issuer, const std::string& audience,
             bool console, const std::string& server) {
  server::ServerConfig c;
  c.hs256_secret_file = secret_file;
  RETURN_NOT_OK(server::LoadVerifier(c).status());  // the secret is strong enough
  if (Status valid = CheckPrincipal(sub); !valid.ok()) {
    return Status::InvalidArgument("--sub: " + valid.message());
  }
  ASSIGN_OR_RETURN(int64_t seconds, ParseTtl(ttl));
  std::string prefix;
  if (console) {
    ASSIGN_OR_RETURN(prefix, ConsoleLink(server));
  } else if (!server.empty()) {
    return Status::InvalidArgument(
        "--server names where the console link points: use it with --console");
  }
  ASSIGN_OR_RETURN(auto ws, ctx.Open(/*recover=*/false));
  if (ws->id().empty()) {
    return Status::FailedPrecondition("the workspace at '" + ctx.root + "' has no id");
  }
  std::ifstream in(secret_file, std::ios::binary);
  std::string secret((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  const int64_t now = Clock::System()->NowMicros() / 1'000'000;
  nlohmann::json claims = {{"sub", sub},
                           {"loam_workspace", ws->id()},
                           {"iat", now},
                           {"nbf", now},
                           {"exp", now + seconds}};
  if (!issuer.empty()) claims["iss"] = issuer;
  if (!audience.empty()) claims["aud"] = audience;
  ASSIGN_OR_RETURN(std::string token, server::SignJwt(secret, claims.dump(), /*hs256=*/true));
  std::cout << prefix << token << "\n";
  return Status::OK();
}

}  // namespace

void AddServeCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto f = std::make_shared<ServeFlags>();
  auto* serve = app.add_subcommand("serve", "serve the HTTP API (docs/server.md)");
  serve->add_option("--config", f->config, "JSON file with the settings below (flags win)");
  serve->add_option("--listen", f->listen, "HOST:PORT (default 127.0.0.1:8080; port 0: any)");
  serve->add_option("--health-listen", f->health_listen,
                    "HOST:PORT answering only /healthz, /readyz and /metrics, on threads of its "
                    "own (default: none)");
  serve->add_option("--public-url", f->public_url,
                    "where clients reach this server, for upload URLs (default http://LISTEN)");
  serve->add_option("--workers", f->workers, "run workers in this process (default 2)");
  serve->add_option("--small-run-workers", f->small_run_workers,
                    "workers that take only runs of at most 1 MiB (default 16; none with "
                    "--workers 0)");
  serve
      ->add_option("--compaction-interval-seconds", f->compaction_interval_seconds,
                   "compact the tables that are due this often (default 10; 0: never)")
      ->check(CLI::Range(int64_t{0}, int64_t{86400}));
  serve
      ->add_option("--retention-interval-seconds", f->retention_interval_seconds,
                   "remove versions past the time-travel window this often (default 3600; 0: "
                   "never)")
      ->check(CLI::Range(int64_t{0}, int64_t{7 * 86400}));
  serve->add_option("--auth-hs256-secret-file", f->hs256, "HS256 secret, 32+ bytes");
  serve->add_option("--auth-public-key-file", f->public_key,
                    "PEM public key: RSA 2048+ (RS256), EC P-256 (ES256) or Ed25519 (EdDSA)");
  serve->add_option("--auth-jwks-file", f->jwks, "JSON Web Key Set of such public keys");
  serve->add_option("--auth-issuer", f->issuer, "required iss claim");
  serve->add_option("--auth-audience", f->audience, "required aud claim");
  serve->add_option("--upload-secret-file", f->upload_secret,
                    "HMAC key of local upload URLs, 32+ bytes (shared by servers on one root)");
  serve->add_flag("--no-access-log", f->no_access_log, "no JSON access log on stderr");
  AddTestStoreOptions(serve, &f->test_store);
  serve->callback([&ctx, f, run] { run(Serve(ctx, *f)); });

  auto* token = app.add_subcommand("token", "mint an HS256 bearer token for this workspace");
  auto secret = std::make_shared<std::string>();
  auto sub = std::make_shared<std::string>();
  auto ttl = std::make_shared<std::string>("1h");
  auto issuer = std::make_shared<std::string>();
  auto audience = std::make_shared<std::string>();
  token->add_option("--secret-file", *secret, "the server's HS256 secret file")->required();
  token->add_option("--sub", *sub, "the principal")->required();
  token->add_option("--ttl", *ttl, "lifetime: 90s, 15m, 1h, 2d");
  token->add_option("--issuer", *issuer, "iss claim");
  token->add_option("--audience", *audience, "aud claim");
  auto console = std::make_shared<bool>(false);
  auto server = std::make_shared<std::string>();
  token->add_flag("--console", *console,
                  "print the web console's sign-in link (the token in its fragment)");
  token->add_option("--server", *server, "with --console: the server's URL (http://HOST:PORT)");
  token->callback([&ctx, secret, sub, ttl, issuer, audience, console, server, run] {
    run(Token(ctx, *secret, *sub, *ttl, *issuer, *audience, *console, *server));
  });
}

}  // namespace loam::cli
