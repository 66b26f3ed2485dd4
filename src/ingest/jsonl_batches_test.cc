#include "ingest/jsonl_batches.h"

#include <gtest/gtest.h>

#include "common/status_macros.h"

namespace loam::ingest {
namespace {

Schema JsonlEvents() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String()},
                 {"doc", DataType::Json()},
                 {"at", DataType::Timestamp()}}};
}

Result<std::vector<RecordBatch>> ReadAll(const std::string& text, ParseLimits limits = {},
                                         SchemaPolicy policy = {}) {
  StringSource src(text);
  JsonlBatches in(src, JsonlEvents(), policy, "e.jsonl", limits);
  std::vector<RecordBatch> out;
  while (true) {
    ASSIGN_OR_RETURN(auto b, in.Next(2));
    if (!b) return out;
    out.push_back(std::move(*b));
  }
}

void ExpectFails(const std::string& text, std::string_view message, ParseLimits limits = {}) {
  Status s = ReadAll(text, limits).status();
  EXPECT_FALSE(s.ok()) << text;
  EXPECT_NE(s.message().find(message), std::string::npos) << s;
}

TEST(JsonlBatches, MapsKeysToColumns) {
  auto batches = ReadAll(
                     "{\"id\":1,\"name\":\"a\\u00e9\",\"doc\":{\"x\":[1,2]}}\r\n"
                     "\n"
                     "{\"at\":\"2026-11-30T00:00:00Z\",\"id\":2,\"doc\":null}\n"
                     "{\"id\":3,\"doc\":\"text\",\"name\":null}")
                     .value();
  ASSERT_EQ(batches.size(), 2u);
  const RecordBatch& b = batches[0];
  EXPECT_EQ(b.columns[0].GetInt64(1), 2);
  EXPECT_EQ(b.columns[1].GetBytes(0), "a\xc3\xa9");
  EXPECT_EQ(b.columns[2].GetBytes(0), "{\"x\":[1,2]}");
  EXPECT_TRUE(b.columns[2].IsNull(1));
  EXPECT_TRUE(b.columns[1].IsNull(1));  // missing key: null
  EXPECT_EQ(b.columns[3].GetInt64(1), 1'795'996'800'000'000);
  EXPECT_EQ(batches[1].columns[2].GetBytes(0), "\"text\"");
}

TEST(JsonlBatches, ALeadingByteOrderMarkIsDroppedAsInCsv) {
  auto batches = ReadAll("\xEF\xBB\xBF{\"id\":7}\n").value();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].columns[0].GetInt64(0), 7);
  ExpectFails("{\"id\":1}\n\xEF\xBB\xBF{\"id\":2}\n", "line 2");
}

TEST(JsonlBatches, ErrorsNameLineAndField) {
  ExpectFails("{\"id\":1}\n{\"id\":2,\"colour\":1}\n",
              "e.jsonl: line 2, field 'colour': not a column");
  ExpectFails("{\"name\":\"a\"}\n", "line 1, field 'id': missing, and the column is not nullable");
  ExpectFails("{\"id\":1,\"id\":2}\n", "field 'id': loads column 'id', which another key");
  ExpectFails("{\"id\":\"1\"}\n",
              "field 'id' (int64): expected a JSON integer, got a JSON string; for numbers inside "
              "strings declare the stringToInt coercion");
  ExpectFails("{\"id\":1.5}\n", "expected an integer");
  ExpectFails("{\"id\":99999999999999999999}\n", "out of range");
  ExpectFails("[1,2]\n", "line 1: expected a JSON object per line");
  ExpectFails("{\"id\":1,}\n", "malformed JSON");
  ExpectFails("{\"id\":1}{\"id\":2}\n", "content follows the JSON value");
  ExpectFails("{\"id\":1,\"name\":\"\xff\"}\n", "not valid UTF-8");
  ExpectFails("{\"id\":1,\"name\":{\"a\":1}}\n",
              "expected a string value, got a JSON object or array");
  ExpectFails("{\"id\":1,\"at\":\"2026-11-30T01:00:00+01:00\"}\n",
              "declare the iso8601ToTimestamp coercion");
}

TEST(JsonlBatches, Limits) {
  ParseLimits depth;
  depth.max_json_depth = 3;
  EXPECT_TRUE(ReadAll("{\"id\":1,\"doc\":[[[1]]]}\n", depth).ok());
  ExpectFails("{\"id\":1,\"doc\":[[[[1]]]]}\n", "field 'doc': nested deeper than 3 levels", depth);
  ParseLimits field;
  field.max_field_bytes = 8;
  ExpectFails("{\"id\":1,\"name\":\"123456789\"}\n",
              "field 'name': the value is longer than 8 bytes", field);
  ExpectFails("{\"id\":1,\"name\":\"" + std::string(200, 'x') + "\"}\n",
              "the line is longer than 128 bytes", field);
  ParseLimits columns;
  columns.max_columns = 2;
  ExpectFails("{\"id\":1,\"name\":\"a\",\"at\":null}\n", "more than 2 keys in one object", columns);
}

TEST(JsonlBatches, Coercions) {
  SchemaPolicy p;
  ASSERT_TRUE(p.AddFlag("at:epochMillisToTimestamp").ok());
  auto b = ReadAll("{\"id\":1,\"at\":1500}\n", {}, p).value();
  EXPECT_EQ(b[0].columns[3].GetInt64(0), 1'500'000);
}

TEST(JsonlBatches, MappedKeysLoadTheirTargets) {
  SchemaPolicy policy;
  policy.renames = {{"Event ID", "id"}};
  auto batches = ReadAll("{\"Event ID\":7,\"name\":\"ann\"}\n", {}, policy);
  ASSERT_TRUE(batches.ok()) << batches.status();
  EXPECT_EQ(batches->at(0).columns[0].GetInt64(0), 7);
  Status twice = ReadAll("{\"Event ID\":7,\"id\":8}\n", {}, policy).status();
  EXPECT_NE(twice.message().find(
                "field 'id': loads column 'id', which another key of this object loaded already"),
            std::string::npos)
      << twice;
}

}  // namespace
}  // namespace loam::ingest
