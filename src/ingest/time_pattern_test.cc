#include "ingest/time_pattern.h"

#include <gtest/gtest.h>

#include "ingest/coercion.h"

namespace loam::ingest {
namespace {

constexpr int64_t kSecond = 1'000'000;

void ExpectRefused(std::string_view pattern, bool timestamp, std::string_view zone,
                   std::string_view why) {
  Result<TimePattern> p = TimePattern::Compile(pattern, timestamp, zone);
  ASSERT_FALSE(p.ok()) << pattern;
  EXPECT_TRUE(p.status().IsInvalidArgument()) << p.status();
  EXPECT_NE(p.status().message().find(why), std::string::npos) << p.status();
}

// The shapes of public example files (vega-datasets' stocks.csv, github.csv).
TEST(TimePattern, ReadsTheLayoutsRealFilesUse) {
  const TimePattern stocks = TimePattern::Compile("%b %e %Y", false).value();
  EXPECT_EQ(stocks.ParseDate("Jan 1 2000").value(), 10957);
  EXPECT_EQ(stocks.ParseDate("Dec 31 2009").value(), 14609);
  EXPECT_EQ(stocks.ParseDate("feb 29 2000").value(), 11016);  // names in any case
  const TimePattern github = TimePattern::Compile("%Y/%m/%d %H:%M:%S", true, "UTC").value();
  EXPECT_EQ(github.ParseTimestamp("2015/01/01 01:00:00").value(), 1420074000 * kSecond);
  const TimePattern us = TimePattern::Compile("%m/%d/%Y %I:%M %p", true, "-05:00").value();
  EXPECT_EQ(us.ParseTimestamp("01/01/2015 12:30 AM").value(), (1420072200 + 5 * 3600) * kSecond);
  EXPECT_EQ(us.ParseTimestamp("01/01/2015 12:30 pm").value(), (1420115400 + 5 * 3600) * kSecond);
  const TimePattern zoned = TimePattern::Compile("%d %B %Y %H:%M:%S.%f%z", true).value();
  EXPECT_EQ(zoned.ParseTimestamp("01 January 2015 02:00:00.25+01:00").value(),
            1420074000 * kSecond + 250'000);
  EXPECT_EQ(zoned.ParseTimestamp("01 January 2015 01:00:00.000001Z").value(),
            1420074000 * kSecond + 1);
  EXPECT_EQ(TimePattern::Compile("%Y%m%d", false).value().ParseDate("20000101").value(), 10957);
  EXPECT_EQ(
      TimePattern::Compile("100%% %Y-%m-%d", false).value().ParseDate("100% 2000-01-01").value(),
      10957);
}

TEST(TimePattern, TextsOutsideTheLayoutFailNamingItNotTheValue) {
  const TimePattern p = TimePattern::Compile("%b %e %Y", false).value();
  for (std::string_view bad : {"Jan 1 00", "Jan 32 2000", "Feb 30 2000", "Jan  1 2000",
                               "January 1 2000", "Jan 1 2000 ", "Foo 1 2000", "", "Jan 1 0000"}) {
    Result<int32_t> r = p.ParseDate(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("as '%b %e %Y'"), std::string::npos) << r.status();
    if (!bad.empty()) {
      EXPECT_EQ(r.status().message().find(std::string(bad)), std::string::npos) << r.status();
    }
  }
  const TimePattern t = TimePattern::Compile("%Y-%m-%d %H:%M", true, "UTC").value();
  for (std::string_view bad : {"2000-01-01 24:00", "2000-01-01 10:60", "2000-01-01 1:00"}) {
    EXPECT_FALSE(t.ParseTimestamp(bad).ok()) << bad;
  }
}

TEST(TimePattern, AmbiguousPatternsAreRefusedWhenDeclared) {
  ExpectRefused("%m/%d/%y", false, "", "two-digit year");
  ExpectRefused("%d/%m", false, "", "no year");
  ExpectRefused("%Y-%d", false, "", "no month");
  ExpectRefused("%Y-%m", false, "", "no day");
  ExpectRefused("%Y-%m-%d %m", false, "", "%m appears twice");
  ExpectRefused("%Y-%b-%m-%d", false, "", "two months");
  ExpectRefused("%Y-%m-%d-%e", false, "", "two days");
  ExpectRefused("%Y-%m-%e%H", true, "UTC", "runs into %H");
  ExpectRefused("%e1%m%Y", false, "", "runs into a digit");
  ExpectRefused("%Y-%m-%d %H:%M", false, "", "patternToTimestamp");
  ExpectRefused("%Y-%m-%d", false, "UTC", "takes no time zone");
  ExpectRefused("%Y-%m-%d %H:%M", true, "", "state the zone");
  ExpectRefused("%Y-%m-%d %H:%M%z", true, "UTC", "both %z and a stated time zone");
  ExpectRefused("%Y-%m-%d %I:%M", true, "UTC", "AM or PM");
  ExpectRefused("%Y-%m-%d %H:%M %p", true, "UTC", "%p without %I");
  ExpectRefused("%Y-%m-%d %H", true, "UTC", "no minutes");
  ExpectRefused("%Y-%m-%d %H:%M.%f", true, "UTC", "%f without %S");
  ExpectRefused("%Y-%m-%d %Q", false, "", "unknown directive %Q");
  ExpectRefused("%Y-%m-%d %", false, "", "ends inside a directive");
  ExpectRefused("%Y-%m-%d %H:%M", true, "Europe/Paris", "fixed offset");
  ExpectRefused("%Y-%m-%d %H:%M", true, "+5", "fixed offset");
}

// The coercions through the policy: JSON, the --coerce flag, the table check.
TEST(TimePattern, PatternCoercionsInThePolicy) {
  SchemaPolicy policy = SchemaPolicy::FromJson(
                            R"({"mode":"strict","coercions":[
      {"sourceColumn":"d","targetColumn":"d","kind":"patternToDate","pattern":"%b %e %Y"},
      {"sourceColumn":"t","targetColumn":"t","kind":"patternToTimestamp",
       "pattern":"%Y/%m/%d %H:%M:%S","timeZone":"UTC"}]})")
                            .value();
  Schema table{{{"d", DataType::Date()}, {"t", DataType::Timestamp()}, {"n", DataType::Int64()}}};
  ASSERT_TRUE(policy.CheckAgainst(table).ok());
  EXPECT_EQ(SchemaPolicy::FromJson(policy.ToJson()).value().coercions, policy.coercions);
  Column d(DataType::Date());
  ASSERT_TRUE(
      AppendValue(table.fields[0], policy.For("d"), "Mar 1 2000", ValueForm::kCsvField, &d).ok());
  EXPECT_EQ(d.GetInt32(0), 11017);
  Column t(DataType::Timestamp());
  Status wrong = AppendValue(table.fields[1], policy.For("t"), "2015-01-01T01:00:00Z",
                             ValueForm::kCsvField, &t);
  EXPECT_NE(wrong.message().find("patternToTimestamp: expected a timestamp as '%Y/%m/%d"),
            std::string::npos)
      << wrong;
  EXPECT_EQ(t.length(), 0);

  SchemaPolicy flags;
  ASSERT_TRUE(flags.AddFlag("d:patternToDate:%b %e %Y").ok());
  ASSERT_TRUE(flags.AddFlag("t:patternToTimestamp:%Y/%m/%d %H:%M:%S@UTC").ok());
  EXPECT_EQ(flags.coercions, policy.coercions);
  SchemaPolicy at_sign;  // a date has no zone: its '@' is a literal
  ASSERT_TRUE(at_sign.AddFlag("d:patternToDate:%Y@%m@%d").ok());
  EXPECT_EQ(at_sign.coercions[0].pattern, "%Y@%m@%d");
  for (std::string_view bad :
       {"t:patternToTimestamp:%Y/%m/%d %H:%M:%S", "d:patternToDate", "d:patternToDate:%y"}) {
    SchemaPolicy p;
    EXPECT_TRUE(p.AddFlag(bad).IsInvalidArgument()) << bad;
  }
  SchemaPolicy on_int;
  ASSERT_TRUE(on_int.AddFlag("n:patternToDate:%Y-%m-%d").ok());
  EXPECT_NE(on_int.CheckAgainst(table).message().find("patternToDate applies to date columns"),
            std::string::npos);
  for (
      std::string_view bad :
      {R"({"mode":"strict","coercions":[{"sourceColumn":"d","targetColumn":"d","kind":"patternToDate"}]})",
       R"({"mode":"strict","coercions":[{"sourceColumn":"n","targetColumn":"n","kind":"stringToInt","pattern":"%Y"}]})",
       R"({"mode":"strict","coercions":[{"sourceColumn":"d","targetColumn":"d","kind":"patternToDate","pattern":"%Y-%m-%d","zone":"UTC"}]})"}) {
    EXPECT_TRUE(SchemaPolicy::FromJson(bad).status().IsInvalidArgument()) << bad;
  }
}

}  // namespace
}  // namespace loam::ingest
