// Cost gates (label `cost`): opening the latest version costs the same number
// of requests and bytes at 10 versions as at 10,000.
#include <gtest/gtest.h>

#include <cstdlib>

#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

IoCounters OpenLatestCost(uint64_t versions) {
  auto store = testing::NewTestStore();
  Dataset ds = Dataset::Create(store, "t", testing::PeopleSchema()).value();
  ds = ds.Append({testing::People({1, 2, 3})}).value();
  // Each restore commits a new version with the same content.
  while (ds.version() < versions) ds = ds.Restore(2).value();
  auto counting = std::make_shared<CountingObjectStore>(store);
  Dataset opened = Dataset::Open(counting, "t").value();
  EXPECT_EQ(opened.version(), versions);
  EXPECT_EQ(opened.CountRows(), 3u);
  return counting->Snapshot().total;
}

TEST(DatasetCostTest, OpeningTheLatestVersionIsFlatOverHistory) {
  // LOAM_DATASET_COST_VERSIONS shortens the deep history (the S3 copy: 2,000,
  // still past S3's 1,000-key list page).
  const char* env = std::getenv("LOAM_DATASET_COST_VERSIONS");
  const uint64_t deep = env != nullptr ? std::strtoull(env, nullptr, 10) : 10'000;
  const IoCounters at10 = OpenLatestCost(10);
  const IoCounters at10k = OpenLatestCost(deep);
  std::printf("[ figures ] open latest: 10 versions %s | %llu versions %s\n",
              at10.ToString().c_str(), static_cast<unsigned long long>(deep),
              at10k.ToString().c_str());
  EXPECT_EQ(at10.total_requests(), at10k.total_requests());
  EXPECT_EQ(at10.count(ObjectOp::kList), 1u);
  EXPECT_EQ(at10.bytes_read, at10k.bytes_read);
}

}  // namespace
}  // namespace loam
