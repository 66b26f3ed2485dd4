#include "ingest/csv_batches.h"

#include <gtest/gtest.h>

namespace loam::ingest {
namespace {

Schema CsvEvents() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String()},
                 {"at", DataType::Timestamp()}}};
}

TEST(CsvBatches, MapsColumnsByNameInBatches) {
  const std::string src_text = "at,id\n2026-11-30T00:00:00Z,1\n,2\n1970-01-01T00:00:00Z,3\n";
  StringSource src(src_text);
  CsvBatches in = CsvBatches::Open(src, CsvEvents(), "events.csv").value();
  std::optional<RecordBatch> first = in.Next(2).value();
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->num_rows(), 2);
  EXPECT_EQ(first->columns[0].GetInt64(1), 2);
  EXPECT_TRUE(first->columns[1].IsNull(0));  // not in the file: null
  EXPECT_TRUE(first->columns[2].IsNull(1));  // empty: null
  std::optional<RecordBatch> second = in.Next(2).value();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->num_rows(), 1);
  EXPECT_EQ(second->columns[2].GetInt64(0), 0);
  EXPECT_FALSE(in.Next(2).value().has_value());
  EXPECT_EQ(in.rows_read(), 3);
}

void ExpectOpenFails(const std::string& text, const std::string& message) {
  StringSource src(text);
  Status s = CsvBatches::Open(src, CsvEvents(), "events.csv").status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find(message), std::string::npos) << s;
}

TEST(CsvBatches, StrictSchemaPolicy) {
  ExpectOpenFails(
      "id,colour\n",
      "events.csv: line 1, column 2: column 'colour' is not in the table (id, name, at)");
  ExpectOpenFails("name\n", "events.csv: line 1: column 'id' (int64, not null) is missing");
  ExpectOpenFails("", "events.csv: CSV input is empty");
}

TEST(CsvBatches, BadValueNamesFileLineAndColumn) {
  const std::string src_text = "id,name\n1,a\n2,b\nx3,c\n";
  StringSource src(src_text);
  CsvBatches in = CsvBatches::Open(src, CsvEvents(), "events.csv").value();
  Status s = in.Next(100).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("events.csv: line 4, column 1 ('id', int64): expected an integer"),
            std::string::npos)
      << s;
  const std::string quoted_text = "id,name\n1,\"open\n";
  StringSource quoted(quoted_text);
  CsvBatches again = CsvBatches::Open(quoted, CsvEvents(), "q.csv").value();
  EXPECT_NE(again.Next(10).status().message().find("q.csv: CSV line 2, column 2"),
            std::string::npos);
}

// Mapped header names load the table columns they name; an input that
// loads one column twice is refused, naming both of its columns.
// Header errors name the header's line in the file; without a header they
// name the request's columns.
TEST(CsvBatches, HeaderErrorsNameWhereTheNamesCameFrom) {
  CsvOptions o;
  o.dialect.skip_lines = 2;
  StringSource skipped("preamble\nmore\nid,colour\n");
  EXPECT_EQ(CsvBatches::Open(skipped, CsvEvents(), "events.csv", o).status().message(),
            "events.csv: line 3, column 2: column 'colour' is not in the table (id, name, at); "
            "remove it from the file, map it to a column, or add it to the table");
  CsvOptions named;
  named.dialect.header = false;
  named.dialect.columns = {"name"};
  StringSource rows("ann\n");
  EXPECT_EQ(CsvBatches::Open(rows, CsvEvents(), "events.csv", named).status().message(),
            "events.csv: column 'id' (int64, not null) is missing from the named columns; add it "
            "to the named columns");
}

TEST(CsvBatches, MappedColumnsLoadTheirTargets) {
  SchemaPolicy policy;
  policy.renames = {{"Event ID", "id"}, {"Who", "name"}};
  StringSource src("Who,Event ID\nann,7\n");
  CsvBatches in = CsvBatches::Open(src, CsvEvents(), "events.csv", {}, policy).value();
  std::optional<RecordBatch> b = in.Next(10).value();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->columns[0].GetInt64(0), 7);
  EXPECT_EQ(b->columns[1].GetBytes(0), "ann");
  StringSource both("Event ID,id\n1,2\n");
  Status twice = CsvBatches::Open(both, CsvEvents(), "events.csv", {}, policy).status();
  EXPECT_EQ(twice.message(),
            "events.csv: line 1, column 2: column 'id' loads column 'id', as column 1 ('Event "
            "ID') does; remove one or map it elsewhere");
}

}  // namespace
}  // namespace loam::ingest
