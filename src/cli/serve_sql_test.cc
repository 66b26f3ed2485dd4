// POST /v1/sql on a real `loam serve`: answers as JSON Lines (whole and
// streamed), time travel and branches in the body, grants, and hostile
// statements with their status codes and stable codes (docs/sql.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "cli/cli_test_util.h"
#include "server/server_test_util.h"

namespace loam::testing {
namespace {

using nlohmann::json;

class ServeSqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("loam-serve-sql-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Ok({"init"});
    Ok({"table", "create", "t", "--column", "id:int64:not-null", "--column", "city:string",
        "--column", "qty:int32", "--key", "id"});
    t_only_ = Version();
    Ok({"table", "create", "dim", "--column", "city:string:not-null", "--column", "region:string",
        "--key", "city"});
    std::string csv = "id,city,qty\n";
    for (int i = 1; i <= 3000; ++i) {
      csv +=
          std::to_string(i) + "," + (i % 2 ? "Oslo" : "Lima") + "," + std::to_string(i % 7) + "\n";
    }
    WriteFile(dir_ + "/t.csv", csv);
    WriteFile(dir_ + "/dim.csv", "city,region\nOslo,north\nLima,south\n");
    Ok({"load", "t", "t.csv"});
    t_loaded_ = Version();
    Ok({"load", "dim", "dim.csv"});
    Ok({"table", "grant", "t", "bob", "reader"});
    WriteFile(dir_ + "/secret", "a-serve-test-secret-of-32-bytes-or-more\n");
    WriteFile(dir_ + "/config.json",
              R"({"sqlTimeBudgetMillis": 300, "sqlMaxValueBytes": 1048576, "sqlMaxRows": 5000})");
    pid_ =
        StartLoam(dir_, {"serve", "--listen", "127.0.0.1:0", "--auth-hs256-secret-file", "secret",
                         "--no-access-log", "--workers", "0", "--config", "config.json"});
    port_ = WaitListening();
    owner_ = Token("owner");
    bob_ = Token("bob");
  }
  void TearDown() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      WaitLoam(dir_, pid_);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void Ok(const std::vector<std::string>& args) {
    CliResult r = RunLoam(dir_, args);
    ASSERT_EQ(r.code, 0) << ::testing::PrintToString(args) << "\n" << r.all();
  }
  int64_t Version() {
    CliResult info = RunLoam(dir_, {"--json", "info"});
    return json::parse(info.out)["manifestVersion"].get<int64_t>();
  }
  std::string Token(const std::string& sub) {
    CliResult t = RunLoam(dir_, {"token", "--secret-file", "secret", "--sub", sub});
    EXPECT_EQ(t.code, 0) << t.err;
    return "Bearer " + t.out.substr(0, t.out.find('\n'));
  }
  // The port `loam serve` started in `dir` (default: the test's) listens on.
  uint16_t WaitListening(std::string dir = "") {
    if (dir.empty()) dir = dir_;
    const std::string prefix = "listening on http://127.0.0.1:";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string out = Slurp(dir + "/.stdout");
      const size_t at = out.find(prefix);
      if (at != std::string::npos && out.find(' ', at + prefix.size()) != std::string::npos) {
        return static_cast<uint16_t>(std::stoi(out.substr(at + prefix.size())));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // polling a file, bounded
    }
    ADD_FAILURE() << "no listening line: " << Slurp(dir_ + "/.stderr");
    return 0;
  }
  server::HttpResult Sql(const json& body, const std::string& bearer) {
    return server::HttpCall(port_, "POST", "/v1/sql", body.dump(),
                            {{"Authorization", bearer}, {"Content-Type", "application/json"}});
  }
  static std::vector<json> Lines(const std::string& body) {
    std::vector<json> out;
    std::istringstream in(body);
    for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
    return out;
  }

  std::string dir_;
  pid_t pid_ = 0;
  uint16_t port_ = 0;
  std::string owner_, bob_;
  int64_t t_only_ = 0;    // t made, dim not yet
  int64_t t_loaded_ = 0;  // t loaded, dim empty
};

TEST_F(ServeSqlTest, AnswersAsJsonLinesWithColumnsFirstAndAnEndLine) {
  server::HttpResult r =
      Sql({{"query",
            "SELECT d.region, count(*) AS n, sum(qty) FROM t JOIN dim d USING (city) "
            "GROUP BY 1 ORDER BY 1"}},
          owner_);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Header("content-type"), "application/x-ndjson");
  const std::vector<json> lines = Lines(r.body);
  ASSERT_EQ(lines.size(), 4u) << r.body;
  EXPECT_EQ(lines[0], json::parse(R"j({"columns":[{"name":"region","type":"TEXT"},
      {"name":"n","type":"INTEGER"},{"name":"sum(qty)","type":"INTEGER"}]})j"));
  int64_t north = 0, south = 0;  // as SetUp wrote them: odd ids in Oslo
  for (int i = 1; i <= 3000; ++i) (i % 2 ? north : south) += i % 7;
  EXPECT_EQ(lines[1], json::array({"north", 1500, north}));
  EXPECT_EQ(lines[2], json::array({"south", 1500, south}));
  EXPECT_EQ(lines[3], json::parse(R"({"end":{"rows":2,"truncated":false}})"));

  // Over 256 KiB the answer streams in chunks, whole to its end line.
  server::HttpResult big =
      Sql({{"query", "SELECT t.*, printf('%0200d', id) FROM t ORDER BY id"}}, owner_);
  ASSERT_EQ(big.status, 200) << big.body;
  EXPECT_EQ(big.Header("transfer-encoding"), "chunked");
  EXPECT_EQ(big.Header("request-id").size(), 26u);  // set on the head before it went
  const std::vector<json> rows = Lines(big.body);
  ASSERT_EQ(rows.size(), 3002u);
  EXPECT_EQ(rows[3000][0], 3000);
  EXPECT_EQ(rows.back(), json::parse(R"({"end":{"rows":3000,"truncated":false}})"));

  server::HttpResult cut = Sql({{"query", "SELECT id FROM t"}, {"limit", 2}}, owner_);
  EXPECT_EQ(Lines(cut.body).back(), json::parse(R"({"end":{"rows":2,"truncated":true}})"));
}

TEST_F(ServeSqlTest, ReadsTheVersionAndBranchTheBodyNames) {
  server::HttpResult then =
      Sql({{"query", "SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM dim)"},
           {"version", t_loaded_}},
          owner_);
  ASSERT_EQ(then.status, 200) << then.body;
  EXPECT_EQ(Lines(then.body)[1], json::parse("[3000, 0]"));
  server::HttpResult no_dim = Sql({{"query", "SELECT * FROM dim"}, {"version", t_only_}}, owner_);
  EXPECT_EQ(no_dim.status, 400) << no_dim.body;
  EXPECT_NE(no_dim.Json()["detail"].get<std::string>().find("no such table: dim"),
            std::string::npos);
  server::HttpResult nowhere = Sql({{"query", "SELECT 1"}, {"branch", "nope"}}, owner_);
  EXPECT_EQ(nowhere.status, 404) << nowhere.body;
}

// Write, audit, publish over HTTP: a merge's SQL check runs on the branch's
// pinned state, through the caller's grants.
TEST_F(ServeSqlTest, AMergesSqlCheckMustReturnNoRow) {
  const auto call = [&](const std::string& method, const std::string& target, const json& body,
                        const std::string& bearer) {
    return server::HttpCall(port_, method, target, body.dump(),
                            {{"Authorization", bearer}, {"Content-Type", "application/json"}});
  };
  ASSERT_EQ(call("POST", "/v1/branches", {{"name", "day"}}, owner_).status, 201);
  WriteFile(dir_ + "/more.csv", "id,city,qty\n5001,Quito,1\n5002,Oslo,2\n");
  Ok({"load", "t", "more.csv", "--branch", "day"});
  const json orphan = {
      {"checks",
       {{{"name", "known cities"},
         {"sql", "SELECT id, city FROM t WHERE city NOT IN (SELECT city FROM dim)"}}}}};
  server::HttpResult refused = call("POST", "/v1/branches/day/merge", orphan, owner_);
  ASSERT_EQ(refused.status, 422) << refused.body;
  EXPECT_EQ(refused.Json()["code"], "merge_check_failed");
  EXPECT_EQ(refused.Json()["check"], "known cities") << refused.body;
  EXPECT_NE(refused.Json()["detail"].get<std::string>().find("id: 5001"), std::string::npos)
      << refused.body;
  // A reader of t alone may not read dim, so its check cannot pass either.
  EXPECT_EQ(call("POST", "/v1/branches/day/merge", orphan, bob_).status, 403);
  Ok({"load", "dim", "dim.csv", "--branch", "day", "--mode", "replace"});
  WriteFile(dir_ + "/quito.csv", "city,region\nQuito,west\n");
  Ok({"load", "dim", "quito.csv", "--branch", "day"});
  server::HttpResult merged = call("POST", "/v1/branches/day/merge", orphan, owner_);
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.Json()["tables"].size(), 2u) << merged.body;
  server::HttpResult count = Sql({{"query", "SELECT count(*) FROM t"}}, owner_);
  EXPECT_EQ(Lines(count.body)[1], json::parse("[3002]"));
}

TEST_F(ServeSqlTest, AReaderReadsOnlyTheTablesItHoldsAGrantOn) {
  server::HttpResult mine = Sql({{"query", "SELECT count(*) FROM t"}}, bob_);
  ASSERT_EQ(mine.status, 200) << mine.body;
  EXPECT_EQ(Lines(mine.body)[1], json::parse("[3000]"));
  for (const char* q : {"SELECT * FROM dim", "SELECT count(*) FROM t JOIN dim USING (city)",
                        "SELECT * FROM loam_log"}) {
    server::HttpResult r = Sql({{"query", q}}, bob_);
    EXPECT_EQ(r.status, 403) << q << ": " << r.body;
    EXPECT_EQ(r.Json()["code"], "permission_denied");
    EXPECT_FALSE(r.Json().value("table", "").empty()) << r.body;
  }
  EXPECT_EQ(Sql({{"query", "SELECT * FROM dim"}}, bob_).Json()["table"], "dim");
  server::HttpResult none = server::HttpCall(port_, "POST", "/v1/sql", R"({"query":"SELECT 1"})");
  EXPECT_EQ(none.status, 401);
}

TEST_F(ServeSqlTest, HostileStatementsAreRefusedWithTheirCodesAndChangeNothing) {
  for (const char* q : {"INSERT INTO t(id) VALUES (9999)", "DELETE FROM t", "DROP TABLE t",
                        "ATTACH 'x.db' AS x", "PRAGMA writable_schema = ON",
                        "SELECT load_extension('libc.so.6')", "CREATE TEMP TABLE x(a)"}) {
    server::HttpResult r = Sql({{"query", q}}, owner_);
    EXPECT_TRUE(r.status == 403 || r.status == 400) << q << ": " << r.body;
    EXPECT_TRUE(r.Json()["code"] == "permission_denied" || r.Json()["code"] == "invalid_argument")
        << r.body;
  }
  EXPECT_EQ(Sql({{"query", "DELETE FROM t"}}, owner_).status, 403);
  server::HttpResult forever =
      Sql({{"query",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
            "SELECT count(*) FROM r"}},
          owner_);
  EXPECT_EQ(forever.status, 422) << forever.body;
  EXPECT_EQ(forever.Json()["code"], "limit_exceeded");
  EXPECT_EQ(forever.Json()["limit"], "sqlTimeBudgetMillis");
  server::HttpResult huge = Sql({{"query", "SELECT zeroblob(2000000)"}}, owner_);
  EXPECT_EQ(huge.status, 422) << huge.body;
  EXPECT_EQ(huge.Json()["limit"], "sqlValueBytes");
  EXPECT_EQ(Sql({{"query", "SELECT 1; SELECT 2"}}, owner_).status, 400);
  EXPECT_EQ(Sql({{"query", "SELECT 1"}, {"limit", 5001}}, owner_).status, 400);
  EXPECT_EQ(Sql({{"query", "SELECT 1"}, {"asOf", 1}}, owner_).status, 400);
  EXPECT_EQ(Sql({{"sql", "SELECT 1"}}, owner_).status, 400);
  EXPECT_EQ(server::HttpCall(port_, "POST", "/v1/sql", "{", {{"Authorization", owner_}}).status,
            400);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.db"));
  server::HttpResult count = Sql({{"query", "SELECT count(*), max(id) FROM t"}}, owner_);
  EXPECT_EQ(Lines(count.body)[1], json::parse("[3000,3000]"));
}

TEST_F(ServeSqlTest, APrincipalRunsAtMostTwoStatementsAtOnce) {
  // A second server on the same workspace, with room for slow statements
  // (its output in a folder of its own).
  const std::string other = dir_ + "/slow";
  std::filesystem::create_directories(other);
  WriteFile(other + "/slow.json", R"({"sqlTimeBudgetMillis": 2000})");
  const pid_t slow = StartLoam(other, {"serve", "--root", dir_ + "/loam-data", "--listen",
                                       "127.0.0.1:0", "--auth-hs256-secret-file", dir_ + "/secret",
                                       "--workers", "0", "--config", "slow.json"});
  const uint16_t port = WaitListening(other);
  ASSERT_NE(port, 0);
  const std::string forever = json{
      {"query",
       "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) "
       "SELECT count(*) FROM r"}}.dump();
  // Three statements that each run to the budget's end, sent together:
  // two run, the third is refused at once.
  std::vector<int> statuses(3);
  std::vector<std::thread> running;
  for (int i = 0; i < 3; ++i) {
    running.emplace_back([&, i] {
      try {
        statuses[i] =
            server::HttpCall(port, "POST", "/v1/sql", forever,
                             {{"Authorization", bob_}, {"Content-Type", "application/json"}})
                .status;
      } catch (const std::exception&) {
        statuses[i] = -1;  // no answer
      }
    });
  }
  const int other_principal = server::HttpCall(port, "POST", "/v1/sql", R"({"query":"SELECT 1"})",
                                               {{"Authorization", owner_},
                                                {"Content-Type", "application/json"},
                                                {"Request-Id", "sql-check-1"}})
                                  .status;
  for (std::thread& t : running) t.join();
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<int>{422, 422, 429}));
  EXPECT_EQ(other_principal, 200);  // another principal is served
  ::kill(slow, SIGTERM);
  // Its access log names the request by the id the client gave.
  EXPECT_NE(WaitLoam(other, slow).err.find(R"("requestId":"sql-check-1")"), std::string::npos);
}

}  // namespace
}  // namespace loam::testing
