#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace loam {
namespace {

constexpr size_t kNpos = std::string_view::npos;

// A bad byte is found at every offset: inside the 8-byte ASCII stride, in
// the tail after it, and right after a multi-byte sequence.
TEST(Utf8, FindsTheFirstBadByteAtEveryOffset) {
  for (size_t at = 0; at < 24; ++at) {
    for (const std::string bad : {"\xFF", "\xC0\xAF", "\xE2\x82", "\xED\xA0\x80", "\x80"}) {
      std::string s(at, 'a');
      s += bad;
      s += "tail";
      EXPECT_EQ(FindInvalidUtf8(s), at) << at << " " << bad.size();
      std::string after = std::string(at, 'b') + "\xC3\xA9" + bad;
      EXPECT_EQ(FindInvalidUtf8(after), at + 2) << at;
    }
  }
}

TEST(Utf8, AcceptsWellFormedText) {
  EXPECT_EQ(FindInvalidUtf8(""), kNpos);
  EXPECT_EQ(FindInvalidUtf8("plain ascii of some length"), kNpos);
  // 2-, 3- and 4-byte sequences at offsets that cross the 8-byte stride.
  for (size_t at = 0; at < 12; ++at) {
    const std::string s = std::string(at, 'x') + "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" + "end";
    EXPECT_EQ(FindInvalidUtf8(s), kNpos) << at;
    EXPECT_TRUE(IsValidUtf8(s));
  }
  EXPECT_EQ(FindInvalidUtf8("\xF4\x8F\xBF\xBF"), kNpos);  // U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);     // above it
}

}  // namespace
}  // namespace loam
