// Workspaces written by older builds are refused until `loam migrate`
// converts them; then they read, verify and take new writes (testdata/
// README.md lists what wrote each one).
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "engine/migration.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/local_object_store.h"

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
    ws_ = Workspace::Open(store_, "", testing::TestOptions()).value();
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
  std::shared_ptr<Workspace> ws_;
};

const std::map<int64_t, std::string> kWritten = {
    {1, "ada"}, {2, "hopper"}, {3, "edsger"}, {4, "barbara"}};

TEST(CompatRefusalTest, AFormatOneWorkspaceIsRefusedUntilMigrated) {
  const fs::path dir = fs::temp_directory_path() / ("loam-compat-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::copy(fs::path(LOAM_TESTDATA_DIR) / "workspace_v1", dir, fs::copy_options::recursive);
  auto store = LocalObjectStore::Open(dir.string()).value();
  Result<std::shared_ptr<Workspace>> ws = Workspace::Open(store, "", testing::TestOptions());
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
  EXPECT_TRUE(Workspace::Open(store, "", testing::TestOptions()).ok());
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
  ws_ = Workspace::Open(store_, "", testing::TestOptions()).value();
  EXPECT_EQ(People(), expected);
  testing::ExpectHeadsMatchFold(*ws_);
}

}  // namespace
}  // namespace loam
