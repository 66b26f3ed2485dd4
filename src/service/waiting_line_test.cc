#include "service/waiting_line.h"

#include <gtest/gtest.h>

#include <string>

namespace loam::service {
namespace {

TEST(WaitingLineTest, PlacesKeepTheirOrderAndTheLineIsBounded) {
  WaitingLine line;
  line.Refused("a", "o", 10, 100);
  line.Refused("b", "o", 20, 100);
  line.Refused("c", "o", 40, 100);
  line.Refused("a", "o", 11, 5'000'000);  // refused again: same place, new bytes and time
  EXPECT_EQ(line.AheadOf("a", 0).runs, 0);
  EXPECT_EQ(line.AheadOf("c", 0).runs, 2);
  EXPECT_EQ(line.AheadOf("c", 0).bytes, 31);
  EXPECT_EQ(line.AheadOf("new", 0).bytes, 71);
  line.Admitted("b");
  EXPECT_EQ(line.AheadOf("c", 0).bytes, 11);
  // b and c stayed away; a is still held.
  const int64_t later = 100 + WaitingLine::kHoldAfterDueMicros + 1;
  EXPECT_EQ(line.AheadOf("new", later).runs, 1);
  EXPECT_EQ(line.AheadOf("new", later).bytes, 11);
  EXPECT_EQ(line.size(), 1u);

  WaitingLine full;
  for (size_t i = 0; i < WaitingLine::kMaxPlaces; ++i)
    full.Refused(std::to_string(i), std::to_string(i % 200), 1, 100);
  full.Refused("one too many", "new owner", 1, 100);
  EXPECT_EQ(full.size(), WaitingLine::kMaxPlaces);
  EXPECT_EQ(full.AheadOf("one too many", 0).runs, static_cast<int64_t>(WaitingLine::kMaxPlaces));
  EXPECT_EQ(full.AheadOf("99999", 0).runs, static_cast<int64_t>(WaitingLine::kMaxPlaces) - 1);
}

TEST(WaitingLineTest, OneOwnerHoldsABoundedShare) {
  WaitingLine line;
  for (size_t i = 0; i < WaitingLine::kMaxPlacesPerOwner + 5; ++i) {
    line.Refused("mallory" + std::to_string(i), "mallory", 1 << 30, 100);
  }
  EXPECT_EQ(line.size(), WaitingLine::kMaxPlacesPerOwner);
  line.Refused("ada's", "ada", 10, 100);  // another owner still gets a place
  EXPECT_EQ(line.size(), WaitingLine::kMaxPlacesPerOwner + 1);
  line.Admitted("mallory0");
  line.Refused("mallory-again", "mallory", 1, 100);  // a freed share is taken again
  EXPECT_EQ(line.AheadOf("mallory-again", 0).runs,
            static_cast<int64_t>(WaitingLine::kMaxPlacesPerOwner));
}

}  // namespace
}  // namespace loam::service
