#include "common/lru_cache.h"

#include <gtest/gtest.h>

namespace loam {
namespace {

TEST(LruCacheTest, EvictsLeastRecentlyUsedByCharge) {
  LruCache cache(100);
  cache.Put<int>("a", std::make_shared<const int>(1), 40);
  cache.Put<int>("b", std::make_shared<const int>(2), 40);
  ASSERT_NE(cache.Get<int>("a"), nullptr);  // a is now the most recent
  cache.Put<int>("c", std::make_shared<const int>(3), 40);  // evicts b
  EXPECT_EQ(cache.Get<int>("b"), nullptr);
  EXPECT_EQ(*cache.Get<int>("a"), 1);
  EXPECT_EQ(*cache.Get<int>("c"), 3);
  EXPECT_EQ(cache.charge(), 80u);
  cache.Put<int>("huge", std::make_shared<const int>(4), 1000);  // larger than the cache
  EXPECT_EQ(cache.Get<int>("huge"), nullptr);
  cache.Put<int>("a", std::make_shared<const int>(5), 10);  // replace
  EXPECT_EQ(*cache.Get<int>("a"), 5);
  EXPECT_EQ(cache.charge(), 50u);
  EXPECT_GE(cache.hits(), 4u);
}

}  // namespace
}  // namespace loam
