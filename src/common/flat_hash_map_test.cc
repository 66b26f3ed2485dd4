#include "common/flat_hash_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

TEST(FlatHashMap, KeysSharingSlotBitsOrTagStayDistinct) {
  // Keys with the same low bits (one probe chain), the same tag bits, and
  // the all-zero key.
  FlatHashMap<int> m;
  const std::vector<Hash128Value> keys = {{0, 0},    {0, 1},  {1 << 20, 0}, {1 << 21, 0},
                                          {0, 0x80}, {16, 0}, {32, 0x7f}};
  for (size_t i = 0; i < keys.size(); ++i) m.FindOrInsert(keys[i]) = static_cast<int>(i) + 1;
  for (size_t i = 0; i < keys.size(); ++i) {
    const int* v = m.Find(keys[i]);
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, static_cast<int>(i) + 1);
    EXPECT_TRUE(m.MayContain(keys[i])) << i;
  }
  EXPECT_EQ(m.Find(Hash128Value{48, 0}), nullptr);
  EXPECT_EQ(m.size(), keys.size());
}

TEST(FlatHashMap, MayContainIsTrueForEveryKeyAndRarelyForOthers) {
  FlatHashMap<int> m;
  for (int i = 0; i < 50000; ++i) m.FindOrInsert(Hash128("in " + std::to_string(i))) = i;
  for (int i = 0; i < 50000; ++i) {
    const Hash128Value key = Hash128("in " + std::to_string(i));
    m.Prefetch(key);
    ASSERT_TRUE(m.MayContain(key)) << i;
  }
  // An absent key passes only when a 7-bit tag in its probe chain matches.
  int passed = 0;
  for (int i = 0; i < 50000; ++i) passed += m.MayContain(Hash128("out " + std::to_string(i)));
  EXPECT_LT(passed, 50000 / 50);
}

TEST(FlatHashMap, MayContainFollowsAProbeChainThatWraps) {
  FlatHashMap<int> m;  // 16 slots: keys whose low bits are 15 chain through 15, 0, 1
  const std::vector<Hash128Value> keys = {{15, 1}, {31, 2}, {47, 3}};
  for (size_t i = 0; i < keys.size(); ++i) m.FindOrInsert(keys[i]) = static_cast<int>(i);
  for (size_t i = 0; i < keys.size(); ++i) {
    EXPECT_TRUE(m.MayContain(keys[i])) << i;
    ASSERT_NE(m.Find(keys[i]), nullptr);
    EXPECT_EQ(*m.Find(keys[i]), static_cast<int>(i));
  }
  // The same chain, a tag none of them has: rejected on control bytes alone.
  EXPECT_FALSE(m.MayContain(Hash128Value{63, 4}));
  EXPECT_EQ(m.Find(Hash128Value{63, 4}), nullptr);
  // A matching tag makes it a candidate; Find settles it.
  EXPECT_TRUE(m.MayContain(Hash128Value{63, 3}));
  EXPECT_EQ(m.Find(Hash128Value{63, 3}), nullptr);
}

TEST(FlatHashMap, ReserveKeepsEveryEntry) {
  FlatHashMap<uint64_t> m;
  m.Reserve(5000);
  for (uint64_t i = 0; i < 5000; ++i) m.FindOrInsert(Hash128(std::to_string(i))) = i;
  m.Reserve(10);      // never shrinks
  m.Reserve(100000);  // grows, keeping the entries
  EXPECT_EQ(m.size(), 5000u);
  for (uint64_t i = 0; i < 5000; ++i) {
    const uint64_t* v = m.Find(Hash128(std::to_string(i)));
    ASSERT_NE(v, nullptr) << i;
    EXPECT_EQ(*v, i);
  }
  EXPECT_EQ(m.Find(Hash128("5000")), nullptr);
}

}  // namespace
}  // namespace loam
