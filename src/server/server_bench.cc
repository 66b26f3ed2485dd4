// server_bench (BENCH=server scripts/bench): request throughput and
// acceptance latency of `POST /v1/pipelines/{id}/runs` over real HTTP, with
// 64 keep-alive connections to an in-process server on local disk:
//   replay        the same submission again (answered from its idempotency record)
//   fresh         a new key per request naming an upload made beforehand
//   fresh-inline  a new key per request carrying a small CSV itself
// Runs are not executed (no workers), so the figures are acceptance alone.
#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/ulid.h"
#include "server/server.h"
#include "service/staging.h"

namespace loam::server {
namespace {

namespace beast = boost::beast;
using json = nlohmann::json;
using Clock_ = std::chrono::steady_clock;

constexpr int kConnections = 64;
constexpr char kSecret[] = "server-bench-secret-0123456789abcdef";

struct Connection {
  boost::asio::io_context ioc;
  beast::tcp_stream stream{ioc};
  beast::flat_buffer buffer;
  explicit Connection(uint16_t port) {
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  }
  int Send(const std::string& method, const std::string& target, const std::string& body,
           const std::vector<std::pair<std::string, std::string>>& headers, std::string* out) {
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    for (const auto& [k, v] : headers) req.set(k, v);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    if (out != nullptr) *out = res.body();
    return static_cast<int>(res.result_int());
  }
};

struct Phase {
  std::string name;
  std::vector<double> latencies_ms;
  double seconds = 0;
  int64_t bad = 0;
};

// Runs `per_connection` requests on each of 64 connections; `make(c, i)`
// gives request i of connection c.
template <typename Make>
Phase Drive(const std::string& name, uint16_t port, int per_connection, Make make) {
  Phase p{name, {}, 0, 0};
  std::vector<std::vector<double>> lat(kConnections);
  std::atomic<int64_t> bad{0};
  std::vector<std::thread> threads;
  const auto start = Clock_::now();
  for (int c = 0; c < kConnections; ++c) {
    threads.emplace_back([&, c] {
      Connection conn(port);
      for (int i = 0; i < per_connection; ++i) {
        auto [target, body, headers] = make(c, i);
        const auto t0 = Clock_::now();
        const int status = conn.Send("POST", target, body, headers, nullptr);
        lat[c].push_back(std::chrono::duration<double, std::milli>(Clock_::now() - t0).count());
        if (status != 202) bad.fetch_add(1);
      }
    });
  }
  for (auto& t : threads) t.join();
  p.seconds = std::chrono::duration<double>(Clock_::now() - start).count();
  for (auto& l : lat) p.latencies_ms.insert(p.latencies_ms.end(), l.begin(), l.end());
  p.bad = bad.load();
  return p;
}

double Percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

void Print(const Phase& p) {
  std::printf(
      "%-13s %7zu requests  %8.0f req/s  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms  non-202 %lld\n",
      p.name.c_str(), p.latencies_ms.size(), static_cast<double>(p.latencies_ms.size()) / p.seconds,
      Percentile(p.latencies_ms, 0.50), Percentile(p.latencies_ms, 0.99),
      Percentile(p.latencies_ms, 1.0), static_cast<long long>(p.bad));
}

int Main(int argc, char** argv) {
  const int per_connection = argc > 1 ? std::atoi(argv[1]) : 50;
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("loam-server-bench-" + NewUlidString());
  fs::create_directories(dir);
  std::ofstream(dir / "secret") << kSecret;
  auto store = OpenObjectStore((dir / "ws").string()).value();
  WorkspaceOptions wo;
  wo.owner = "owner";
  auto ws = WorkspaceEngine::Init(store, "", wo).value();
  Schema schema{{{"id", DataType::Int64(), false}, {"v", DataType::String()}}};
  if (!ws->CreateTable("t", schema, {"id"}).ok()) return 1;
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.hs256_secret_file = (dir / "secret").string();
  config.workers = 0;
  config.access_log = false;
  config.limits.principal_requests_per_second = 1e9;
  config.limits.principal_burst = 1e9;
  config.limits.max_queued_runs = 1 << 30;
  config.limits.tiny_runs_per_minute = 1 << 30;
  config.limits.max_concurrent_runs_per_pipeline = 1 << 30;
  config.limits.max_queue_wait_seconds = 0;  // no workers: the queue only grows
  auto server = Server::Start(service::Service::OpenerOver(ws), config).value();
  const uint16_t port = server->port();
  const int64_t now = loam::Clock::System()->NowMicros() / 1'000'000;
  const std::string token =
      SignJwt(kSecret,
              json{{"sub", "owner"}, {"loam_workspace", ws->id()}, {"exp", now + 3600}}.dump(),
              true)
          .value();
  const std::vector<std::pair<std::string, std::string>> auth = {
      {"Authorization", "Bearer " + token}, {"Content-Type", "application/json"}};
  Connection setup(port);
  std::string out;
  setup.Send("POST", "/v1/pipelines", R"({"name":"p","table":"t","format":"csv"})", auth, &out);
  const std::string pipeline = json::parse(out)["id"];
  const std::string runs = "/v1/pipelines/" + pipeline + "/runs";
  const std::string csv = "id,v\n1,a\n";
  // Uploads for the replay and fresh phases, made beforehand.
  const int uploads = kConnections * per_connection + 1;
  std::vector<std::string> ids;
  for (int i = 0; i < uploads; ++i) {
    setup.Send("POST", "/v1/pipelines/" + pipeline + "/uploads",
               json{{"size", csv.size()}, {"sha256", Sha256Hex(csv)}}.dump(), auth, &out);
    const json t = json::parse(out);
    const std::string url = t["url"];
    setup.Send("PUT", url.substr(url.find("/v1/")), csv, {}, nullptr);
    ids.push_back(t["uploadId"]);
  }
  const std::string replay_body = json{{"uploads", {ids.back()}}}.dump();
  auto with_key = [&](std::string key) {
    auto h = auth;
    h.emplace_back("Idempotency-Key", std::move(key));
    return h;
  };
  setup.Send("POST", runs, replay_body, with_key("replay"), nullptr);
  std::printf("server_bench: %d connections x %d requests, local disk, %u cores\n", kConnections,
              per_connection, std::thread::hardware_concurrency());
  Print(Drive("replay", port, per_connection,
              [&](int, int) { return std::make_tuple(runs, replay_body, with_key("replay")); }));
  Print(Drive("fresh", port, per_connection, [&](int c, int i) {
    const std::string id = ids[static_cast<size_t>(c * per_connection + i)];
    return std::make_tuple(runs, json{{"uploads", {id}}}.dump(),
                           with_key("fresh-" + std::to_string(c) + "-" + std::to_string(i)));
  }));
  Print(Drive("fresh-inline", port, per_connection, [&](int c, int i) {
    auto h = with_key("inline-" + std::to_string(c) + "-" + std::to_string(i));
    h[1].second = "text/csv";
    return std::make_tuple(runs, "id,v\n" + std::to_string(c * 100000 + i) + ",x\n", h);
  }));
  server.reset();
  fs::remove_all(dir);
  return 0;
}

}  // namespace
}  // namespace loam::server

int main(int argc, char** argv) { return loam::server::Main(argc, argv); }
