#include "common/crypto.h"

#include <gtest/gtest.h>

namespace loam {
namespace {

// Known answers: FIPS 180-2 ("abc") and RFC 4231 test case 2.
TEST(CryptoTest, DigestsAndMacsMatchTheirPublishedVectors) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256("abc"), *HexDecode(Sha256Hex("abc")));
  EXPECT_EQ(HexEncode(HmacSha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  Sha256Hasher h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.HexDigest(), Sha256Hex("abc"));
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("")));
  EXPECT_FALSE(IsSha256Hex("BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"));
  EXPECT_FALSE(IsSha256Hex("abc"));
}

TEST(CryptoTest, HexAndBase64UrlRoundTripAndRefuseWhatTheyDoNotWrite) {
  const std::string bytes("\x00\xff\x10 ok\xfb", 7);
  EXPECT_EQ(HexEncode(bytes), "00ff10206f6bfb");
  EXPECT_EQ(HexDecode(HexEncode(bytes)), bytes);
  EXPECT_FALSE(HexDecode("0"));
  EXPECT_FALSE(HexDecode("0G"));
  EXPECT_FALSE(HexDecode("AB"));  // upper case is not what HexEncode writes
  for (size_t n = 0; n <= bytes.size(); ++n) {
    const std::string part = bytes.substr(0, n);
    EXPECT_EQ(Base64UrlDecode(Base64UrlEncode(part)), part) << n;
  }
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");  // RFC 4648 section 5 alphabet
  EXPECT_FALSE(Base64UrlDecode("-_8="));          // padding
  EXPECT_FALSE(Base64UrlDecode("-_9"));           // unused bits set: not canonical
  EXPECT_FALSE(Base64UrlDecode("A"));             // a lone sixth of a byte
  EXPECT_FALSE(Base64UrlDecode("a+b/"));          // the other alphabet
}

TEST(CryptoTest, ConstantTimeEqualComparesSizesAndBytes) {
  EXPECT_TRUE(ConstantTimeEqual("mac", "mac"));
  EXPECT_FALSE(ConstantTimeEqual("mac", "mad"));
  EXPECT_FALSE(ConstantTimeEqual("mac", "ma"));
  EXPECT_TRUE(ConstantTimeEqual("", ""));
}

}  // namespace
}  // namespace loam
