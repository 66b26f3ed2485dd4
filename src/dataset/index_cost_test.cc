// Cost gates for the B+tree index (label `cost`).
#include <gtest/gtest.h>

#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

TEST(IndexCostTest, PointLookupOnAMillionKeysReadsOnePagePerLevel) {
  auto store = testing::NewTestStore();
  Schema schema{{{"id", DataType::Int64(), false}}};
  Dataset ds = Dataset::Create(store, "t", schema).value();
  RecordBatch b(schema);
  b.columns[0].Reserve(1'000'000);
  for (int64_t i = 0; i < 1'000'000; ++i) b.columns[0].AppendInt64(i * 7);
  ds = ds.Append({b}).value().CreateIndex("by_id", "id").value();
  const IndexMeta& meta = *ds.state().FindIndex("by_id");
  EXPECT_EQ(meta.entries, 1'000'000u);
  // 256 entries per page: ceil(log256(1e6 / 256)) + 1 = 3 levels.
  EXPECT_EQ(meta.levels, 3u);

  auto counting = std::make_shared<CountingObjectStore>(store, /*prefix_depth=*/2);
  Dataset opened = Dataset::Open(counting, "t").value();
  for (int64_t key : {int64_t{0}, int64_t{3'500'000}, int64_t{6'999'993}, int64_t{1}}) {
    counting->Reset();
    ScanStats stats;
    ScanSpec spec;
    spec.where = {Predicate::Eq("id", key)};
    spec.stats = &stats;
    RecordBatch got = opened.ReadAll(spec).value();
    EXPECT_EQ(got.num_rows(), key % 7 == 0 ? 1 : 0);
    EXPECT_EQ(stats.index_pages_read, 3);
    EXPECT_EQ(counting->Snapshot().by_prefix["t/_indices/"].total_requests(), 3u);
    std::printf("[ figures ] lookup %lld: %s\n", static_cast<long long>(key),
                counting->Snapshot().total.ToString().c_str());
  }
}

TEST(IndexCostTest, UncoveredTailOfKFragmentsCostsExactlyKScans) {
  auto store = testing::NewTestStore();
  Dataset ds = Dataset::Create(store, "t", testing::PeopleSchema()).value();
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 1000; ++i) ids.push_back(i);
  ds = ds.Append({testing::People(ids)}).value().CreateIndex("by_id", "id").value();
  for (int k = 0; k <= 4; ++k) {
    ScanStats stats;
    ScanSpec spec;
    spec.where = {Predicate::Eq("id", int64_t{500})};
    spec.stats = &stats;
    EXPECT_EQ(ds.ReadAll(spec).value().num_rows(), 1);
    EXPECT_EQ(stats.fragments_scanned, k);
    EXPECT_EQ(stats.fragments_taken, 1);
    ds = ds.Append({testing::People({10'000 + k})}).value();
  }
}

}  // namespace
}  // namespace loam
