// Kill test (after RocksDB's db_crashtest): a child `loam load` is killed
// with SIGKILL at a random moment or at a named failpoint; the same command
// is then repeated with the same idempotency key. Afterwards the table must
// hold every run's rows exactly once and its heads must match the journal.
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "cli/cli_test_util.h"
#include "common/clock.h"
#include "common/ulid.h"

namespace loam::testing {
namespace {

// A fresh workspace directory named `prefix`-ULID, with table t (id int64
// not null, v string) keyed on id.
std::string WorkspaceWithTable(const std::string& prefix) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / (prefix + "-" + NewUlidString())).string();
  std::filesystem::create_directories(dir);
  EXPECT_EQ(RunLoam(dir, {"init"}).code, 0);
  EXPECT_EQ(RunLoam(dir, {"table", "create", "t", "--column", "id:int64:not-null", "--column",
                          "v:string", "--key", "id"})
                .code,
            0);
  return dir;
}

TEST(CliKill, EveryRunTakesEffectExactlyOnce) {
  const std::string dir = WorkspaceWithTable("loam-kill");
  const std::map<std::string, std::string> env = {{"LOAM_RUN_LEASE_MILLIS", "1"}};
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

// The kill test under a machine losing power (loam_power_loss): at each
// failpoint, what the killed load wrote without durability vanishes, comes
// back cut or empty, or its relaxed deletes come back. Run again with its
// idempotency key, every load commits exactly once, and no load that was
// acknowledged before loses a row.
// Each command runs as loam_power_loss sharing one ledger, so a power loss
// also undoes the unsynced writes of the commands before it (a finished
// load's relaxed sidecar delete comes back, its latest-version hint goes
// back or is cut), as a machine's would.
TEST(CliKill, UnderPowerLossEveryAcknowledgedLoadSurvives) {
  const std::string dir = WorkspaceWithTable("loam-power");
  const std::string ledger = dir + ".unsynced";
  std::filesystem::create_directories(ledger);
  // The killed process is gone: its leases, and the grace for a table
  // version it left without a sidecar, need not be waited out.
  const std::map<std::string, std::string> env = {{"LOAM_RUN_LEASE_MILLIS", "1"},
                                                  {"LOAM_SIDECAR_LEASE_MILLIS", "1"},
                                                  {"LOAM_RECOVERY_GRACE_MILLIS", "1"},
                                                  {"LOAM_POWER_LOSS_LEDGER", ledger}};
  const std::vector<std::string> points = {"run.after_validate", "run.before_commit",
                                           "write.after_sidecar", "write.after_table_commit",
                                           "write.after_publish"};
  constexpr int kRows = 300;
  int trial = 0, changed = 0, changed_earlier = 0;
  for (int seed = 1; seed <= 2; ++seed) {
    for (const std::string& point : points) {
      SCOPED_TRACE(point + ", seed " + std::to_string(seed));
      std::string csv = "id,v\n";
      for (int r = 0; r < kRows; ++r) csv += std::to_string(trial * 1000 + r) + ",v\n";
      const std::string file = "p" + std::to_string(trial) + ".csv";
      WriteFile(dir + "/" + file, csv);
      const std::vector<std::string> args = {"load", "t", file, "--idempotency-key", file};
      std::map<std::string, std::string> crash = env;
      crash["LOAM_CRASH_AT"] = point;
      crash["LOAM_POWER_LOSS_SEED"] = std::to_string(seed);
      const CliResult killed = RunLoam(dir, args, crash, LOAM_POWER_LOSS_BINARY);
      ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
      changed += killed.err.find("power loss: 0 ") == std::string::npos;
      std::smatch earlier;
      ASSERT_TRUE(std::regex_search(killed.err, earlier,
                                    std::regex("power loss: \\d+ unsynced keys changed, (\\d+) "
                                               "written by earlier commands")))
          << killed.err;
      changed_earlier += std::stoi(earlier[1].str()) > 0;
      const CliResult resumed = RunLoam(dir, args, env, LOAM_POWER_LOSS_BINARY);
      ASSERT_EQ(resumed.code, 0) << resumed.all();
      ++trial;
    }
  }
  EXPECT_GT(changed, 0);          // some crash lost unsynced writes
  EXPECT_GT(changed_earlier, 0);  // some of an earlier command's
  // Every trial's rows once (ids are distinct across trials): none lost,
  // none twice.
  EXPECT_EQ(RunLoam(dir, {"count", "t"}).out, std::to_string(trial * kRows) + "\n");
  CliResult verify = RunLoam(dir, {"heads", "verify"});
  EXPECT_EQ(verify.code, 0) << verify.all();
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(ledger);
}

// A load killed after its table commit holds the table only until its
// write sidecar's lease is over: the next load of another run recovers it
// (rolled forward, its run committed) and commits, long before the 60 s
// grace period; the killed load, run again, is already committed.
TEST(CliKill, AKilledLoadHoldsItsTableOnlyUntilItsSidecarLeaseIsOver) {
  const std::string dir = WorkspaceWithTable("loam-lease");
  // The killed process's run lease is over at once too, so its load can be
  // run again.
  const std::map<std::string, std::string> env = {{"LOAM_SIDECAR_LEASE_MILLIS", "1"},
                                                  {"LOAM_RUN_LEASE_MILLIS", "1"}};
  WriteFile(dir + "/a.csv", "id,v\n1,a\n2,a\n3,a\n");
  WriteFile(dir + "/b.csv", "id,v\n4,b\n5,b\n");
  const std::vector<std::string> load_a = {"load", "t", "a.csv", "--idempotency-key", "a"};
  std::map<std::string, std::string> crash = env;
  crash["LOAM_CRASH_AT"] = "write.after_table_commit";
  const int64_t killed_before = Clock::System()->NowMicros();
  ASSERT_EQ(RunLoam(dir, load_a, crash).signal, SIGKILL);

  // Without the lease, B would meet A's unpublished version as a conflict
  // until it is 60 s old, and retry until then.
  CliResult b = RunLoam(dir, {"load", "t", "b.csv", "--json"}, env);
  ASSERT_EQ(b.code, 0) << b.all();
  const nlohmann::json run = nlohmann::json::parse(b.out);
  EXPECT_EQ(run["state"], "succeeded");
  EXPECT_LT(run["timings"]["finishedMicros"].get<int64_t>(), killed_before + 60'000'000);
  EXPECT_EQ(RunLoam(dir, {"count", "t"}).out, "5\n");
  CliResult log = RunLoam(dir, {"log", "--json"});
  EXPECT_NE(log.out.find("loam:recovery"), std::string::npos) << log.out;

  CliResult again = RunLoam(dir, load_a, env);
  EXPECT_EQ(again.code, 0) << again.all();
  EXPECT_EQ(RunLoam(dir, {"count", "t"}).out, "5\n");
  EXPECT_EQ(RunLoam(dir, {"heads", "verify"}).code, 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loam::testing
