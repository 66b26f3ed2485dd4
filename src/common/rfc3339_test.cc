#include "common/rfc3339.h"

#include "gtest/gtest.h"

namespace loam {
namespace {

TEST(Rfc3339, ReadsOffsetsAndFractionsToMicroseconds) {
  const int64_t utc = ParseRfc3339Micros("2025-11-30T04:10:00Z").value();
  EXPECT_EQ(utc, 1764475800LL * 1'000'000);
  EXPECT_EQ(ParseRfc3339Micros("2025-11-30T05:10:00+01:00").value(), utc);
  EXPECT_EQ(ParseRfc3339Micros("2025-11-29T23:40:00-04:30").value(), utc);
  EXPECT_EQ(ParseRfc3339Micros("2025-11-30t04:10:00.25z").value(), utc + 250'000);
  EXPECT_EQ(ParseRfc3339Micros("2025-11-30T04:10:00.123456000Z").value(), utc + 123'456);
  EXPECT_EQ(ParseRfc3339Micros("1970-01-01T00:00:00Z").value(), 0);
  EXPECT_EQ(ParseRfc3339Micros("0001-01-01T00:00:00Z").value(), -62'135'596'800'000'000);
  EXPECT_EQ(ParseRfc3339Micros("2024-02-29T00:00:00Z").value(), 1709164800LL * 1'000'000);
}

TEST(Rfc3339, RefusesWhatItCannotReadExactly) {
  for (const char* bad :
       {"", "2025-11-30", "2025-11-30 04:10:00Z", "2025-02-29T00:00:00Z", "2025-13-01T00:00:00Z",
        "0000-01-01T00:00:00Z", "2025-11-30T24:00:00Z", "2025-11-30T04:10:00.Z",
        "2025-11-30T04:10:00+1:00", "2025-11-30T04:10:00+01:0", "2025-11-30T04:10:00Zx",
        "2025-11-30T04:10:00+01:00:00"}) {
    Result<int64_t> r = ParseRfc3339Micros(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("RFC 3339"), std::string::npos) << bad;
  }
  EXPECT_NE(ParseRfc3339Micros("2025-11-30T04:10:00").status().message().find("no UTC offset"),
            std::string::npos);
  EXPECT_NE(ParseRfc3339Micros("2025-11-30T04:10:00.1234567Z")
                .status()
                .message()
                .find("sub-microsecond digits would be lost"),
            std::string::npos);
}

}  // namespace
}  // namespace loam
