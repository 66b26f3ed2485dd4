// The workspace format boundary through the front door: every entry point
// (a normal command, `loam serve`, `loam heads verify`, `loam migrate`)
// against a format-4 (testdata/workspace_v4), an unstamped, a partially
// migrated, a current and a newer workspace; and `loam migrate` killed with
// SIGKILL, then taken over.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "cli/cli_test_util.h"
#include "common/ulid.h"
#include "engine/format_stamp.h"
#include "engine/workspace.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

class CliMigrateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("loam-migrate-" + NewUlidString())).string();
    std::filesystem::create_directories(dir_);
    Ok({"init"});
    Ok({"table", "create", "t", "--column", "id:int64:not-null", "--key", "id"});
    WriteFile(dir_ + "/x.csv", "id\n1\n2\n");
    Ok({"load", "t", "x.csv"});
    Ok({"branch", "create", "dev"});
    WriteFile(dir_ + "/y.csv", "id\n3\n");
    Ok({"load", "t", "y.csv", "--branch", "dev"});
    WriteFile(dir_ + "/secret", "0123456789abcdef0123456789abcdef");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult Run(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) {
    return RunLoam(dir_, args, env);
  }
  CliResult Ok(const std::vector<std::string>& args) {
    CliResult r = Run(args);
    EXPECT_EQ(r.code, 0) << ::testing::PrintToString(args) << "\n" << r.all();
    return r;
  }
  void Unstamp() { std::filesystem::remove(dir_ + "/loam-data/_control/format.json"); }
  // Every entry point but migrate refuses with `code`, `exit` and `message`.
  void ExpectRefusedEverywhere(const std::string& message, int exit = 9) {
    const std::vector<std::vector<std::string>> commands = {
        {"log"},
        {"scan", "t"},
        {"heads", "verify"},
        {"serve", "--listen", "127.0.0.1:0", "--auth-hs256-secret-file", "secret"}};
    for (const auto& args : commands) {
      CliResult r = Run(args);
      EXPECT_EQ(r.code, exit) << args[0] << "\n" << r.all();
      EXPECT_NE(r.err.find(message), std::string::npos) << args[0] << "\n" << r.all();
    }
  }
  std::string TokenIn(const std::string& text) {
    const size_t at = text.find("--take-over ");
    return at == std::string::npos ? "" : text.substr(at + 12, 26);
  }

  std::string dir_;
};

TEST_F(CliMigrateTest, ACurrentWorkspaceServesAndHasNothingToMigrate) {
  Ok({"log"});
  Ok({"heads", "verify"});
  CliResult r = Ok({"migrate"});
  EXPECT_EQ(r.out, "the workspace is already in format 5; nothing to migrate\n");
}

TEST_F(CliMigrateTest, AnUnstampedWorkspaceIsRefusedUntilMigrated) {
  Unstamp();
  ExpectRefusedEverywhere(
      "has no format stamp (head directory format 9: its stamp was lost, or its init stopped "
      "before writing it); this Loam "
      "serves workspace format 5 only: stop every writer (servers, loads, maintenance), then run "
      "'loam migrate'");
  CliResult refused = Run({"--json", "log"});
  EXPECT_EQ(json::parse(refused.out)["error"]["code"], "migration_required");
  // A counter restored from before any table existed: advanced past the ids.
  WriteFile(dir_ + "/loam-data/_control/identity_counter.json", R"({"next":1})");
  CliResult m = Ok({"--json", "migrate"});
  json j = json::parse(m.out);
  EXPECT_EQ(j["from"], "unstamped heads (head directory format 9)");
  EXPECT_EQ(j["identityCounterWas"], 1);
  Ok({"table", "create", "u", "--column", "id:int64"});
  EXPECT_EQ(Ok({"count", "t"}).out, "2\n");  // t's identity was not minted again
  ASSERT_EQ(j["branches"].size(), 2u);
  EXPECT_EQ(j["branches"][0]["branch"], "main");
  EXPECT_EQ(j["branches"][1]["branch"], "dev");
  EXPECT_EQ(j["branches"][1]["heads"], 1);
  Ok({"heads", "verify"});
  Ok({"heads", "verify", "--branch", "dev"});
  EXPECT_EQ(Ok({"count", "t", "--branch", "dev"}).out, "3\n");
  EXPECT_EQ(Ok({"migrate"}).out, "the workspace is already in format 5; nothing to migrate\n");
}

TEST_F(CliMigrateTest, ANewerWorkspaceIsRefusedByEveryEntryPointAndByMigrate) {
  auto store = OpenObjectStore(dir_ + "/loam-data").value();
  ASSERT_TRUE(store->Delete(FormatStampKey("")).ok());
  ASSERT_TRUE(WriteFormatStamp(*store, "", {kWorkspaceFormat + 1, "init", "", 1}).ok());
  const std::string message =
      "is in workspace format 6, written by a newer Loam; this Loam serves workspace format 5 "
      "only: use a Loam that supports format 6";
  ExpectRefusedEverywhere(message);
  CliResult m = Run({"migrate"});
  EXPECT_EQ(m.code, 9) << m.all();
  EXPECT_NE(m.err.find(message), std::string::npos) << m.all();
  EXPECT_EQ(json::parse(Run({"--json", "log"}).out)["error"]["code"], "unsupported_format");
}

TEST_F(CliMigrateTest, AKilledMigrationStaysOfflineUntilTakenOver) {
  Unstamp();
  CliResult killed = Run({"migrate"}, {{"LOAM_CRASH_AT", "migrate.after_branch_commit"}});
  ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
  CliResult log = Run({"log"});
  const std::string token = TokenIn(log.err);
  ASSERT_EQ(token.size(), 26u) << log.all();
  ExpectRefusedEverywhere("is partially migrated (migration " + token +
                          " did not finish); this Loam serves workspace format 5 only: make sure "
                          "that migration's process is gone, then run 'loam migrate --take-over " +
                          token + "'");
  CliResult second = Run({"migrate"});
  EXPECT_EQ(second.code, 3) << second.all();
  EXPECT_NE(second.err.find("holds this workspace; if its process is gone, run 'loam migrate "
                            "--take-over " +
                            token + "'"),
            std::string::npos)
      << second.all();
  CliResult resumed = Ok({"--json", "migrate", "--take-over", token});
  json j = json::parse(resumed.out);
  EXPECT_EQ(j["migration"], token);
  EXPECT_EQ(j["tookOver"], true);
  EXPECT_EQ(j["branches"][0]["alreadyDone"], true);  // main committed before the kill
  EXPECT_EQ(j["branches"][1]["alreadyDone"], false);
  Ok({"heads", "verify"});
  Ok({"heads", "verify", "--branch", "dev"});
  EXPECT_EQ(Ok({"count", "t"}).out, "2\n");
}

// Files under `dir`, relative to it.
std::set<std::string> FilesUnder(const std::filesystem::path& dir) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) out.insert(std::filesystem::relative(e.path(), dir).string());
  }
  return out;
}

// A Loam from before the stamp deleted `dev` and made it again while dev's
// migration commit was on its way, so the commit landed on the new branch
// (played here by writing the files the commit made back after the
// recreation). The takeover withdraws it and says so; without that it would
// stamp the new dev with the earlier dev's tables (3 rows, not main's 2).
TEST_F(CliMigrateTest, ATakeoverWithdrawsACommitThatLandedOnARecreatedBranch) {
  Unstamp();
  const std::filesystem::path data = dir_ + "/loam-data";
  const std::set<std::string> before = FilesUnder(data);
  // main's commit is the first, dev's the second.
  CliResult killed = Run({"migrate"}, {{"LOAM_CRASH_AT", "migrate.after_branch_commit#2"}});
  ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
  const std::string token = TokenIn(Run({"log"}).err);
  ASSERT_EQ(token.size(), 26u);
  std::map<std::string, std::string> landed;  // dev's commit's files, by path
  for (const std::string& f : FilesUnder(data)) {
    if (!before.count(f) && f.starts_with("__manifest/") && f.find("/dev/") != std::string::npos) {
      landed[f] = Slurp((data / f).string());
    }
  }
  ASSERT_FALSE(landed.empty());
  auto store = OpenObjectStore(data.string()).value();
  {
    WorkspaceOptions o;
    o.any_format = true;
    o.recover_on_open = false;
    auto older = WorkspaceEngine::Open(store, "", o).value();
    ASSERT_TRUE(older->DeleteBranch("dev").ok());
    ASSERT_TRUE(older->CreateBranch("dev").ok());
  }
  for (const auto& [key, bytes] : landed) ASSERT_TRUE(store->PutIfAbsent(key, bytes).ok()) << key;
  CliResult plain = Run({"migrate", "--take-over", token});
  EXPECT_NE(plain.code, 0) << plain.all();  // the branch set changed
  json j = json::parse(Ok({"--json", "migrate", "--take-over", token, "--repin-branches"}).out);
  ASSERT_EQ(j["branches"].size(), 2u) << j.dump();
  EXPECT_EQ(j["branches"][1]["branch"], "dev");
  EXPECT_TRUE(j["branches"][1]["withdrawnVersion"].is_number()) << j.dump();
  EXPECT_EQ(Ok({"count", "t", "--branch", "dev"}).out, "2\n");  // made from main
  Ok({"heads", "verify", "--branch", "dev"});
  EXPECT_EQ(Ok({"count", "t"}).out, "2\n");
}

// The journal-only format 4 (the fixture's history: testdata/README.md):
// refused everywhere, converted by `loam migrate` through a SIGKILL and a
// takeover; its pre-migration versions still read, folded from the journal.
TEST_F(CliMigrateTest, AFormatFourWorkspaceIsRefusedThenMigratedThroughAKill) {
  const std::filesystem::path data = dir_ + "/loam-data";
  std::filesystem::remove_all(data);
  std::filesystem::copy(std::filesystem::path(LOAM_TESTDATA_DIR) / "workspace_v4", data,
                        std::filesystem::copy_options::recursive);
  ExpectRefusedEverywhere(
      "is in workspace format 4 (a journal-only manifest, no format stamp); this Loam serves "
      "workspace format 5 only: stop every writer (servers, loads, maintenance), then run 'loam "
      "migrate'");
  EXPECT_EQ(json::parse(Run({"--json", "log"}).out)["error"]["code"], "migration_required");
  CliResult killed = Run({"migrate"}, {{"LOAM_CRASH_AT", "migrate.after_branch_commit"}});
  ASSERT_EQ(killed.signal, SIGKILL) << killed.all();
  const std::string token = TokenIn(Run({"log"}).err);
  ASSERT_EQ(token.size(), 26u);
  ExpectRefusedEverywhere("is partially migrated (migration " + token + " did not finish)");
  json j = json::parse(Ok({"--json", "migrate", "--take-over", token}).out);
  EXPECT_EQ(j["from"], "format 4 (journal-only manifest)");
  EXPECT_EQ(j["branches"].size(), 4u);
  EXPECT_EQ(j["branches"][0]["alreadyDone"], true);
  for (const std::string branch : {"main", "dev", "dev2", "lazy"}) {
    Ok({"heads", "verify", "--branch", branch});
  }
  EXPECT_EQ(Ok({"count", "orders", "--branch", "dev"}).out, "5\n");
  EXPECT_EQ(Ok({"count", "orders"}).out, "4\n");
  // Version 6 of main, before the migration: orders held 3 rows.
  EXPECT_EQ(Ok({"count", "orders", "--version", "6"}).out, "3\n");
  CliResult dropped = Run({"count", "orders", "--branch", "dev2"});
  EXPECT_NE(dropped.code, 0);
  EXPECT_NE(dropped.err.find("orders"), std::string::npos) << dropped.all();
}

// A stamped workspace whose branches have no heads (the format-4 fixture with
// a stamp added, as damage or a bad copy would leave it) is data loss, at its
// tip and at any version no migration explains: never an empty workspace.
TEST_F(CliMigrateTest, AStampedBranchWithoutHeadsIsDataLossNotAnEmptyWorkspace) {
  const std::filesystem::path data = dir_ + "/loam-data";
  std::filesystem::remove_all(data);
  std::filesystem::copy(std::filesystem::path(LOAM_TESTDATA_DIR) / "workspace_v4", data,
                        std::filesystem::copy_options::recursive);
  auto store = OpenObjectStore(data.string()).value();
  ASSERT_TRUE(WriteFormatStamp(*store, "", {kWorkspaceFormat, "init", "", 1}).ok());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"count", "orders"},
                                               {"table", "list"},
                                               {"count", "orders", "--version", "6"},
                                               {"count", "orders", "--branch", "dev"}}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.code, 7) << r.all();
    EXPECT_NE(r.err.find("has no head directory, which no publish of this format writes; run "
                         "'loam heads verify'"),
              std::string::npos)
        << r.all();
  }
  CliResult j = Run({"--json", "table", "list"});
  EXPECT_EQ(json::parse(j.out)["error"]["code"], "data_loss") << j.all();
}

// A claim or a stamp whose fields have the wrong types (a bucket shared with
// a buggy writer) is a clean refusal, never an abort: both once threw out
// of nlohmann's value().
TEST_F(CliMigrateTest, RecordsWithFieldsOfTheWrongTypeAreRefusedNotThrown) {
  auto store = OpenObjectStore(dir_ + "/loam-data").value();
  ASSERT_TRUE(store->Delete(FormatStampKey("")).ok());
  WriteFile(dir_ + "/loam-data/_control/format.json",
            R"({"magic":5,"format":5,"checksum":"x","stamped_by":[]})");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"log"}, {"migrate"}}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.signal, 0) << r.all();
    EXPECT_EQ(r.code, 7) << r.all();
    EXPECT_NE(r.err.find("_control/format.json is not a workspace format stamp"), std::string::npos)
        << r.all();
  }
  Unstamp();
  std::filesystem::create_directories(dir_ + "/loam-data/_migration");
  WriteFile(dir_ + "/loam-data/_migration/claim.json",
            R"({"token":5,"owner":[],"from_format":"x"})");
  CliResult log = Run({"log"});
  EXPECT_EQ(log.signal, 0) << log.all();
  EXPECT_EQ(log.code, 9) << log.all();
  EXPECT_NE(log.err.find("is partially migrated"), std::string::npos) << log.all();
  CliResult migrate = Run({"migrate"});
  EXPECT_EQ(migrate.signal, 0) << migrate.all();
  EXPECT_EQ(migrate.code, 7) << migrate.all();
  EXPECT_NE(migrate.err.find("_migration/claim.json is malformed"), std::string::npos)
      << migrate.all();
  // Nothing was lost: without the bad claim the workspace migrates and reads.
  std::filesystem::remove(dir_ + "/loam-data/_migration/claim.json");
  Ok({"migrate"});
  EXPECT_EQ(Ok({"count", "t"}).out, "2\n");
}

}  // namespace
}  // namespace loam::testing
