// `loam heads verify` and `loam heads repair` through the front door, on a
// workspace corrupted underneath the command (a head deleted, a head
// duplicated, a definition dropped), and grant audit rows in `loam history`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/aged_workspace_test_util.h"
#include "cli/cli_test_util.h"
#include "common/ulid.h"
#include "engine/workspace.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

class CliHeadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("loam-heads-" + NewUlidString())).string();
    std::filesystem::create_directories(dir_);
    Ok({"init"});
    for (const char* t : {"a", "b", "c"}) {
      Ok({"table", "create", t, "--column", "id:int64:not-null", "--key", "id"});
    }
    WriteFile(dir_ + "/x.csv", "id\n1\n2\n");
    Ok({"load", "b", "x.csv"});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult Run(const std::vector<std::string>& args) { return RunLoam(dir_, args, {}); }
  CliResult Ok(const std::vector<std::string>& args) {
    CliResult r = Run(args);
    EXPECT_EQ(r.code, 0) << ::testing::PrintToString(args) << "\n" << r.all();
    return r;
  }
  std::shared_ptr<WorkspaceEngine> Open() {
    WorkspaceOptions o;
    o.system_actor = true;
    o.recover_on_open = false;
    return WorkspaceEngine::Open(OpenObjectStore(dir_ + "/loam-data").value(), "", o).value();
  }
  // Points partition `p` of main's latest version at `rows`, as a bug or a
  // bad hand edit could.
  static void Corrupt(WorkspaceEngine& ws, uint32_t p, std::vector<ManifestRow> rows) {
    Dataset base = ws.manifest().OpenDataset("").value();
    HeadDirectory dir = DecodeHeadDirectory(base.state().app_section).value();
    if (rows.empty()) {
      dir.slots[p] = HeadDirectory::Slot{};
      ASSERT_TRUE(base.CommitRewrite({}, {}, EncodeHeadDirectory(dir)).ok());
      return;
    }
    Fragment f = base.WriteFragment(RowsToBatch(rows)).value();
    dir.Set(p, {f.data_path, f.data_size}, 0, static_cast<uint32_t>(rows.size()));
    ASSERT_TRUE(base.CommitRewrite({f}, {}, EncodeHeadDirectory(dir)).ok());
  }
  // Every row of partition `p` but those for which `drop` is true, plus `add`.
  static std::vector<ManifestRow> Without(WorkspaceEngine& ws, uint32_t p,
                                          const std::function<bool(const ManifestRow&)>& drop,
                                          std::vector<ManifestRow> add = {}) {
    ManifestVersion v = ws.manifest().Current("").value();
    std::vector<ManifestRow> rows = ws.manifest().ReadPartitionUnchecked(v, p).value();
    std::erase_if(rows, drop);
    rows.insert(rows.end(), add.begin(), add.end());
    std::sort(rows.begin(), rows.end(),
              [](const ManifestRow& x, const ManifestRow& y) { return x.object_id < y.object_id; });
    return rows;
  }

  std::string dir_;
};

TEST_F(CliHeadsTest, VerifyIsReadOnlyAndRepairFixesHeadsAndCatalogOnce) {
  {
    auto ws = Open();
    const Snapshot snap = ws->Current().value();
    const TableState a = *snap.Find("a"), b = *snap.Find("b"), c = *snap.Find("c");
    const ManifestRow b_head = TableHeadRow(b.head);
    // a's head deleted.
    const uint32_t pa = LiveHeadPartition(a.def.sid);
    Corrupt(*ws, pa, Without(*ws, pa, [&](const ManifestRow& r) {
      return r.object_id == TableHeadId(a.def.sid);
    }));
    // b's head twice.
    const uint32_t pb = LiveHeadPartition(b.def.sid);
    Corrupt(*ws, pb, Without(*ws, pb, [](const ManifestRow&) { return false; }, {b_head}));
    // c's definition dropped from the catalog.
    Corrupt(*ws, kCatalogPartition, Without(*ws, kCatalogPartition, [&](const ManifestRow& r) {
      return r.object_id == TableDefId(c.def.sid);
    }));
  }
  // A torn sidecar is pending: verify reports it and leaves it in place.
  WriteFile(dir_ + "/loam-data/_recovery/01TORN.json", "{\"format\":1,");

  CliResult verify = Run({"heads", "verify", "--json"});
  EXPECT_EQ(verify.code, 7) << verify.all();
  json report = json::parse(verify.out.substr(0, verify.out.find('\n')));
  const std::string problems = report["problems"].dump();
  EXPECT_NE(problems.find("head missing"), std::string::npos) << problems;
  EXPECT_NE(problems.find("duplicate head"), std::string::npos) << problems;
  EXPECT_NE(problems.find("has a live head but no definition"), std::string::npos) << problems;
  EXPECT_EQ(report["pendingSidecars"], 1);
  EXPECT_NE(verify.err.find("loam heads repair --offline"), std::string::npos) << verify.err;
  // Read-only: the same version again, the sidecar where it was.
  CliResult again = Run({"heads", "verify", "--json"});
  EXPECT_EQ(json::parse(again.out.substr(0, again.out.find('\n')))["manifestVersion"],
            report["manifestVersion"]);
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/loam-data/_recovery/01TORN.json"));

  CliResult online = Run({"heads", "repair"});
  EXPECT_EQ(online.code, 3) << online.all();
  EXPECT_NE(online.err.find("stop every writer first"), std::string::npos) << online.err;

  CliResult repair = Ok({"heads", "repair", "--offline"});
  EXPECT_NE(repair.out.find("repaired 3 problems"), std::string::npos) << repair.out;
  EXPECT_NE(repair.out.find("duplicate head"), std::string::npos) << repair.out;
  EXPECT_NE(Ok({"heads", "verify"}).out.find("all match the journal"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/loam-data/_recovery/01TORN.json"));
  EXPECT_NE(Ok({"heads", "repair", "--offline"}).out.find("nothing to repair"), std::string::npos);
  // The tables work again, through their repaired heads and definition.
  EXPECT_EQ(Ok({"count", "b"}).out, "2\n");
  EXPECT_EQ(Ok({"count", "c"}).out, "0\n");
  WriteFile(dir_ + "/y.csv", "id\n3\n");
  Ok({"load", "a", "y.csv"});
  json log = json::parse(Ok({"log", "--json"}).out);
  bool repaired = false;
  for (const json& c : log) repaired |= c["actor"] == "loam:repair";
  EXPECT_TRUE(repaired) << log.dump();
}

// A load killed after its table commit leaves a sidecar whose lease is not
// over (and its run a lease): repair would roll a live writer back, so it
// refuses, changing nothing, unless --force says the writer is gone. (The
// sidecar's lease is made as long as the grace period, so a slow machine
// cannot outlast it.)
TEST_F(CliHeadsTest, RepairRefusesWhileAWriterMayBeAliveUnlessForced) {
  WriteFile(dir_ + "/y.csv", "id\n3\n");
  CliResult killed = RunLoam(
      dir_, {"load", "b", "y.csv"},
      {{"LOAM_CRASH_AT", "write.after_table_commit"}, {"LOAM_SIDECAR_LEASE_MILLIS", "60000"}});
  ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
  CliResult refused = Run({"heads", "repair", "--offline"});
  EXPECT_EQ(refused.code, 3) << refused.all();
  EXPECT_NE(refused.err.find("heads repair found 1 write sidecars whose lease is not over (at most "
                             "the recovery grace period, 60 s)"),
            std::string::npos)
      << refused.all();
  EXPECT_NE(refused.err.find("pass --force if you know they are gone"), std::string::npos)
      << refused.all();
  EXPECT_EQ(json::parse(Run({"--json", "heads", "repair", "--offline"}).out)["error"]["code"],
            "precondition_failed");
  EXPECT_EQ(Open()->PendingSidecars().value(), 1);  // nothing was settled
  CliResult forced = Ok({"heads", "repair", "--offline", "--force"});
  EXPECT_NE(forced.out.find("nothing to repair"), std::string::npos) << forced.out;
  EXPECT_EQ(Open()->PendingSidecars().value(), 0);
  EXPECT_EQ(Ok({"count", "b"}).out, "3\n");  // the killed load's commit rolled forward
}

TEST_F(CliHeadsTest, GrantChangesAreAuditedInHistory) {
  Ok({"table", "grant", "b", "bob", "writer"});
  Ok({"table", "grant", "b", "bob", "none"});
  json history = json::parse(Ok({"history", "b", "--json"}).out);
  std::vector<std::string> grants;
  for (const json& e : history) {
    if (e["event"] == "table_grant") {
      grants.push_back(e["detail"].get<std::string>());
      EXPECT_FALSE(e["actor"].get<std::string>().empty());
      EXPECT_GT(e["createdMicros"].get<int64_t>(), 0);
    }
  }
  EXPECT_EQ(grants, (std::vector<std::string>{"bob: writer", "bob: revoked"})) << history.dump();
  Ok({"heads", "verify"});
}

// The time-travel window through the front door: `loam retention` sets it
// (and refuses a window under a minute, leaving it as it was), `loam gc`
// applies it, and a read past it is version_expired naming the oldest
// readable version.
TEST(CliRetentionTest, GcAppliesTheWindowAndReadsPastItAreVersionExpired) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("loam-retention-" + NewUlidString())).string();
  std::filesystem::create_directories(dir);
  const std::vector<uint64_t> versions = WriteAgedHistory(dir + "/loam-data");
  auto run = [&](const std::vector<std::string>& args) { return RunLoam(dir, args, {}); };

  CliResult low = run({"retention", "--window-seconds", "10"});
  EXPECT_EQ(low.code, 2) << low.all();
  EXPECT_NE(low.err.find("between 60 seconds and 100 years"), std::string::npos) << low.all();
  EXPECT_EQ(json::parse(run({"--json", "retention"}).out)["windowSeconds"], 604800);
  EXPECT_EQ(run({"retention", "--window-seconds", "5400"}).code, 0);  // 90 minutes
  // A branch that wrote t (its own fork of t's dataset), then deleted.
  ASSERT_EQ(run({"branch", "create", "dev"}).code, 0);
  WriteFile(dir + "/d.csv", "id\n42\n");
  CliResult load = run({"load", "t", "d.csv", "--branch", "dev"});
  ASSERT_EQ(load.code, 0) << load.all();
  const auto has_fork = [&] {
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir + "/loam-data/tables")) {
      if (e.path().string().find("/tree/") != std::string::npos) return true;
    }
    return false;
  };
  ASSERT_TRUE(has_fork());
  ASSERT_EQ(run({"branch", "delete", "dev"}).code, 0);

  CliResult gc = run({"--json", "gc", "--grace-seconds", "0"});
  ASSERT_EQ(gc.code, 0) << gc.all();
  json report = json::parse(gc.out);
  EXPECT_EQ(report["windowSeconds"], 5400);
  EXPECT_GT(report["manifestVersionsRemoved"].get<int>(), 0) << gc.out;
  EXPECT_GT(report["tableVersionsRemoved"].get<int>(), 0) << gc.out;
  // Current from hour -2 (before the cutoff at -1.5) until hour -1.
  EXPECT_EQ(report["oldestManifestVersion"]["main"], versions[1]) << gc.out;
  // "gone", dropped at hour -2.5, is named by no version kept: its dataset goes.
  EXPECT_EQ(report["tablesRemoved"], 1) << gc.out;
  size_t datasets = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/loam-data/tables")) {
    datasets += e.is_directory();
  }
  EXPECT_EQ(datasets, 1u);  // t's
  // The deleted branch's fork of t went with it.
  EXPECT_EQ(report["forksRemoved"], 1) << gc.out;
  EXPECT_FALSE(has_fork());

  CliResult past = run({"--json", "count", "t", "--version", std::to_string(versions[0])});
  EXPECT_EQ(past.code, 4) << past.all();
  json error = json::parse(past.out)["error"];
  EXPECT_EQ(error["code"], "version_expired");
  EXPECT_EQ(error["oldestVersion"], versions[1]);
  EXPECT_NE(past.err.find("past the time-travel window"), std::string::npos) << past.err;
  EXPECT_EQ(run({"count", "t", "--version", std::to_string(versions[1])}).out, "2\n");
  // A branch from past the window: refused the same way, and not made.
  CliResult fork =
      run({"--json", "branch", "create", "past", "--from", "main@" + std::to_string(versions[0])});
  EXPECT_EQ(fork.code, 4) << fork.all();
  EXPECT_EQ(json::parse(fork.out)["error"]["code"], "version_expired") << fork.out;
  EXPECT_EQ(run({"branch", "list"}).out.find("past"), std::string::npos);
  EXPECT_EQ(run({"count", "t"}).out, "3\n");
  EXPECT_EQ(json::parse(run({"--json", "retention"}).out)["oldestManifestVersion"], versions[1]);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loam::testing
