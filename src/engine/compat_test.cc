// Workspaces written by older builds are refused until `loam migrate`
// converts them; then they read, verify and take new writes (testdata/
// README.md lists what wrote each one).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/format4_fixture.h"
#include "engine/migration.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/local_object_store.h"
#include "manifest/fold.h"

namespace loam {
namespace {

namespace fs = std::filesystem;

class CompatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loam-compat-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(fs::path(LOAM_TESTDATA_DIR) / "workspace_v1", dir_, fs::copy_options::recursive);
    store_ = LocalObjectStore::Open(dir_.string()).value();
    Result<MigrationReport> migrated = MigrateWorkspace(store_, "", testing::TestOptions());
    ASSERT_TRUE(migrated.ok()) << migrated.status();
    ws_ = WorkspaceEngine::Open(store_, "", testing::TestOptions()).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::map<int64_t, std::string> People() {
    Snapshot snap = ws_->Current().value();
    RecordBatch b = ws_->OpenTable(snap, "people").value().ReadAll().value();
    std::map<int64_t, std::string> out;
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      out[b.columns[0].GetInt64(r)] = std::get<std::string>(b.columns[1].GetValue(r));
    }
    return out;
  }

  fs::path dir_;
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
};

const std::map<int64_t, std::string> kWritten = {
    {1, "ada"}, {2, "hopper"}, {3, "edsger"}, {4, "barbara"}};

TEST(CompatRefusalTest, AFormatOneWorkspaceIsRefusedUntilMigrated) {
  const fs::path dir = fs::temp_directory_path() / ("loam-compat-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(LOAM_TESTDATA_DIR) / "workspace_v1", dir, fs::copy_options::recursive);
  auto store = LocalObjectStore::Open(dir.string()).value();
  Result<std::shared_ptr<WorkspaceEngine>> ws =
      WorkspaceEngine::Open(store, "", testing::TestOptions());
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kMigrationRequired);
  EXPECT_NE(ws.status().message().find("has no format stamp (written by an earlier Loam, head "
                                       "directory format 5)"),
            std::string::npos)
      << ws.status();
  Result<MigrationReport> r = MigrateWorkspace(store, "", testing::TestOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, "unstamped heads (head directory format 5)");
  ASSERT_EQ(r->branches.size(), 1u);
  EXPECT_EQ(r->branches[0].heads, 2);
  EXPECT_TRUE(WorkspaceEngine::Open(store, "", testing::TestOptions()).ok());
  fs::remove_all(dir);
}

TEST_F(CompatTest, AFormatOneWorkspaceReadsAndVerifies) {
  EXPECT_EQ(People(), kWritten);
  Snapshot snap = ws_->Current().value();
  ASSERT_NE(snap.Find("empty_t"), nullptr);
  EXPECT_EQ(snap.Find("people")->head.table_version, 3);
  testing::ExpectHeadsMatchFold(*ws_);
  EXPECT_EQ(ws_->History("people").value().size(), 5u);  // incarnation, schema, 3 versions
}

TEST_F(CompatTest, NewWritesLandInlineNextToFormatOneFiles) {
  WriteRequest w;
  w.table = "people";
  w.mode = WriteMode::kUpsert;
  RecordBatch rows(ws_->Current().value().Find("people")->def.schema);
  ASSERT_TRUE(rows.AppendRow({int64_t{3}, std::string("dijkstra")}).ok());
  ASSERT_TRUE(rows.AppendRow({int64_t{5}, std::string("liskov")}).ok());
  w.rows = {rows};
  ASSERT_TRUE(ws_->Write(w).ok());
  std::map<int64_t, std::string> expected = kWritten;
  expected[3] = "dijkstra";
  expected[5] = "liskov";
  EXPECT_EQ(People(), expected);
  // The new table version keeps the old fragment files and adds one inline.
  Dataset people = ws_->OpenTable(ws_->Current().value(), "people").value();
  int files = 0, embedded = 0, inline_deletions = 0;
  for (const Fragment& f : people.state().fragments) {
    (f.data_offset ? embedded : files)++;
    inline_deletions += f.deletion_offset > 0 ? 1 : 0;
  }
  EXPECT_EQ(files, 2);
  EXPECT_EQ(embedded, 1);
  // The old fragment holding id 3 had a format 1 deletion file (id 2); the
  // union with id 3 is now inline in the new version file.
  EXPECT_EQ(inline_deletions, 1);
  testing::ExpectHeadsMatchFold(*ws_);
  // Compacting the manifest reads every old fragment and rewrites it.
  ASSERT_TRUE(ws_->manifest().Compact("").ok());
  testing::ExpectHeadsMatchFold(*ws_);
  // A fresh process sees the same.
  ws_ = WorkspaceEngine::Open(store_, "", testing::TestOptions()).value();
  EXPECT_EQ(People(), expected);
  testing::ExpectHeadsMatchFold(*ws_);
}

// testdata/workspace_v4: the journal-only format 4, with four branches, a
// grant history, tombstones on three branches and a pending write sidecar
// (written by loam_format4_fixture; testdata/workspace_v4.json holds what
// each branch read when the same history was written with heads).
class CompatFormatFourTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loam-compat-v4-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::copy(fs::path(LOAM_TESTDATA_DIR) / "workspace_v4", dir_, fs::copy_options::recursive);
    store_ = LocalObjectStore::Open(dir_.string()).value();
    std::ifstream in(fs::path(LOAM_TESTDATA_DIR) / "workspace_v4.json");
    expected_ = nlohmann::json::parse(in);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::shared_ptr<ObjectStore> store_;
  nlohmann::json expected_;
};

TEST_F(CompatFormatFourTest, IsRefusedThenMigratesToWhatItsHistoryHeld) {
  Result<std::shared_ptr<WorkspaceEngine>> refused =
      WorkspaceEngine::Open(store_, "", testing::TestOptions());
  EXPECT_EQ(refused.status().error_code(), ErrorCode::kMigrationRequired);
  EXPECT_NE(refused.status().message().find("is in workspace format 4 (a journal-only manifest"),
            std::string::npos)
      << refused.status();
  Result<MigrationReport> r = MigrateWorkspace(store_, "", testing::TestOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, "format 4 (journal-only manifest)");
  EXPECT_EQ(r->branches.size(), 4u);
  EXPECT_EQ(r->recovery.rolled_back, 1);  // the crashed write: never published
  auto ws = WorkspaceEngine::Open(store_, "", testing::TestOptions()).value();
  EXPECT_EQ(ws->PendingSidecars().value(), 0);
  for (const auto& [name, want] : expected_.items()) {
    SCOPED_TRACE("branch " + name);
    const std::string branch = name == "main" ? "" : name;
    Snapshot snap = ws->Current(branch).value();
    nlohmann::json tables = nlohmann::json::object();
    for (const auto& [table, t] : snap.tables) {
      tables[table] = {{"rows", ws->OpenTable(snap, table).value().CountRows()},
                       {"sid", t.def.sid},
                       {"inc", t.def.inc}};
    }
    EXPECT_EQ(tables, want["tables"]);
    EXPECT_EQ(testing::FixtureGrants(snap), want["grants"]);
    EXPECT_EQ(ws->Log(branch).value().size(), want["log"].get<size_t>());
    // The heads published are byte for byte the ones the same history wrote.
    ManifestVersion tip = ws->manifest().Current(branch).value();
    std::vector<std::string> problems;
    FoldedHeads heads = ReadStoredHeads(ws->manifest(), tip, &problems);
    EXPECT_TRUE(problems.empty());
    EXPECT_EQ(HeadSetDigest(heads.tables, heads.graphs), want["head_digest"].get<std::string>());
    testing::ExpectHeadsMatchFold(*ws, branch);
    // Time travel to every format-4 version of the branch reads its fold.
    for (const auto& [version, at] : want["versions"].items()) {
      SCOPED_TRACE("version " + version);
      Snapshot then = ws->SnapshotAt(branch, std::stoull(version)).value();
      EXPECT_EQ(testing::FixtureTables(then), at["tables"]);
      EXPECT_EQ(testing::FixtureGrants(then), at["grants"]);
    }
  }
  // The crashed write's fork was restored to the version its head names.
  Snapshot dev = ws->Current("dev").value();
  const TableHead& orders = dev.Find("orders")->head;
  OpenSpec fork;
  fork.branch = orders.owner_ref;
  Dataset latest = Dataset::Open(store_, orders.location, fork).value();
  EXPECT_EQ(latest.state().txn.op, OpType::kRestore);
  EXPECT_EQ(static_cast<int64_t>(latest.state().txn.restore_version), orders.table_version);
  // New writes land, on the branch whose crashed write was rolled back too.
  ASSERT_TRUE(ws->Write(testing::Append("orders", {10}, "dev")).ok());
  EXPECT_EQ(testing::RowsOf(*ws, "orders", "dev"),
            expected_["dev"]["tables"]["orders"]["rows"].get<int64_t>() + 1);
  testing::ExpectHeadsMatchFold(*ws, "dev");
}

}  // namespace
}  // namespace loam
