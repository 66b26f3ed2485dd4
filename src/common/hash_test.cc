#include "common/hash.h"

#include <gtest/gtest.h>

namespace loam {
namespace {

TEST(HashTest, StableKnownValues) {
  // xxh3 values are part of on-disk formats: these must never change.
  EXPECT_EQ(Hash64(""), 0x2D06800538D394C2ull);
  EXPECT_EQ(Hash128Hex("").size(), 32u);
  EXPECT_NE(Hash64("a"), Hash64("b"));
  EXPECT_NE(Hash64("a", 1), Hash64("a", 2));
}

TEST(HashTest, IncrementalMatchesOneShot) {
  std::string data(100000, 'x');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 31);
  Hasher64 h;
  h.Update(std::string_view(data).substr(0, 7));
  h.Update(std::string_view(data).substr(7, 50000));
  h.Update(std::string_view(data).substr(50007));
  EXPECT_EQ(h.Digest(), Hash64(data));
  Hasher64 seeded(9);
  seeded.Update(data);
  EXPECT_EQ(seeded.Digest(), Hash64(data, 9));
}

}  // namespace
}  // namespace loam
