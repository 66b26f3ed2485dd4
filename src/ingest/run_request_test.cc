// RunRequest::FromJson: every field typed, unknown fields and bad values
// refused with a clear error (never an exception), quarantine denied.
#include <gtest/gtest.h>

#include <string>

#include "common/quarantine.h"
#include "ingest/run_record.h"

namespace loam::ingest {
namespace {

TEST(RunRequestTest, RoundTripsThroughItsJson) {
  RunRequest r;
  r.table = "t";
  r.mode = LoadMode::kUpsert;
  r.keys = {"id"};
  r.files = {"a.csv"};
  r.format = InputFormat::kJsonLines;
  r.idempotency_key = "k";
  r.principal = "ada";
  r.limits.csv_delimiter = ';';
  r.limits.max_json_depth = 9;
  r.max_rows = 77;
  Result<RunRequest> back = RunRequest::FromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), r.ToJson());
  // Omitted fields take their defaults.
  Result<RunRequest> minimal = RunRequest::FromJson(R"({"table":"t","files":["a.csv"]})");
  ASSERT_TRUE(minimal.ok()) << minimal.status();
  EXPECT_EQ(minimal->mode, LoadMode::kAppend);
  EXPECT_EQ(minimal->limits.csv_delimiter, ',');
  // CSV options are written only when they differ: older requests keep their text.
  EXPECT_EQ(r.ToJson().find("\"csv\""), std::string::npos);
  r.limits.csv.quote = '\'';
  r.limits.csv.header = false;
  r.limits.csv.columns = {"id", "name"};
  r.limits.csv.null_marker = "NA";
  r.limits.csv.skip_lines = 3;
  r.limits.csv.comment_prefix = "#";
  back = RunRequest::FromJson(r.ToJson());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->ToJson(), r.ToJson());
  EXPECT_EQ(back->limits.csv.columns, (std::vector<std::string>{"id", "name"}));
  EXPECT_EQ(back->limits.csv.skip_lines, 3);
}

TEST(RunRequestTest, RefusesMalformedRequestsWithAClearError) {
  struct Bad {
    std::string json, message;
    StatusCode code = StatusCode::kInvalidArgument;
  };
  const Bad bad[] = {
      {"", "not a JSON object"},
      {"[]", "not a JSON object"},
      {R"({"files":["a"]})", "\"table\" is required"},
      {R"({"table":7})", "\"table\" must be a string"},
      {R"({"table":"t","colour":"red"})", "unknown field 'colour'"},
      {R"({"table":"t","mode":"merge"})", "unknown mode 'merge'"},
      {R"({"table":"t","files":"a.csv"})", "\"files\" must be an array of strings"},
      {R"({"table":"t","files":[1]})", "\"files\" must be an array of strings"},
      {R"({"table":"t","format":"xml"})", "xml"},
      {R"({"table":"t","limits":{"csvDelimiter":""}})", "\"csvDelimiter\" must be one printable"},
      {R"({"table":"t","limits":{"csvDelimiter":"ab"}})", "\"csvDelimiter\" must be one printable"},
      {R"({"table":"t","limits":{"csvDelimiter":"\""}})", "\"csvDelimiter\" must be one printable"},
      {R"({"table":"t","limits":{"csvDelimiter":"\u0000"}})",
       "\"csvDelimiter\" must be one printable"},
      {R"({"table":"t","limits":{"maxColumns":0}})", "\"maxColumns\" must be an integer"},
      {R"({"table":"t","csv":{"quote":"ab"}})", "\"quote\" must be one character"},
      {R"({"table":"t","csv":{"quote":","}})", "the quote must be one printable ASCII character"},
      {R"({"table":"t","csv":{"header":false}})", "needs its columns named"},
      {R"({"table":"t","csv":{"columns":["a"]}})", "columns are named only for an input without"},
      {R"({"table":"t","csv":{"header":false,"columns":["a","a"]}})", "column 'a' is named twice"},
      {R"({"table":"t","csv":{"nullMarker":"a,b"}})", "the null marker must be at most 64 bytes"},
      {R"({"table":"t","csv":{"skipLines":-1}})", "\"skipLines\" must be an integer from 0"},
      {R"({"table":"t","csv":{"commentPrefix":"\n"}})", "the comment prefix must be at most"},
      {R"({"table":"t","csv":{"escape":"\\"}})", "run request csv: unknown field 'escape'"},
      {R"({"table":"t","csv":[]})", "\"csv\" must be an object"},
      {R"({"table":"t","limits":{"maxColumns":-5}})", "\"maxColumns\" must be an integer"},
      {R"({"table":"t","limits":{"maxRows":1.5}})", "\"maxRows\" must be an integer"},
      {R"({"table":"t","limits":{"maxRows":18446744073709551615}})", "\"maxRows\" must be"},
      {R"({"table":"t","limits":{"maxExpansionRatio":"x"}})", "\"maxExpansionRatio\" must be"},
      {R"({"table":"t","limits":{"speed":1}})", "unknown field 'speed'"},
      {R"({"table":"t","limits":[]})", "\"limits\" must be an object"},
      {R"({"table":"t","schemaPolicy":{"mode":"lenient"}})", "\"mode\" must be \"strict\""},
      {R"({"table":"t","quarantine":"yes"})", "\"quarantine\" must be false"},
      {R"({"table":"t","quarantine":true})", "quarantine is refused",
       StatusCode::kPermissionDenied},
      {R"({"table":"t","errorPolicy":"quarantine"})", "quarantine error policy is refused",
       StatusCode::kPermissionDenied},
  };
  for (const Bad& b : bad) {
    Result<RunRequest> r = RunRequest::FromJson(b.json);
    ASSERT_FALSE(r.ok()) << b.json;
    EXPECT_EQ(r.status().code(), b.code) << b.json << ": " << r.status();
    EXPECT_NE(r.status().message().find(b.message), std::string::npos)
        << b.json << ": " << r.status();
  }
  EXPECT_TRUE(RunRequest::FromJson(R"({"table":"t","quarantine":false})").ok());
}

TEST(QuarantineSwitchTest, RefusesEveryTruthyValue) {
  for (const char* v : {"1", "true", "TRUE", "yes", "Yes", "on", "ON"}) {
    Status s = CheckQuarantineSwitch(v);
    EXPECT_TRUE(s.IsPermissionDenied()) << v << ": " << s;
    EXPECT_NE(s.message().find("refuses to run in quarantine mode"), std::string::npos);
  }
  for (const char* v : {"", "0", "false", "FALSE", "no", "off"}) {
    EXPECT_TRUE(CheckQuarantineSwitch(v).ok()) << v;
  }
  EXPECT_TRUE(CheckQuarantineSwitch(std::nullopt).ok());
  Status unknown = CheckQuarantineSwitch("2");
  EXPECT_TRUE(unknown.IsInvalidArgument()) << unknown;
  EXPECT_NE(unknown.message().find("unrecognised value '2'"), std::string::npos);
}

}  // namespace
}  // namespace loam::ingest

namespace loam::ingest {
namespace {

// A stored run record's integers are int64 integers: a float, a number past
// int64 or a negative count of bytes is data_loss, never a conversion.
TEST(RunRecordTest, IntegersOutsideTheirRangeAreDataLoss) {
  RunRecord r;
  r.id = "01M91BXF5ZDMMPVM7FSR33V0XB";
  r.table = "t";
  r.request = RunRequest{}.ToJson();
  r.created_micros = 1796416126145126;
  const std::string good = r.ToJson();
  ASSERT_TRUE(RunRecord::FromJson(good).ok());
  const std::string created = "\"createdMicros\":1796416126145126";
  ASSERT_NE(good.find(created), std::string::npos);
  for (const char* bad : {"\"createdMicros\":1796416126145126145879", "\"createdMicros\":1.5",
                          "\"createdMicros\":\"1\""}) {
    std::string text = good;
    text.replace(text.find(created), created.size(), bad);
    Status st = RunRecord::FromJson(text).status();
    EXPECT_TRUE(st.IsDataLoss()) << bad << ": " << st;
  }
  std::string negative = good;
  const std::string bytes = "\"bytesRead\":0";
  ASSERT_NE(negative.find(bytes), std::string::npos);
  negative.replace(negative.find(bytes), bytes.size(), "\"bytesRead\":-1");
  EXPECT_TRUE(RunRecord::FromJson(negative).status().IsDataLoss());
}

}  // namespace
}  // namespace loam::ingest
