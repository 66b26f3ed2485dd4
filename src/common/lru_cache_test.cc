#include "common/lru_cache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

namespace loam {
namespace {

TEST(LruCacheTest, EvictsLeastRecentlyUsedByCharge) {
  LruCache cache(100);
  cache.Put<int>("a", std::make_shared<const int>(1), 40);
  cache.Put<int>("b", std::make_shared<const int>(2), 40);
  ASSERT_NE(cache.Get<int>("a"), nullptr);                  // a is now the most recent
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

TEST(LruCacheTest, AnEntryIsFoundOnlyAsTheTypeItWasStoredAs) {
  LruCache cache(100);
  cache.Put<int>("k", std::make_shared<const int>(7), 10);
  EXPECT_EQ(cache.Get<std::string>("k"), nullptr);  // never an int read as a string
  cache.Put<std::string>("k", std::make_shared<const std::string>("seven"), 10);
  EXPECT_EQ(*cache.Get<int>("k"), 7);  // both live side by side
  EXPECT_EQ(*cache.Get<std::string>("k"), "seven");
  EXPECT_EQ(cache.charge(), 20u);
}

// Threads put and get values of two types under overlapping names while
// eviction runs: every hit is the value its type and name were stored with,
// and the charge never exceeds the capacity.
TEST(LruCacheTest, ThreadsSeeOnlyWhatWasStoredUnderTheirTypeAndName) {
  constexpr int kThreads = 4, kRounds = 20000, kNames = 64;
  LruCache cache(32 * 8);  // room for a quarter of the entries: evictions throughout
  std::atomic<int> wrong{0}, over{0}, int_hits{0}, string_hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        const int n = (i * 7 + t * 13) % kNames;  // put under n, look up m
        const int m = (i * 5 + t * 3 + 1) % kNames;
        if ((i / 2 + t) % 2 == 0) {
          cache.Put<int64_t>("f" + std::to_string(n), std::make_shared<const int64_t>(n), 8);
        } else {
          cache.Put<std::string>("f" + std::to_string(n),
                                 std::make_shared<const std::string>("s" + std::to_string(n)), 8);
        }
        if (auto v = cache.Get<int64_t>("f" + std::to_string(m))) {
          wrong += *v != m;
          int_hits++;
        }
        if (auto s = cache.Get<std::string>("f" + std::to_string(m))) {
          wrong += *s != "s" + std::to_string(m);
          string_hits++;
        }
        over += cache.charge() > 32 * 8;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(over.load(), 0);
  EXPECT_GT(int_hits.load(), 0);  // both types were found under shared names
  EXPECT_GT(string_hits.load(), 0);
}

}  // namespace
}  // namespace loam
