// Staged fragments kept in memory (WriteFragment's allow_inline) and their
// joining (JoinStaged): read back, checked, committed and discarded without
// an object of their own.
#include <gtest/gtest.h>

#include "dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

class StagedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    counting_ = std::make_shared<CountingObjectStore>(testing::NewTestStore());
    ds_ = Dataset::Create(counting_, "tables/people", PeopleSchema(), options_).value();
  }

  // The ids of `batches`' rows, in order.
  static std::vector<int64_t> Ids(const std::vector<RecordBatch>& batches) {
    std::vector<int64_t> ids;
    for (const RecordBatch& b : batches) {
      for (int64_t r = 0; r < b.num_rows(); ++r) ids.push_back(b.columns[0].GetInt64(r));
    }
    return ids;
  }

  DatasetOptions options_;
  std::shared_ptr<CountingObjectStore> counting_;
  Dataset ds_ = Dataset::Create(testing::NewTestStore(), "x", PeopleSchema()).value();
};

TEST_F(StagedTest, AFragmentKeptInMemoryIsReadCheckedAndCommittedWithoutAnObject) {
  const uint64_t writes = counting_->Snapshot().total.writes();
  const Fragment a = ds_.WriteFragment(People({1, 2}), /*allow_inline=*/true).value();
  ASSERT_TRUE(a.inline_bytes);
  EXPECT_TRUE(a.data_path.empty());
  EXPECT_EQ(counting_->Snapshot().total.writes(), writes);  // nothing written yet
  EXPECT_EQ(Ids(ds_.ReadStaged({a}, {}).value()), (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(ds_.StagedExists(a).ok());
  MergeStats stats;  // keys read back from memory when no plan is given
  Dataset merged = ds_.MergeInsertStaged({"id"}, {a}, &stats).value();
  EXPECT_EQ(stats.inserted, 2);
  EXPECT_TRUE(counting_->ListAll("tables/people/data/").value().empty());  // in the version file
  const Fragment dup = merged.WriteFragment(People({7, 7}), true).value();
  Status refused = merged.MergeInsertStaged({"id"}, {dup}).status();
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_TRUE(merged.DeleteStaged({dup}).ok());  // nothing to delete
  EXPECT_EQ(Contents(merged), (std::map<int64_t, std::string>{{1, "name-1-v1"}, {2, "name-2-v1"}}));
}

TEST_F(StagedTest, RunsJoinInOrderIntoFewerFragmentsAndNoRunIsSplit) {
  std::vector<std::vector<Fragment>> runs;
  std::vector<int64_t> want;
  for (int64_t run = 0; run < 5; ++run) {
    std::vector<int64_t> ids = {run * 10, run * 10 + 1, run * 10 + 2};
    runs.push_back({ds_.WriteFragment(People(ids), true).value()});
    want.insert(want.end(), ids.begin(), ids.end());
  }
  std::vector<Fragment> joined = ds_.JoinStaged(runs).value();
  ASSERT_EQ(joined.size(), 1u);
  EXPECT_EQ(joined[0].physical_rows, 15u);
  EXPECT_TRUE(joined[0].inline_bytes);
  EXPECT_EQ(Ids(ds_.ReadStaged(joined, {}).value()), want);
  Dataset committed = ds_.AppendStaged(joined).value();
  EXPECT_EQ(committed.state().fragments.size(), 1u);
  EXPECT_EQ(committed.CountRows(), 15u);

  // With room for two runs' bytes per fragment (the first run's ids are
  // shorter), five runs make three.
  options_.max_inline_fragment_bytes = runs[1][0].data_size * 2;
  Dataset narrow = Dataset::Open(counting_, "tables/people", {}, options_).value();
  joined = narrow.JoinStaged(runs).value();
  ASSERT_EQ(joined.size(), 3u);
  EXPECT_EQ(joined[0].physical_rows, 6u);
  EXPECT_EQ(joined[1].physical_rows, 6u);
  EXPECT_EQ(joined[2].physical_rows, 3u);
  EXPECT_EQ(Ids(narrow.ReadStaged(joined, {}).value()), want);
}

TEST_F(StagedTest, OnlyFragmentsKeptInMemoryAreJoined) {
  const Fragment file = ds_.WriteFragment(People({1})).value();
  const Fragment kept = ds_.WriteFragment(People({2}), true).value();
  Status refused = ds_.JoinStaged({{kept}, {file}}).status();
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_NE(refused.message().find("only fragments kept in memory"), std::string::npos);
  // A branch writes no inline parts: its staged fragments are files.
  Dataset branch = ds_.CreateBranch("b").value();
  EXPECT_FALSE(branch.WriteFragment(People({3}), true).value().data_path.empty());
}

// A commit that may not embed a fragment kept in memory (on a branch, or
// past the version's inline budget) writes it as a file first.
TEST_F(StagedTest, ACommitThatMayNotEmbedAFragmentWritesItAsAFileFirst) {
  const Fragment kept = ds_.WriteFragment(People({1}), true).value();
  Dataset branch = ds_.CreateBranch("b").value().AppendStaged({kept}).value();
  const Fragment& on_branch = branch.state().fragments.back();
  EXPECT_EQ(on_branch.data_offset, 0u);
  EXPECT_TRUE(on_branch.data_path.starts_with("tree/b/data/")) << on_branch.data_path;
  EXPECT_EQ(Contents(branch), (std::map<int64_t, std::string>{{1, "name-1-v1"}}));

  options_.max_inline_bytes_per_version = kept.data_size;  // room for one
  Dataset narrow = Dataset::Open(counting_, "tables/people", {}, options_).value();
  const Fragment a = narrow.WriteFragment(People({2}), true).value();
  const Fragment b = narrow.WriteFragment(People({3}), true).value();
  Dataset both = narrow.AppendStaged({a, b}).value();
  const std::vector<Fragment>& f = both.state().fragments;
  ASSERT_EQ(f.size(), 2u);
  EXPECT_GT(f[0].data_offset, 0u);  // in the version file
  EXPECT_EQ(f[1].data_offset, 0u);  // a file of its own
  EXPECT_TRUE(f[1].data_path.starts_with("data/")) << f[1].data_path;
  EXPECT_EQ(Contents(both).size(), 2u);
}

}  // namespace
}  // namespace loam
