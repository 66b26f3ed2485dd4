// `loam sql` through the front door: its answers in each format, time
// travel and branches, scripts from a file, and its refusals and limits
// with their exit codes and stable codes (docs/sql.md, docs/errors.md).
#include <poll.h>
#include <pty.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"
#include "gtest/gtest.h"

namespace loam::testing {
namespace {

class CliSqlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("loam-cli-sql-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Ok({"init"});
    Ok({"table", "create", "t", "--column", "id:int64:not-null", "--column", "city:string",
        "--column", "qty:int32", "--column", "at:timestamp", "--key", "id"});
    WriteFile(dir_ + "/a.csv",
              "id,city,qty,at\n1,Oslo,3,2026-01-01T00:00:00Z\n2,Lima,5,2026-01-02T00:00:00Z\n"
              "3,Oslo,,2026-01-03T00:00:00Z\n");
    Ok({"load", "t", "a.csv"});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult Ok(const std::vector<std::string>& args) {
    CliResult r = RunLoam(dir_, args);
    EXPECT_EQ(r.code, 0) << "loam " << ::testing::PrintToString(args) << "\n" << r.all();
    return r;
  }

  std::string dir_;
};

TEST_F(CliSqlTest, AnswersInEachFormat) {
  const std::string q =
      "SELECT city, count(*) AS n, sum(qty) AS total FROM t GROUP BY city "
      "ORDER BY city";
  EXPECT_EQ(Ok({"sql", q}).out,
            "city  n  total\n----  -  -----\nLima  1  5\nOslo  2  3\n(2 rows)\n");
  EXPECT_EQ(Ok({"sql", q, "--format", "csv"}).out, "city,n,total\nLima,1,5\nOslo,2,3\n");
  EXPECT_EQ(
      Ok({"sql", "SELECT id, qty, at FROM t WHERE id IN (2, 3) ORDER BY id", "--format", "jsonl"})
          .out,
      "{\"id\":2,\"qty\":5,\"at\":\"2026-01-02T00:00:00Z\"}\n"
      "{\"id\":3,\"qty\":null,\"at\":\"2026-01-03T00:00:00Z\"}\n");
  EXPECT_EQ(Ok({"sql", "SELECT id FROM t ORDER BY id", "--max-rows", "2", "--format", "csv"}).out,
            "id\n1\n2\n");
}

TEST_F(CliSqlTest, ReadsAnEarlierVersionOrABranch) {
  const nlohmann::json log = nlohmann::json::parse(Ok({"--json", "log"}).out);
  WriteFile(dir_ + "/b.csv", "id,city,qty,at\n4,Pune,7,2026-01-04T00:00:00Z\n");
  Ok({"branch", "create", "dev"});
  Ok({"load", "t", "b.csv", "--branch", "dev"});
  Ok({"load", "t", "b.csv"});
  const std::string version = std::to_string(log[0]["manifestVersion"].get<int64_t>());
  const std::vector<std::string> count = {"sql", "SELECT count(*) FROM t", "--format", "csv"};
  EXPECT_EQ(Ok(count).out, "count(*)\n4\n");
  std::vector<std::string> then = count;
  then.insert(then.end(), {"--version", version});
  EXPECT_EQ(Ok(then).out, "count(*)\n3\n");
  std::vector<std::string> dev = count;
  dev.insert(dev.end(), {"--branch", "dev"});
  EXPECT_EQ(Ok(dev).out, "count(*)\n4\n");
}

TEST_F(CliSqlTest, RunsAScriptFromAFile) {
  WriteFile(dir_ + "/q.sql",
            "-- two statements\nSELECT count(*) AS n FROM t;\n"
            "SELECT state, inserted FROM loam_runs;\n");
  EXPECT_EQ(Ok({"sql", "--file", "q.sql", "--format", "csv"}).out,
            "n\n3\nstate,inserted\nsucceeded,3\n");
}

TEST_F(CliSqlTest, RefusesWritesAndStopsAtItsLimitsLeavingTheTableAsItWas) {
  const auto before = TreeExceptRuns(dir_ + "/loam-data");
  CliResult del = RunLoam(dir_, {"--json", "sql", "DELETE FROM t WHERE id = 1"});
  EXPECT_EQ(del.code, 5) << del.all();
  EXPECT_EQ(nlohmann::json::parse(del.out)["error"]["code"], "permission_denied");
  EXPECT_NE(del.err.find("SQL here only reads: DELETE is refused"), std::string::npos);
  CliResult attach = RunLoam(dir_, {"sql", "ATTACH 'x.db' AS x"});
  EXPECT_EQ(attach.code, 5) << attach.all();
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.db"));

  CliResult slow = RunLoam(dir_, {"--json", "sql", "--time-budget-ms", "100",
                                  "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 "
                                  "FROM r) SELECT count(*) FROM r"});
  EXPECT_EQ(slow.code, 6) << slow.all();
  EXPECT_EQ(nlohmann::json::parse(slow.out)["error"]["code"], "limit_exceeded");
  EXPECT_NE(slow.err.find("sqlTimeBudgetMillis"), std::string::npos);

  CliResult bad = RunLoam(dir_, {"sql", "SELEC 1"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("syntax error"), std::string::npos);
  EXPECT_EQ(RunLoam(dir_, {"sql", "SELECT 1", "--file", "q.sql"}).code, 2);
  EXPECT_EQ(TreeExceptRuns(dir_ + "/loam-data"), before);
  EXPECT_EQ(Ok({"sql", "SELECT count(*) FROM t", "--format", "csv"}).out, "count(*)\n3\n");
}

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Reads the terminal until `want` has appeared `times` times or 30 s pass.
std::string ReadUntil(int fd, const std::string& want, std::string* seen, size_t times = 1) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Count(*seen, want) < times && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    seen->append(buf, static_cast<size_t>(n));
  }
  return *seen;
}

TEST_F(CliSqlTest, APromptOnATerminalRunsEachCompleteStatementAndKeepsItsHistory) {
  int terminal = -1;
  const pid_t pid = ::forkpty(&terminal, nullptr, nullptr, nullptr);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(dir_.c_str()) != 0) ::_exit(126);
    ::unsetenv("LOAM_ROOT");
    ::unsetenv("LOAM_PRINCIPAL");
    ::setenv("HOME", dir_.c_str(), 1);
    ::execl(LOAM_BINARY, "loam", "sql", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string seen;
  EXPECT_NE(ReadUntil(terminal, "loam> ", &seen).find("loam> "), std::string::npos);
  // A statement over two lines runs once its ';' is typed.
  const std::string first = "SELECT count(*) AS n\n";
  ASSERT_EQ(::write(terminal, first.data(), first.size()), static_cast<ssize_t>(first.size()));
  EXPECT_NE(ReadUntil(terminal, "...> ", &seen).find("...> "), std::string::npos) << seen;
  const std::string rest = "FROM t WHERE qty IS NOT NULL;\nSELEC 1;\n";
  ASSERT_EQ(::write(terminal, rest.data(), rest.size()), static_cast<ssize_t>(rest.size()));
  // The third prompt: both statements ran and the prompt waits again.
  ReadUntil(terminal, "loam> ", &seen, 3);
  EXPECT_NE(seen.find("(1 row)"), std::string::npos) << seen;
  EXPECT_NE(seen.find("2\r\n(1 row)"), std::string::npos) << seen;
  EXPECT_NE(seen.find("syntax error"), std::string::npos) << seen;
  // Ends it: a line read whole in any terminal mode (an end-of-input byte
  // typed before the prompt switches the terminal to raw mode is lost).
  ASSERT_EQ(::write(terminal, ".quit\n", 6), 6);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);  // a prompt that ignores the end of input fails, not hangs
      ::waitpid(pid, &status, 0);
      break;
    }
    ReadUntil(terminal, "\n", &seen, Count(seen, "\n") + 1);  // drains what it prints
  }
  ::close(terminal);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << seen;
  const std::string history = Slurp(dir_ + "/.loam_sql_history");
  EXPECT_NE(history.find("FROM"), std::string::npos) << history;
  EXPECT_NE(history.find("SELEC"), std::string::npos) << history;
}

}  // namespace
}  // namespace loam::testing
