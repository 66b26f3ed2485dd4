// Concurrent writers of one dataset: each pair of operations rebases or
// aborts per the conflict matrix (docs/format/dataset.md), and what a loser
// wrote is left to nothing or cleaned up.
#include <gtest/gtest.h>

#include "dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

TEST_F(DatasetTest, ConcurrentWritersRebaseOrFailPerTheMatrix) {
  Dataset base = ds_.Append({People({1, 2, 3, 4})}).value();
  // Two snapshots of the same version write concurrently (stale handles).
  Dataset a = base.Append({People({10})}).value();
  Dataset b = base.Append({People({11})}).value();  // rebased over a
  EXPECT_EQ(b.version(), 4u);
  EXPECT_EQ(Contents(b).size(), 6u);
  // Disjoint deletes from the same stale snapshot merge deletion vectors.
  Dataset d1 = base.Delete({Predicate::Eq("id", int64_t{1})}).value();
  Dataset d2 = base.Delete({Predicate::Eq("id", int64_t{2})}).value();
  auto c = Contents(d2);
  EXPECT_FALSE(c.count(1));
  EXPECT_FALSE(c.count(2));
  EXPECT_EQ(c.size(), 4u);
  // Same new key from a stale snapshot: the second upsert becomes an update.
  MergeStats s1, s2;
  ASSERT_TRUE(base.MergeInsert({"id"}, {People({50}, "first")}, &s1).ok());
  ASSERT_TRUE(base.MergeInsert({"id"}, {People({50}, "second")}, &s2).ok());
  EXPECT_EQ(s1.inserted, 1);
  EXPECT_EQ(s2.updated, 1);
  auto after = Contents(Reopen());
  EXPECT_EQ(after[50], "name-50-second");
}

// Runs `mine` on a snapshot of version `v` whose commit is interleaved with
// `theirs`: theirs commits just before mine's first version-file write.
Result<Dataset> Interleave(std::shared_ptr<ObjectStore> store,
                           const std::function<Result<Dataset>(const Dataset&)>& mine,
                           const std::function<void(const Dataset&)>& theirs) {
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store);
  Dataset through_hook = Dataset::Open(faulty, "tables/people").value();
  Dataset direct = Dataset::Open(store, "tables/people").value();
  faulty->AddRule(FaultRule::HookAt(
      "theirs", MaskOf({ObjectOp::kPutIfAbsent}), 1, [&] { theirs(direct); }, "_versions/"));
  return mine(through_hook);
}

TEST_F(DatasetTest, AppendAbortsWhenAnOverwriteCommitsFirst) {
  ASSERT_TRUE(ds_.Append({People({1})}).ok());
  Result<Dataset> r = Interleave(
      store_, [](const Dataset& d) { return d.Append({People({2})}); },
      [](const Dataset& d) { ASSERT_TRUE(d.Overwrite({People({7})}).ok()); });
  EXPECT_TRUE(r.status().IsAborted()) << r.status();
  EXPECT_NE(r.status().message().find("overwrite"), std::string::npos) << r.status();
  EXPECT_EQ(Contents(Reopen()), (std::map<int64_t, std::string>{{7, "name-7-v1"}}));
}

TEST_F(DatasetTest, OverlappingDeleteReRunsAndDeletesOnce) {
  ASSERT_TRUE(ds_.Append({People({1, 2, 3})}).ok());
  Result<Dataset> r = Interleave(
      store_, [](const Dataset& d) { return d.Delete({Predicate::Le("id", int64_t{2})}); },
      [](const Dataset& d) { ASSERT_TRUE(d.Delete({Predicate::Eq("id", int64_t{2})}).ok()); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Contents(*r), (std::map<int64_t, std::string>{{3, "name-3-v1"}}));
  EXPECT_EQ(r->version(), 4u);
}

// A delete that loses its race writes its deletion file again on the new
// base; the file of the attempt that lost is removed, not left to gc.
TEST_F(DatasetTest, ARebasedDeleteLeavesNoDeletionFileBehind) {
  options_.max_inline_deletion_bytes = 0;  // deletion files, never inline
  ASSERT_TRUE(ds_.Append({People({1, 2, 3, 4})}).ok());
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  Dataset mine = Dataset::Open(faulty, "tables/people", {}, options_).value();
  Dataset theirs = Dataset::Open(store_, "tables/people", {}, options_).value();
  faulty->AddRule(FaultRule::HookAt(
      "theirs", MaskOf({ObjectOp::kPutIfAbsent}), 1,
      [&] { ASSERT_TRUE(theirs.Delete({Predicate::Eq("id", int64_t{3})}).ok()); }, "_versions/"));
  Result<Dataset> r = mine.Delete({Predicate::Eq("id", int64_t{1})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(faulty->Fired("theirs"), 1u);
  EXPECT_EQ(Contents(*r).size(), 2u);
  int deletion_files = 0;
  for (const ObjectInfo& o : store_->ListAll("tables/people/").value()) {
    deletion_files += o.key.ends_with(".ldel");
  }
  EXPECT_EQ(deletion_files, 2);  // theirs (version 3) and mine on top (version 4)
}

// A restore that loses its race carries the restored version's deletion
// files into its retry: they belong to committed versions and stay.
TEST_F(DatasetTest, ARestoreThatLosesItsRaceKeepsTheDeletionFilesItCarries) {
  options_.max_inline_deletion_bytes = 0;  // deletion files, never inline
  Dataset d = Dataset::Open(store_, "tables/people", {}, options_).value();
  d = d.Append({People({1, 2, 3, 4})}).value();
  d = d.Delete({Predicate::Eq("id", int64_t{1})}).value();  // version 3
  d = d.Delete({Predicate::Eq("id", int64_t{2})}).value();  // version 4
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  Dataset mine = Dataset::Open(faulty, "tables/people", {}, options_).value();
  Dataset theirs = Dataset::Open(store_, "tables/people", {}, options_).value();
  faulty->AddRule(FaultRule::HookAt(
      "theirs", MaskOf({ObjectOp::kPutIfAbsent}), 1,
      [&] { ASSERT_TRUE(theirs.Append({People({9})}).ok()); }, "_versions/"));
  Result<Dataset> r = mine.Restore(3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(faulty->Fired("theirs"), 1u);
  std::set<int64_t> ids;
  for (const auto& [id, name] : Contents(Reopen())) ids.insert(id);
  EXPECT_EQ(ids, (std::set<int64_t>{2, 3, 4}));  // a restore wins over a concurrent append
  OpenSpec at;
  at.version = 3;
  EXPECT_EQ(Contents(Reopen(at)).size(), 3u);
}

TEST_F(DatasetTest, ConcurrentUpsertsOfTheSameNewKeyLeaveOneRow) {
  ASSERT_TRUE(ds_.Append({People({1})}).ok());
  MergeStats stats;
  Result<Dataset> r = Interleave(
      store_,
      [&](const Dataset& d) { return d.MergeInsert({"id"}, {People({5}, "mine")}, &stats); },
      [](const Dataset& d) { ASSERT_TRUE(d.MergeInsert({"id"}, {People({5}, "theirs")}).ok()); });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(stats.updated, 1);  // re-ran as an update
  EXPECT_EQ(stats.inserted, 0);
  auto c = Contents(Reopen());
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c[5], "name-5-mine");
}

TEST_F(DatasetTest, ConcurrentAddColumnWithTheSameNameAborts) {
  Result<Dataset> r = Interleave(
      store_,
      [](const Dataset& d) {
        return d.AddColumn({"x", DataType::Int64()});
      },
      [](const Dataset& d) {
        ASSERT_TRUE(d.AddColumn({"x", DataType::String()}).ok());
      });
  EXPECT_TRUE(r.status().IsAborted()) << r.status();
  EXPECT_EQ(Reopen().schema().fields.back().type, DataType::String());
}

TEST_F(DatasetTest, AColumnAddingAppendLosesToAConcurrentSchemaChange) {
  Schema wide = PeopleSchema();
  wide.fields.push_back({"x", DataType::Int64()});
  RecordBatch row(wide);
  row.AppendRow({int64_t{2}, std::string("b"), 1.0, int64_t{7}}).CheckOK();
  Result<Dataset> r = Interleave(
      store_,
      [&](const Dataset& d) {
        Fragment f = d.WriteFragment(row, false, &wide).value();
        return d.AppendStaged({f}, {}, {{"x", DataType::Int64()}});
      },
      [](const Dataset& d) {
        ASSERT_TRUE(d.AddColumn({"y", DataType::String()}).ok());
      });
  EXPECT_TRUE(r.status().IsAborted()) << r.status();
  EXPECT_EQ(Reopen().schema().fields.back().name, "y");
}

TEST_F(DatasetTest, APlainAppendBesideAColumnAddingOneCommitsAndReadsNullThere) {
  Result<Dataset> r = Interleave(
      store_, [](const Dataset& d) { return d.Append({People({9})}); },
      [](const Dataset& d) {
        Schema w = d.schema();
        w.fields.push_back({"z", DataType::Int64()});
        RecordBatch z(w);
        z.AppendRow({int64_t{3}, std::string("c"), 1.0, int64_t{5}}).CheckOK();
        Fragment f = d.WriteFragment(z, false, &w).value();
        ASSERT_TRUE(d.AppendStaged({f}, {}, {{"z", DataType::Int64()}}).ok());
      });
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->schema().fields.back().name, "z");
  RecordBatch all = r->ReadAll().value();
  ASSERT_EQ(all.num_rows(), 2);
  for (int64_t i = 0; i < 2; ++i) {
    EXPECT_EQ(all.columns[3].IsNull(i), all.columns[0].GetInt64(i) == 9) << i;
  }
}

}  // namespace
}  // namespace loam
