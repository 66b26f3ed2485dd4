#include "ingest/text_value.h"

#include <gtest/gtest.h>

namespace loam::ingest {
namespace {

// Appends `text` to a fresh column of `type`; the status, and the column.
Status Try(DataType type, std::string_view text, Column* col, bool nullable = true,
           bool quoted = false) {
  return AppendCanonical(Field{"c", type, nullable}, text, quoted, col);
}

void ExpectRejected(DataType type, std::string_view text, std::string_view hint) {
  Column col(type);
  Status s = Try(type, text, &col);
  EXPECT_TRUE(s.IsInvalidArgument()) << type.ToString() << " '" << text << "': " << s;
  EXPECT_NE(s.message().find(hint), std::string::npos) << s;
  EXPECT_EQ(col.length(), 0) << "nothing appended on error";
}

TEST(TextValue, CanonicalFormsParse) {
  Column b(DataType::Bool());
  ASSERT_TRUE(Try(DataType::Bool(), "true", &b).ok());
  ASSERT_TRUE(Try(DataType::Bool(), "false", &b).ok());
  EXPECT_EQ(b.length(), 2);
  Column i(DataType::Int64());
  ASSERT_TRUE(Try(DataType::Int64(), "-9223372036854775808", &i).ok());
  ASSERT_TRUE(Try(DataType::Int64(), "0", &i).ok());
  EXPECT_EQ(i.GetInt64(0), INT64_MIN);
  Column f(DataType::Float64());
  ASSERT_TRUE(Try(DataType::Float64(), "-1.5e3", &f).ok());
  EXPECT_EQ(f.GetFloat64(0), -1500.0);
  EXPECT_EQ(ParseCanonicalDate("1970-01-02").value(), 1);
  EXPECT_EQ(ParseCanonicalDate("2000-02-29").value(), 11016);
  EXPECT_EQ(ParseCanonicalTimestamp("1970-01-01T00:00:01.5Z").value(), 1'500'000);
  EXPECT_EQ(ParseCanonicalTimestamp("2026-11-30T04:10:00Z").value(), 1796011800'000000);
  Int128 d = ParseCanonicalDecimal("-12.3", 5, 2).value();
  EXPECT_EQ(d, Int128::FromInt64(-1230));
  EXPECT_EQ(ParseCanonicalDecimal("0.05", 3, 2).value(), Int128::FromInt64(5));
  Column bin(DataType::Binary());
  ASSERT_TRUE(Try(DataType::Binary(), "aGk=", &bin).ok());
  EXPECT_EQ(bin.GetBytes(0), "hi");
  Column s(DataType::String());
  ASSERT_TRUE(
      Try(DataType::String(), "", &s, true, /*quoted=*/true).ok());  // "" is empty, not null
  ASSERT_TRUE(Try(DataType::String(), "", &s).ok());                 // unquoted empty: null
  EXPECT_FALSE(s.IsNull(0));
  EXPECT_TRUE(s.IsNull(1));
  Column j(DataType::Json());
  ASSERT_TRUE(Try(DataType::Json(), R"({"a":[1,2]})", &j).ok());
}

TEST(TextValue, EverythingElseIsRejectedWithTheExpectedForm) {
  ExpectRejected(DataType::Bool(), "TRUE", "true or false");
  ExpectRejected(DataType::Bool(), "1", "true or false");
  ExpectRejected(DataType::Int32(), "2147483648", "out of range");
  ExpectRejected(DataType::Int64(), "+5", "plain digits");
  ExpectRejected(DataType::Int64(), "007", "plain digits");
  ExpectRejected(DataType::Int64(), " 5", "plain digits");
  ExpectRejected(DataType::Int64(), "99999999999999999999", "out of range");
  ExpectRejected(DataType::Float64(), "3", "intToFloat");
  ExpectRejected(DataType::Float64(), "NaN", "finite number");
  ExpectRejected(DataType::Float64(), "1e999", "finite number");
  ExpectRejected(DataType::Float64(), ".", "finite number");
  ExpectRejected(DataType::Float64(), "-.", "finite number");
  ExpectRejected(DataType::Float64(), ".e5", "finite number");
  ExpectRejected(DataType::Float64(), "-..5", "finite number");
  ExpectRejected(DataType::String(), "bad\xff", "invalid UTF-8 at byte 3");
  ExpectRejected(DataType::Binary(), "aGk", "base64");
  ExpectRejected(DataType::Date(), "2026-02-29", "YYYY-MM-DD");
  ExpectRejected(DataType::Date(), "2026-1-05", "YYYY-MM-DD");
  ExpectRejected(DataType::Timestamp(), "2026-11-30T04:10:00+02:00", "iso8601ToTimestamp");
  ExpectRejected(DataType::Timestamp(), "2026-11-30 04:10:00Z", "YYYY-MM-DDTHH:MM:SS");
  ExpectRejected(DataType::Timestamp(), "2026-11-30T24:00:00Z", "YYYY-MM-DDTHH:MM:SS");
  ExpectRejected(DataType::Timestamp(), "2026-11-30T04:10:00.1234567Z", "ffffff");
  ExpectRejected(DataType::Decimal(5, 2), "1.234", "does not fit");
  ExpectRejected(DataType::Decimal(5, 2), "1234.5", "does not fit");
  ExpectRejected(DataType::Decimal(5, 2), "1e3", "no exponent");
  ExpectRejected(DataType::Decimal(5, 2), ".", "no exponent");
  ExpectRejected(DataType::Decimal(5, 2), "-.", "no exponent");
  ExpectRejected(DataType::Decimal(5, 2), ".123", "does not fit");
  ExpectRejected(DataType::Json(), "{\"a\":", "JSON document");
  Column c(DataType::Int64());
  Status missing = AppendCanonical(Field{"id", DataType::Int64(), false}, "", false, &c);
  EXPECT_NE(missing.message().find("missing value for non-nullable column 'id'"), std::string::npos)
      << missing;
}

// ".5" and "-.5": a fraction without integer digits, as SQL databases take
// it (unemployment.tsv writes rates so).
TEST(TextValue, FractionsWithoutALeadingZeroParse) {
  Column f(DataType::Float64());
  ASSERT_TRUE(Try(DataType::Float64(), ".097", &f).ok());
  ASSERT_TRUE(Try(DataType::Float64(), "-.5", &f).ok());
  ASSERT_TRUE(Try(DataType::Float64(), ".5e2", &f).ok());
  EXPECT_EQ(f.GetFloat64(0), 0.097);
  EXPECT_EQ(f.GetFloat64(1), -0.5);
  EXPECT_EQ(f.GetFloat64(2), 50.0);
  EXPECT_EQ(ParseCanonicalDecimal(".097", 4, 3).value(), Int128::FromInt64(97));
  EXPECT_EQ(ParseCanonicalDecimal("-.5", 3, 2).value(), Int128::FromInt64(-50));
}

TEST(TextValue, ErrorsNeverEchoTheValue) {
  Column c(DataType::Int64());
  Status s = Try(DataType::Int64(), "secret-4111111111111111", &c);
  EXPECT_EQ(s.message().find("4111"), std::string::npos) << s;
}

}  // namespace
}  // namespace loam::ingest
