#include "common/flat_hash_map.h"

#include <gtest/gtest.h>

#include <string>

namespace loam {
namespace {

TEST(FlatHashMap, InsertsFindsAndGrows) {
  FlatHashMap<int> m;  // starts small: grows many times
  for (int i = 0; i < 100000; ++i) {
    bool fresh = false;
    m.FindOrInsert(Hash128(std::to_string(i)), &fresh) = i;
    ASSERT_TRUE(fresh);
  }
  EXPECT_EQ(m.size(), 100000u);
  for (int i = 0; i < 100000; i += 7) {
    const int* v = m.Find(Hash128(std::to_string(i)));
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(*v, i);
  }
  EXPECT_EQ(m.Find(Hash128("absent")), nullptr);
  bool fresh = true;
  EXPECT_EQ(m.FindOrInsert(Hash128("42"), &fresh), 42);
  EXPECT_FALSE(fresh);
  EXPECT_EQ(m.size(), 100000u);
}

}  // namespace
}  // namespace loam
