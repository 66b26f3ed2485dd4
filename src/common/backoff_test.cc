#include "common/backoff.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace loam {
namespace {

TEST(BackoffTest, WaitsDoubleFromTheBaseUpToTheCapAndNeverBelowTheFloor) {
  const Backoff b{1'000, 20'000, 0.25};
  std::mt19937_64 rng(1);
  for (int attempt = 0; attempt < 40; ++attempt) {
    const int64_t cap = std::min<int64_t>(20'000, int64_t{1'000} << std::min(attempt, 20));
    int64_t least = cap, most = 0;
    for (int i = 0; i < 2'000; ++i) {
      const int64_t w = b.WaitMicros(attempt, rng);
      least = std::min(least, w);
      most = std::max(most, w);
    }
    EXPECT_GE(least, cap / 4) << attempt;
    EXPECT_LE(most, cap) << attempt;
    EXPECT_GT(most, cap * 9 / 10) << attempt;         // the draws reach the cap...
    EXPECT_LT(least, cap / 4 + cap / 10) << attempt;  // ...and the floor
  }
}

TEST(BackoffTest, FullJitterStartsAtZeroAndHugeAttemptsStayAtTheCap) {
  const Backoff full{500, 3'000, 0.0};
  std::mt19937_64 rng(2);
  int64_t least = 1 << 30;
  for (int i = 0; i < 5'000; ++i) least = std::min(least, full.WaitMicros(3, rng));
  EXPECT_LT(least, 50);
  for (int attempt : {31, 62, 1'000'000, -5}) {
    const int64_t w = full.WaitMicros(attempt, rng);
    EXPECT_GE(w, 0) << attempt;
    EXPECT_LE(w, attempt < 0 ? 500 : 3'000) << attempt;
  }
  const Backoff pinned{5'000'000, 300'000'000, 1.0};  // no jitter: exactly the cap
  EXPECT_EQ(pinned.WaitMicros(0, rng), 5'000'000);
  EXPECT_EQ(pinned.WaitMicros(10, rng), 300'000'000);
}

}  // namespace
}  // namespace loam
