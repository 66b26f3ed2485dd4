// Kill test (after RocksDB's db_crashtest): a child `loam load` is killed
// with SIGKILL at a random moment or at a named failpoint; the same command
// is then repeated with the same idempotency key. Afterwards the table must
// hold every run's rows exactly once and its heads must match the journal.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "cli/cli_test_util.h"
#include "common/ulid.h"

namespace loam::testing {
namespace {

TEST(CliKill, EveryRunTakesEffectExactlyOnce) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("loam-kill-" + NewUlidString())).string();
  std::filesystem::create_directories(dir);
  const std::map<std::string, std::string> env = {{"LOAM_RUN_LEASE_MILLIS", "1"}};
  ASSERT_EQ(RunLoam(dir, {"init"}).code, 0);
  ASSERT_EQ(RunLoam(dir, {"table", "create", "t", "--column", "id:int64:not-null", "--column",
                          "v:string", "--key", "id"})
                .code,
            0);
  const char* trials_env = std::getenv("LOAM_KILL_TRIALS");
  const int trials = trials_env ? std::atoi(trials_env) : 20;
  const char* seed_env = std::getenv("LOAM_KILL_SEED");
  const uint32_t seed = seed_env ? static_cast<uint32_t>(std::strtoul(seed_env, nullptr, 10))
                                 : std::random_device{}();
  std::mt19937 rng(seed);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<std::string> points = {"run.after_validate", "run.before_commit",
                                           "write.after_sidecar", "write.after_table_commit",
                                           "write.after_publish"};
  constexpr int kRows = 5000;
  int killed = 0;
  for (int trial = 0; trial < trials; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    std::string csv = "id,v\n";
    for (int r = 0; r < kRows; ++r)
      csv += std::to_string(trial * 100000 + r) + ",value-" + std::to_string(r) + "\n";
    const std::string file = "trial" + std::to_string(trial) + ".csv";
    WriteFile(dir + "/" + file, csv);
    const std::vector<std::string> args = {
        "load", "t", file, "--idempotency-key", "trial-" + std::to_string(trial), "--json"};
    std::map<std::string, std::string> child_env = env;
    if (trial % 3 == 0) child_env["LOAM_CRASH_AT"] = points[(trial / 3) % points.size()];
    const pid_t pid = StartLoam(dir, args, child_env);
    if (trial % 3 != 0) {
      // Fault timing, not synchronisation: a random moment of the load.
      std::this_thread::sleep_for(
          std::chrono::microseconds(std::uniform_int_distribution<int>(0, 60000)(rng)));
      ::kill(pid, SIGKILL);
    }
    CliResult first = WaitLoam(dir, pid);
    if (first.signal == SIGKILL) ++killed;
    CliResult resumed = RunLoam(dir, args, env);
    ASSERT_EQ(resumed.code, 0) << resumed.all();
    nlohmann::json run = nlohmann::json::parse(resumed.out);
    EXPECT_EQ(run["state"], "succeeded");
    EXPECT_FALSE(run["commit"]["commitId"].get<std::string>().empty());
  }
  std::cout << killed << " of " << trials << " loads were killed before they finished\n";
  EXPECT_GT(killed, 0);
  // Every id exactly once.
  CliResult out = RunLoam(dir, {"export", "t", "--format", "csv"});
  ASSERT_EQ(out.code, 0) << out.err;
  std::set<int64_t> ids;
  int64_t lines = 0;
  std::istringstream in(out.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    ++lines;
    ids.insert(std::stoll(line.substr(0, line.find(','))));
  }
  EXPECT_EQ(lines, static_cast<int64_t>(trials) * kRows);
  EXPECT_EQ(ids.size(), static_cast<size_t>(lines));
  CliResult verify = RunLoam(dir, {"heads", "verify"});
  EXPECT_EQ(verify.code, 0) << verify.all();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loam::testing
