// Rows are followed through compactions (Dataset::FollowRows).
#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "dataset/dataset_test_util.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::People;
using testing::PeopleSchema;
using testing::Range;

constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();

class RowLineageTest : public ::testing::Test {
 protected:
  // Appends rows [lo, hi) as one fragment and remembers where they went.
  void Append(int64_t lo, int64_t hi) {
    ds_ = ds_.Append({People(Range(lo, hi))}).value();
    appended_.push_back({ds_.state().fragments.back().id, ds_.version()});
  }
  // The live ids of what FollowRows finds for append number `i`.
  std::set<int64_t> IdsOf(size_t i, uint64_t* lost = nullptr) {
    const auto [fragment, version] = appended_.at(i);
    FollowedRows found = ds_.FollowRows({{fragment, 0, kAll}}, version).value();
    if (lost != nullptr) *lost = found.lost;
    std::vector<uint64_t> addresses;
    for (const RowRange& r : found.here) {
      for (uint64_t k = 0; k < r.count; ++k)
        addresses.push_back((r.fragment << 32) | (r.first + k));
    }
    std::set<int64_t> ids;
    ScanSpec spec;
    spec.columns = {"id"};
    EXPECT_TRUE(ds_.TakeEach(addresses, spec,
                             [&](const RecordBatch& b) {
                               for (int64_t r = 0; r < b.num_rows(); ++r)
                                 ids.insert(b.columns[0].GetInt64(r));
                               return Status::OK();
                             })
                    .ok());
    return ids;
  }
  static std::set<int64_t> Ids(int64_t lo, int64_t hi) {
    std::vector<int64_t> v = Range(lo, hi);
    return {v.begin(), v.end()};
  }

  std::shared_ptr<ObjectStore> store_ = testing::NewTestStore();
  Dataset ds_ = Dataset::Create(store_, "t", PeopleSchema()).value();
  std::vector<std::pair<uint64_t, uint64_t>> appended_;  // (fragment, version)
};

// Ten appends, some rows deleted, compacted twice (the second compaction
// merges fragments the first wrote): each append's rows are found exactly.
TEST_F(RowLineageTest, AnAppendsRowsAreFoundThroughCompactions) {
  for (int i = 0; i < 10; ++i) Append(i * 10, i * 10 + 10);
  ds_ = ds_.Delete({Predicate::Lt("id", int64_t{5})}).value();
  ds_ = ds_.Delete({Predicate::Eq("id", int64_t{23})}).value();
  ds_ = ds_.Compact({.target_rows = 40}).value();
  ASSERT_EQ(ds_.state().fragments.size(), 3u);  // 15 + 39 + 40 live rows
  Append(100, 110);
  ds_ = ds_.Delete({Predicate::Eq("id", int64_t{57})}).value();  // after the first compaction
  ds_ = ds_.Compact({.target_rows = 1000}).value();
  // The three merged; the newer 10 rows, fewer than the 40 before them, stay.
  ASSERT_EQ(ds_.state().fragments.size(), 2u);
  EXPECT_EQ(IdsOf(0), Ids(5, 10));
  std::set<int64_t> second = Ids(20, 30);
  second.erase(23);
  EXPECT_EQ(IdsOf(2), second);
  std::set<int64_t> fifth = Ids(50, 60);
  fifth.erase(57);
  EXPECT_EQ(IdsOf(5), fifth);
  EXPECT_EQ(IdsOf(9), Ids(90, 100));
  uint64_t lost = 1;
  EXPECT_EQ(IdsOf(10, &lost), Ids(100, 110));
  EXPECT_EQ(lost, 0u);
  // A fragment no compaction touched is found where it is.
  Append(200, 210);
  EXPECT_EQ(IdsOf(11), Ids(200, 210));
}

// Deleted rows are gone; rows that left otherwise (a replace, a restore)
// are lost, not placed anywhere.
TEST_F(RowLineageTest, RowsRemovedOtherwiseThanByACompactionOrADeleteAreLost) {
  Append(0, 10);
  Append(10, 20);
  ds_ = ds_.Delete({Predicate::Lt("id", int64_t{10})}).value();  // all of the first
  ds_ = ds_.Compact({.target_rows = 100}).value();
  uint64_t lost = 1;
  EXPECT_TRUE(IdsOf(0, &lost).empty());
  EXPECT_EQ(lost, 0u);
  EXPECT_EQ(IdsOf(1), Ids(10, 20));
  ds_ = ds_.Overwrite({People(Range(10, 20), "v2")}).value();
  EXPECT_TRUE(IdsOf(1, &lost).empty());
  EXPECT_EQ(lost, 10u);
}

}  // namespace
}  // namespace loam
