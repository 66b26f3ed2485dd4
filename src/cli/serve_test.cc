// `loam serve` and `loam token` as processes: refusals to start, real HTTP
// with a minted token, and SIGTERM answering the request in flight.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/aged_workspace_test_util.h"
#include "cli/cli_test_util.h"
#include "common/ulid.h"
#include "server/server_test_util.h"

namespace loam::testing {
namespace {

namespace asio = boost::asio;
using nlohmann::json;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("loam-serve-" + NewUlidString())).string();
    std::filesystem::create_directories(dir_);
    ASSERT_EQ(RunLoam(dir_, {"init"}).code, 0);
    ASSERT_EQ(
        RunLoam(dir_, {"table", "create", "t", "--column", "id:int64:not-null", "--key", "id"})
            .code,
        0);
    WriteFile(dir_ + "/secret", "a-serve-test-secret-of-32-bytes-or-more\n");
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Waits (bounded) for the "listening on" line (or another line naming a
  // port after `prefix`); returns the port.
  uint16_t WaitListening(const std::string& prefix = "listening on http://127.0.0.1:") {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = Slurp(dir_ + "/.stdout");
      const size_t at = out.find(prefix);
      const size_t end =
          at == std::string::npos ? at : out.find_first_of(" \n", at + prefix.size());
      if (end != std::string::npos) {
        return static_cast<uint16_t>(std::stoi(out.substr(at + prefix.size())));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a file, bounded
    }
    ADD_FAILURE() << "no listening line: " << Slurp(dir_ + "/.stderr");
    return 0;
  }

  // A served workspace, a client folder with the owner's token in it, and a
  // CSV pipeline into t: what a `loam submit` test starts from.
  struct Served {
    pid_t pid = 0;
    uint16_t port = 0;
    std::string client;  // folder
    std::string bearer;  // "Bearer <the owner's token>"
    std::string pipeline;
    std::string url;
  };
  Served ServeWithPipeline() {
    Served s;
    s.pid = StartLoam(dir_, {"serve", "--listen", "127.0.0.1:0", "--auth-hs256-secret-file",
                             "secret", "--no-access-log"});
    s.port = WaitListening();
    EXPECT_NE(s.port, 0);
    s.url = "http://127.0.0.1:" + std::to_string(s.port);
    s.client = dir_ + "/client";
    std::filesystem::create_directories(s.client);
    CliResult token = RunLoam(s.client, {"token", "--root", dir_ + "/loam-data", "--secret-file",
                                         dir_ + "/secret", "--sub", "owner"});
    EXPECT_EQ(token.code, 0) << token.err;
    WriteFile(s.client + "/token", token.out);
    s.bearer = "Bearer " + token.out.substr(0, token.out.find('\n'));
    server::HttpResult p = server::HttpCall(s.port, "POST", "/v1/pipelines",
                                            R"({"name":"p","table":"t","format":"csv"})",
                                            {{"Authorization", s.bearer}});
    EXPECT_EQ(p.status, 201) << p.body;
    s.pipeline = p.Json().value("id", "");
    return s;
  }

  std::string dir_;
};

TEST_F(ServeTest, RefusesToStartWithAClearMessage) {
  const std::vector<std::string> serve = {"serve", "--listen", "127.0.0.1:0"};
  CliResult no_auth = RunLoam(dir_, serve);
  EXPECT_NE(no_auth.code, 0);
  EXPECT_NE(no_auth.err.find("exactly one of --auth-hs256-secret-file"), std::string::npos)
      << no_auth.err;
  WriteFile(dir_ + "/weak", "weak\n");
  std::vector<std::string> weak = serve;
  weak.insert(weak.end(), {"--auth-hs256-secret-file", "weak"});
  CliResult weak_r = RunLoam(dir_, weak);
  EXPECT_EQ(weak_r.code, 2);
  EXPECT_NE(weak_r.err.find("at least 32 bytes"), std::string::npos) << weak_r.err;
  std::vector<std::string> ok = serve;
  ok.insert(ok.end(), {"--auth-hs256-secret-file", "secret"});
  CliResult quarantined = RunLoam(dir_, ok, {{"LOAM_QUARANTINE", "1"}});
  EXPECT_NE(quarantined.code, 0);
  EXPECT_NE(quarantined.err.find("quarantine"), std::string::npos) << quarantined.err;
  std::vector<std::string> elsewhere = ok;
  elsewhere.insert(elsewhere.end(), {"--root", dir_ + "/nothing-here"});
  CliResult missing = RunLoam(dir_, elsewhere);
  EXPECT_EQ(missing.code, 4);
  EXPECT_NE(missing.err.find("no Loam workspace"), std::string::npos) << missing.err;
  CliResult token = RunLoam(dir_, {"token", "--secret-file", "weak", "--sub", "ada"});
  EXPECT_EQ(token.code, 2);
  CliResult bad_sub = RunLoam(dir_, {"token", "--secret-file", "secret", "--sub", "ada\n"});
  EXPECT_EQ(bad_sub.code, 2);
  EXPECT_NE(bad_sub.err.find("--sub: a principal is 1 to 127 bytes"), std::string::npos)
      << bad_sub.err;
  // The config file is read strictly, field by field: exit 2 naming the field.
  const auto refused_config = [&](const std::string& name, const std::string& text,
                                  const std::string& said) {
    WriteFile(dir_ + "/" + name, text);
    std::vector<std::string> args = ok;
    args.insert(args.end(), {"--config", name});
    CliResult r = RunLoam(dir_, args);
    EXPECT_EQ(r.code, 2) << name;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
  };
  refused_config("lease.json", R"({"leaseSeconds": 0})", "leaseSeconds");
  refused_config("typo.json", R"({"leaseSecond": 5})", "leaseSecond");
  refused_config("twice.json", R"({"leaseSeconds": 5, "leaseSeconds": 3600})",
                 R"(key "leaseSeconds" appears twice in one object)");
  refused_config("lane.json", R"({"smallRunWorkers": 257})", "smallRunWorkers");
  refused_config("group.json", R"({"groupCommitRuns": 0})", "groupCommitRuns");
  refused_config("interval.json", R"({"groupCommitIntervalMillis": 1001})",
                 "groupCommitIntervalMillis");
  refused_config("compaction.json", R"({"compactionMinFragments": 1})", "compactionMinFragments");
  refused_config("inline.json", R"({"inlineRecordBytes": 1048577})", "inlineRecordBytes");
  std::vector<std::string> compaction = ok;
  compaction.insert(compaction.end(), {"--compaction-interval-seconds", "-1"});
  CliResult compaction_r = RunLoam(dir_, compaction);
  EXPECT_EQ(compaction_r.code, 2) << compaction_r.all();
  EXPECT_NE(compaction_r.all().find("--compaction-interval-seconds"), std::string::npos)
      << compaction_r.all();
  std::vector<std::string> faults = ok;
  faults.insert(faults.end(), {"--test-store-faults", "1.5"});
  EXPECT_EQ(RunLoam(dir_, faults).code, 2);
  std::vector<std::string> latency = ok;
  latency.insert(latency.end(), {"--test-store-latency", "20:10"});
  CliResult latency_r = RunLoam(dir_, latency);
  EXPECT_EQ(latency_r.code, 2) << latency_r.all();
  EXPECT_NE(latency_r.all().find("latency '20:10': the p99 is below the p50"), std::string::npos)
      << latency_r.all();
}

// `loam token --console` prints the console's sign-in link: the token in
// the fragment, which never reaches the server (tests/console signs in
// through it in a browser).
TEST_F(ServeTest, TokenPrintsTheConsolesSignInLink) {
  CliResult link = RunLoam(dir_, {"token", "--secret-file", "secret", "--sub", "ada", "--console",
                                  "--server", "http://127.0.0.1:8080/"});
  ASSERT_EQ(link.code, 0) << link.err;
  const std::string prefix = "http://127.0.0.1:8080/console/#token=";
  ASSERT_EQ(link.out.substr(0, prefix.size()), prefix) << link.out;
  const std::string jwt = link.out.substr(prefix.size(), link.out.find('\n') - prefix.size());
  EXPECT_EQ(std::count(jwt.begin(), jwt.end(), '.'), 2) << jwt;
  CliResult plain = RunLoam(dir_, {"token", "--secret-file", "secret", "--sub", "ada"});
  EXPECT_EQ(plain.out.find("console"), std::string::npos);
  const auto refused = [&](std::vector<std::string> extra, const std::string& said) {
    std::vector<std::string> args = {"token", "--secret-file", "secret", "--sub", "ada"};
    args.insert(args.end(), extra.begin(), extra.end());
    CliResult r = RunLoam(dir_, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(said), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  };
  refused({"--console"}, "--console needs --server");
  refused({"--console", "--server", "127.0.0.1:8080"}, "is not an http:// or https:// URL");
  refused({"--server", "http://127.0.0.1:8080"}, "use it with --console");
}

TEST_F(ServeTest, ServesWithAMintedTokenAndStopsGracefullyOnSigterm) {
  const pid_t pid = StartLoam(dir_, {"serve", "--listen", "127.0.0.1:0", "--health-listen",
                                     "127.0.0.1:0", "--auth-hs256-secret-file", "secret",
                                     "--no-access-log", "--test-store-latency", "0.2:1"});
  const uint16_t port = WaitListening();
  ASSERT_NE(port, 0);
  // Probes answer on the health listener too, and nothing else does there.
  const uint16_t health = WaitListening("health listener on 127.0.0.1:");
  ASSERT_NE(health, 0);
  EXPECT_EQ(server::HttpCall(health, "GET", "/healthz").status, 200);
  EXPECT_EQ(server::HttpCall(health, "GET", "/v1/tables").status, 404);
  // `loam token` writes to .stdout too: keep the server's first.
  const std::string server_out = Slurp(dir_ + "/.stdout");
  EXPECT_NE(
      server_out.find("TEST ONLY: object store calls wait latency(0.2ms p50, 1.0ms p99, file://"),
      std::string::npos)
      << server_out;
  std::filesystem::create_directories(dir_ + "/client");
  CliResult token =
      RunLoam(dir_ + "/client", {"token", "--root", dir_ + "/loam-data", "--secret-file",
                                 dir_ + "/secret", "--sub", "owner", "--ttl", "10m"});
  ASSERT_EQ(token.code, 0) << token.err;
  const std::string bearer = "Bearer " + token.out.substr(0, token.out.find('\n'));
  server::HttpResult tables =
      server::HttpCall(port, "GET", "/v1/tables", "", {{"Authorization", bearer}});
  ASSERT_EQ(tables.status, 200) << tables.body;
  EXPECT_EQ(tables.Json()["tables"][0]["name"], "t");

  server::HttpResult p =
      server::HttpCall(port, "POST", "/v1/pipelines", R"({"name":"p","table":"t","format":"csv"})",
                       {{"Authorization", bearer}});
  ASSERT_EQ(p.status, 201) << p.body;
  server::HttpResult t = server::HttpCall(
      port, "POST", "/v1/pipelines/" + p.Json()["id"].get<std::string>() + "/uploads",
      R"({"size":6})", {{"Authorization", bearer}});
  ASSERT_EQ(t.status, 201) << t.body;
  const std::string url = t.Json()["url"];
  const std::string target = url.substr(url.find("/v1/"));
  // Half a body, then SIGTERM, then the rest: the answer still comes.
  asio::io_context ioc;
  asio::ip::tcp::socket s(ioc);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(
      s, asio::buffer("PUT " + target + " HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nid\n"));
  // The server has the request once it is counted in flight.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    server::HttpResult m = server::HttpCall(port, "GET", "/metrics");
    if (m.body.find("loam_http_requests_in_flight 2") != std::string::npos) break;
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << m.body;
  }
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  asio::write(s, asio::buffer(std::string("1\n2")));
  std::string answer;
  char buf[4096];
  boost::system::error_code ec;
  for (size_t n; (n = s.read_some(asio::buffer(buf), ec)), !ec;) answer.append(buf, n);
  EXPECT_EQ(answer.substr(0, 12), "HTTP/1.1 200") << answer;
  CliResult done = WaitLoam(dir_, pid);
  EXPECT_EQ(done.code, 0) << done.err;
  EXPECT_NE(server_out.find("listening on"), std::string::npos);
}

// `loam serve` compacts by itself: 16 runs leave 16 small fragments, and
// the pass their commits ask for merges them at once, long before the
// interval (an hour here) would; /metrics shows it. (With inline data
// always staged as an upload: inlineRecordBytes 0.)
TEST_F(ServeTest, CompactsTablesThatAreDueByItself) {
  WriteFile(dir_ + "/staged.json", R"({"inlineRecordBytes": 0})");
  const pid_t pid = StartLoam(dir_, {"serve", "--listen", "127.0.0.1:0", "--auth-hs256-secret-file",
                                     "secret", "--no-access-log", "--compaction-interval-seconds",
                                     "3600", "--config", "staged.json"});
  const uint16_t port = WaitListening();
  ASSERT_NE(port, 0);
  std::filesystem::create_directories(dir_ + "/client");
  CliResult token =
      RunLoam(dir_ + "/client", {"token", "--root", dir_ + "/loam-data", "--secret-file",
                                 dir_ + "/secret", "--sub", "owner"});
  ASSERT_EQ(token.code, 0) << token.err;
  const server::Headers auth = {
      {"Authorization", "Bearer " + token.out.substr(0, token.out.find('\n'))}};
  server::HttpResult p = server::HttpCall(port, "POST", "/v1/pipelines",
                                          R"({"name":"p","table":"t","format":"csv"})", auth);
  ASSERT_EQ(p.status, 201) << p.body;
  const std::string runs = "/v1/pipelines/" + p.Json()["id"].get<std::string>() + "/runs";
  std::string last;
  for (int i = 1; i <= 16; ++i) {
    server::Headers h = auth;
    h.push_back({"Content-Type", "text/csv"});
    h.push_back({"Idempotency-Key", "k" + std::to_string(i)});
    server::HttpResult run =
        server::HttpCall(port, "POST", runs, "id\n" + std::to_string(i) + "\n", h);
    ASSERT_EQ(run.status, 202) << run.body;
    last = run.Json()["id"];
    // One run at a time, so each commits its own fragment.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (server::HttpCall(port, "GET", "/v1/runs/" + last, "", auth).Json()["state"] !=
           "succeeded") {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "run " << i << " did not succeed";
    }
  }
  // The pass at start saw no fragment: wait for the pass that merged the
  // 16, then the table holds one.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    server::HttpResult m = server::HttpCall(port, "GET", "/metrics");
    if (m.body.find("loam_compaction_total{what=\"fragments_removed\"} 16\n") !=
        std::string::npos) {
      EXPECT_NE(m.body.find("loam_table_fragments{table=\"t\"} 1\n"), std::string::npos) << m.body;
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << m.body;
  }
  server::HttpResult table = server::HttpCall(port, "GET", "/v1/tables/t", "", auth);
  EXPECT_EQ(table.Json()["rowCount"], 16) << table.body;
  server::HttpResult staged = server::HttpCall(port, "GET", "/v1/runs/" + last, "", auth);
  EXPECT_EQ(staged.Json()["uploads"].size(), 1u) << staged.body;
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(WaitLoam(dir_, pid).code, 0);
}

// Retention by itself: the lease holder applies the workspace's window every
// --retention-interval-seconds, and a read past it answers 410
// version_expired naming the oldest readable version.
TEST_F(ServeTest, RemovesVersionsPastTheWindowByItself) {
  const std::string aged = dir_ + "/aged";
  const std::vector<uint64_t> versions = WriteAgedHistory(aged);
  ASSERT_EQ(RunLoam(dir_, {"retention", "--root", aged, "--window-seconds", "5400"}).code, 0);
  const pid_t pid = StartLoam(
      dir_, {"serve", "--root", aged, "--listen", "127.0.0.1:0", "--auth-hs256-secret-file",
             "secret", "--no-access-log", "--retention-interval-seconds", "1"});
  const uint16_t port = WaitListening();
  ASSERT_NE(port, 0);
  CliResult token =
      RunLoam(dir_, {"token", "--root", aged, "--secret-file", dir_ + "/secret", "--sub", "owner"});
  ASSERT_EQ(token.code, 0) << token.err;
  const server::Headers auth = {
      {"Authorization", "Bearer " + token.out.substr(0, token.out.find('\n'))}};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    server::HttpResult m = server::HttpCall(port, "GET", "/metrics");
    if (m.body.find("loam_retention_total{what=\"passes\"}") != std::string::npos) {
      EXPECT_EQ(m.body.find("loam_retention_total{what=\"manifest_versions_removed\"} 0\n"),
                std::string::npos)
          << m.body;
      EXPECT_NE(m.body.find("loam_retention_total{what=\"tables_removed\"} 1\n"), std::string::npos)
          << m.body;
      break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << m.body;
  }
  const std::string rows = "/v1/tables/t/rows?version=";
  server::HttpResult past =
      server::HttpCall(port, "GET", rows + std::to_string(versions[0]), "", auth);
  EXPECT_EQ(past.status, 410) << past.body;
  EXPECT_EQ(past.Json()["code"], "version_expired") << past.body;
  EXPECT_EQ(past.Json()["oldestVersion"], versions[1]) << past.body;
  EXPECT_EQ(server::HttpCall(port, "GET", rows + std::to_string(versions[1]), "", auth).status,
            200);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  EXPECT_EQ(WaitLoam(dir_, pid).code, 0);
}

TEST_F(ServeTest, SubmitKilledAfterSendingIsResumedIntoExactlyOneRun) {
  const Served srv = ServeWithPipeline();
  ASSERT_FALSE(srv.pipeline.empty());
  const auto& [pid, port, client, bearer, pipeline, url] = srv;
  std::string csv = "id\n";
  for (int i = 0; i < 1000; ++i) csv += std::to_string(i) + "\n";
  WriteFile(client + "/data.csv", csv);
  const std::map<std::string, std::string> env = {{"XDG_STATE_HOME", client + "/state"}};
  std::map<std::string, std::string> crash = env;
  crash["LOAM_CRASH_AT"] = "submit.after_send";
  CliResult killed = RunLoam(client,
                             {"submit", pipeline, "data.csv", "--server", url, "--token-file",
                              "token", "--source-id", "data-1"},
                             crash);
  EXPECT_EQ(killed.signal, SIGKILL) << killed.all();
  const auto left =
      std::distance(std::filesystem::directory_iterator(client + "/state/loam/submissions"), {});
  EXPECT_EQ(left, 1);  // the submission's state survived the client
  CliResult resumed = RunLoam(client, {"submit", "--resume", "--wait"}, env);
  ASSERT_EQ(resumed.code, 0) << resumed.all();
  EXPECT_NE(resumed.out.find("\"state\":\"succeeded\""), std::string::npos) << resumed.out;
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(client + "/state/loam/submissions"), {}),
      0);
  server::HttpResult runs = server::HttpCall(port, "GET", "/v1/runs?pipeline=" + pipeline, "",
                                             {{"Authorization", bearer}});
  ASSERT_EQ(runs.status, 200);
  EXPECT_EQ(runs.Json()["runs"].size(), 1u) << runs.body;
  server::HttpResult table =
      server::HttpCall(port, "GET", "/v1/tables/t", "", {{"Authorization", bearer}});
  EXPECT_EQ(table.Json()["rowCount"], 1000);
  // The same source again: refused, and the client says why with the code's exit status.
  CliResult again = RunLoam(client,
                            {"submit", pipeline, "data.csv", "--server", url, "--token-file",
                             "token", "--source-id", "data-1"},
                            env);
  EXPECT_EQ(again.code, 3) << again.all();
  EXPECT_NE(again.err.find("409"), std::string::npos) << again.err;
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitLoam(dir_, pid).code, 0);
}

// A PUT whose answer was lost (the client killed after sending it): the
// resumed submission sends the same upload again, meets "already received"
// (409 here, 412 from S3), confirms through GET /v1/uploads/{id} that the
// bytes arrived, and goes on to exactly one run of that upload.
TEST_F(ServeTest, AResentUploadPutIsConfirmedAndTheSubmissionGoesOn) {
  const Served srv = ServeWithPipeline();
  ASSERT_FALSE(srv.pipeline.empty());
  const auto& [pid, port, client, bearer, pipeline, url] = srv;
  WriteFile(client + "/data.csv", "id\n1\n2\n3\n");
  const std::map<std::string, std::string> env = {{"XDG_STATE_HOME", client + "/state"}};
  std::map<std::string, std::string> crash = env;
  crash["LOAM_CRASH_AT"] = "submit.after_upload_put";
  CliResult killed = RunLoam(
      client, {"submit", pipeline, "data.csv", "--server", url, "--token-file", "token"}, crash);
  ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
  // The state kept the ticket whose PUT landed.
  const std::filesystem::path states = client + "/state/loam/submissions";
  const std::filesystem::path state = std::filesystem::directory_iterator(states)->path();
  const std::string upload =
      nlohmann::json::parse(Slurp(state.string()))["files"][0]["ticket"]["uploadId"];
  server::HttpResult status =
      server::HttpCall(port, "GET", "/v1/uploads/" + upload, "", {{"Authorization", bearer}});
  ASSERT_EQ(status.status, 200) << status.body;
  EXPECT_EQ(status.Json()["received"], true);
  EXPECT_EQ(status.Json()["size"], 9);
  // Another principal cannot see it.
  CliResult other = RunLoam(client, {"token", "--root", dir_ + "/loam-data", "--secret-file",
                                     dir_ + "/secret", "--sub", "eve"});
  server::HttpResult hidden =
      server::HttpCall(port, "GET", "/v1/uploads/" + upload, "",
                       {{"Authorization", "Bearer " + other.out.substr(0, other.out.find('\n'))}});
  EXPECT_EQ(hidden.status, 404) << hidden.body;
  CliResult resumed = RunLoam(client, {"submit", "--resume", "--wait"}, env);
  ASSERT_EQ(resumed.code, 0) << resumed.all();
  EXPECT_NE(resumed.out.find("\"state\":\"succeeded\""), std::string::npos) << resumed.out;
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(states), {}), 0);
  server::HttpResult runs = server::HttpCall(port, "GET", "/v1/runs?pipeline=" + pipeline, "",
                                             {{"Authorization", bearer}});
  ASSERT_EQ(runs.Json()["runs"].size(), 1u) << runs.body;
  EXPECT_EQ(runs.Json()["runs"][0]["uploads"], nlohmann::json::array({upload}));
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitLoam(dir_, pid).code, 0);
}

// --validate-first: a validationOnly run of the uploads, then (only if it
// succeeded) the load of the same uploads, sent once.
TEST_F(ServeTest, SubmitValidatesFirstAndLoadsTheSameUploadsOnlyIfValid) {
  const Served srv = ServeWithPipeline();
  ASSERT_FALSE(srv.pipeline.empty());
  const auto& [pid, port, client, bearer, pipeline, url] = srv;
  const std::map<std::string, std::string> env = {{"XDG_STATE_HOME", client + "/state"}};
  const auto runs = [&] {
    return server::HttpCall(port, "GET", "/v1/runs?order=oldest&pipeline=" + pipeline, "",
                            {{"Authorization", bearer}})
        .Json()["runs"];
  };
  const auto rows = [&] {
    return server::HttpCall(port, "GET", "/v1/tables/t", "", {{"Authorization", bearer}})
        .Json()["rowCount"];
  };
  WriteFile(client + "/bad.csv", "id\n1\nnot-a-number\n");
  CliResult bad = RunLoam(
      client,
      {"submit", pipeline, "bad.csv", "--server", url, "--token-file", "token", "--validate-first"},
      env);
  EXPECT_EQ(bad.code, 1) << bad.all();  // the validation run failed
  EXPECT_NE(bad.out.find("\"validationOnly\":true"), std::string::npos) << bad.out;
  EXPECT_NE(bad.out.find("line 3, column 1"), std::string::npos) << bad.out;
  ASSERT_EQ(runs().size(), 1u);  // no load was submitted
  EXPECT_EQ(rows(), 0);

  WriteFile(client + "/good.csv", "id\n1\n2\n3\n");
  CliResult good = RunLoam(client,
                           {"submit", pipeline, "good.csv", "--server", url, "--token-file",
                            "token", "--validate-first", "--wait"},
                           env);
  ASSERT_EQ(good.code, 0) << good.all();
  EXPECT_NE(good.out.find("\"state\":\"succeeded\""), std::string::npos) << good.out;
  EXPECT_EQ(rows(), 3);
  const nlohmann::json all = runs();
  ASSERT_EQ(all.size(), 3u) << all.dump();
  EXPECT_EQ(all[1]["validationOnly"], true);
  EXPECT_EQ(all[2]["validationOnly"], false);
  EXPECT_EQ(all[1]["uploads"], all[2]["uploads"]);  // one upload, validated then loaded
  EXPECT_EQ(
      std::distance(std::filesystem::directory_iterator(client + "/state/loam/submissions"), {}),
      0);
  ::kill(pid, SIGTERM);
  EXPECT_EQ(WaitLoam(dir_, pid).code, 0);
}

}  // namespace
}  // namespace loam::testing
