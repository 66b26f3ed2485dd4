#include "io/latency_object_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "io/memory_object_store.h"

namespace loam {
namespace {

TEST(LatencyObjectStoreTest, EveryCallWaitsADrawWithTheProfilesPercentiles) {
  std::vector<int64_t> waits;
  LatencyProfile p{20'000, 100'000, 7, [&](int64_t micros) { waits.push_back(micros); }};
  auto base = std::make_shared<MemoryObjectStore>();
  LatencyObjectStore store(base, p);
  ASSERT_TRUE(store.Put("a/1", "x").ok());
  ASSERT_TRUE(store.PutIfAbsent("a/2", "y").ok());
  EXPECT_EQ(store.Get("a/1").value(), "x");
  EXPECT_EQ(store.GetRange("a/2", 0, 1).value(), "y");
  EXPECT_TRUE(store.Head("a/1").ok());
  EXPECT_EQ(store.ListAll("a/").value().size(), 2u);
  EXPECT_TRUE(store.Delete("a/1").ok());
  EXPECT_TRUE(store.DeleteRelaxed("a/2").ok());
  EXPECT_EQ(waits.size(), 8u);  // one wait per request, before it
  EXPECT_TRUE(base->ListAll("a/").value().empty());

  waits.clear();
  for (int i = 0; i < 20'000; ++i) waits.push_back(store.DrawMicros());
  std::sort(waits.begin(), waits.end());
  const double p50 = static_cast<double>(waits[10'000]);
  const double p99 = static_cast<double>(waits[19'800]);
  EXPECT_NEAR(p50, 20'000, 1'000);
  EXPECT_NEAR(p99, 100'000, 10'000);
  EXPECT_GT(waits.front(), 0);

  // The same seed draws the same delays.
  LatencyObjectStore again(base, p);
  LatencyObjectStore same(base, p);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(again.DrawMicros(), same.DrawMicros());
  // p50 0: no wait at all.
  LatencyObjectStore none(base, LatencyProfile{0, 0, 1, {}});
  EXPECT_EQ(none.DrawMicros(), 0);
}

TEST(LatencyObjectStoreTest, ProfilesParseOrNameTheirText) {
  LatencyProfile p = LatencyProfile::Parse("20:100").value();
  EXPECT_EQ(p.p50_micros, 20'000);
  EXPECT_EQ(p.p99_micros, 100'000);
  p = LatencyProfile::Parse("0.5").value();
  EXPECT_EQ(p.p50_micros, 500);
  EXPECT_EQ(p.p99_micros, 2'500);
  for (const char* bad : {"", "x", "20:", "-1", "20:10", "20:100:3", "1e9"}) {
    Result<LatencyProfile> r = LatencyProfile::Parse(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(std::string("latency '") + bad + "'"), std::string::npos)
        << r.status();
  }
}

}  // namespace
}  // namespace loam
