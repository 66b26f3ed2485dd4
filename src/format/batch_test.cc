#include "loam/batch.h"

#include <gtest/gtest.h>

#include "common/coding.h"
#include "format/page.h"

namespace loam {
namespace {

Schema TwoColumns() {
  return Schema{{{"id", DataType::Int64(), false}, {"name", DataType::String(), true}}};
}

TEST(DataTypeTest, ParseAndPrintRoundTrip) {
  for (const char* t : {"bool", "int32", "int64", "float64", "string", "binary", "date",
                        "timestamp", "json", "decimal(38,10)", "decimal(1,0)"}) {
    auto parsed = DataType::Parse(t);
    ASSERT_TRUE(parsed.ok()) << t;
    EXPECT_EQ(parsed->ToString(), t);
  }
  for (const char* bad : {"int", "decimal(39,0)", "decimal(5,6)", "decimal(0,0)", "decimal(5)",
                          "decimal(5,x)", "Int64"}) {
    Status s = DataType::Parse(bad).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_NE(s.message().find(bad), std::string::npos) << s;
  }
}

TEST(SchemaTest, ValidateRejectsDuplicatesAndEmptyNames) {
  EXPECT_TRUE(TwoColumns().Validate().ok());
  Schema dup{{{"a", DataType::Int64()}, {"a", DataType::String()}}};
  EXPECT_NE(dup.Validate().message().find("two columns named 'a'"), std::string::npos);
  Schema empty{{{"", DataType::Int64()}}};
  EXPECT_TRUE(empty.Validate().IsInvalidArgument());
  Schema bad_dec{{{"d", DataType::Decimal(40, 1)}}};
  EXPECT_EQ(bad_dec.Validate().context(), "column 'd'");
}

TEST(RecordBatchTest, AppendRowsSliceProjectConcat) {
  RecordBatch b(TwoColumns());
  ASSERT_TRUE(b.AppendRow({int64_t{1}, std::string("a")}).ok());
  ASSERT_TRUE(b.AppendRow({int64_t{2}, std::monostate{}}).ok());
  ASSERT_TRUE(b.AppendRow({int64_t{3}, std::string("ccc")}).ok());
  ASSERT_TRUE(b.Validate().ok());
  EXPECT_EQ(b.num_rows(), 3);
  EXPECT_EQ(b.columns[1].null_count(), 1);
  EXPECT_TRUE(b.columns[1].IsNull(1));
  EXPECT_EQ(b.columns[1].GetBytes(2), "ccc");

  RecordBatch s = b.Slice(1, 2);
  EXPECT_EQ(s.num_rows(), 2);
  EXPECT_EQ(s.columns[0].GetInt64(0), 2);
  EXPECT_TRUE(s.columns[1].IsNull(0));
  EXPECT_EQ(s.columns[1].GetBytes(1), "ccc");

  auto p = b.Project({"name"});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->schema.fields.size(), 1u);
  EXPECT_TRUE(b.Project({"nope"}).status().IsInvalidArgument());

  auto c = ConcatenateBatches(b.schema, {b.Slice(0, 1), b.Slice(1, 2)});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, b);
}

TEST(RecordBatchTest, TypeMismatchesAndNullsInNotNullColumnsAreErrors) {
  RecordBatch b(TwoColumns());
  Status s = b.AppendRow({std::string("x"), std::string("y")});
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.context(), "column 'id'");
  RecordBatch n(TwoColumns());
  ASSERT_TRUE(n.AppendRow({std::monostate{}, std::string("y")}).ok());
  EXPECT_NE(n.Validate().message().find("not nullable"), std::string::npos);
  Column i32(DataType::Int32());
  EXPECT_TRUE(i32.AppendValue(int64_t{1} << 40).IsInvalidArgument());
}

TEST(ColumnTest, EqualityIsLogical) {
  Column a(DataType::Int64()), b(DataType::Int64());
  a.AppendInt64(1);
  a.AppendNull();
  b.AppendInt64(1);
  b.AppendNull();
  EXPECT_EQ(a, b);
  b = Column(DataType::Int64());
  b.AppendInt64(1);
  b.AppendInt64(0);
  EXPECT_FALSE(a == b);  // null vs zero differ
}

}  // namespace
}  // namespace loam

namespace loam {
namespace {

TEST(ColumnTest, TruncateDropsTrailingRowsAndTheirNulls) {
  Column s(DataType::String());
  s.AppendBytes("a");
  s.AppendNull();
  s.AppendBytes("bcd");
  s.Truncate(2);
  EXPECT_EQ(s.length(), 2);
  EXPECT_EQ(s.null_count(), 1);
  EXPECT_EQ(s.data().size(), 1u);
  s.AppendBytes("x");
  EXPECT_EQ(s.GetBytes(2), "x");
  s.Truncate(1);
  EXPECT_EQ(s.null_count(), 0);
  Column i(DataType::Int64());
  i.AppendInt64(7);
  i.AppendInt64(8);
  i.Truncate(1);
  EXPECT_EQ(i.length(), 1);
  EXPECT_EQ(i.GetInt64(0), 7);
  EXPECT_EQ(i.data().size(), 8u);
}

// Row keys are stored (merge plans name inserted keys), so their bytes are
// pinned: per column 0 for null, else 1 and the length-prefixed stat value.
TEST(RowKeyTest, IsEachColumnsStatValueLengthPrefixed) {
  Schema schema{{{"b", DataType::Bool(), true},
                 {"i", DataType::Int32(), true},
                 {"l", DataType::Int64(), true},
                 {"f", DataType::Float64(), true},
                 {"d", DataType::Decimal(20, 2), true},
                 {"s", DataType::String(), true},
                 {"day", DataType::Date(), true},
                 {"ts", DataType::Timestamp(), true}}};
  RecordBatch b(schema);
  ASSERT_TRUE(b.AppendRow({true, int64_t{-7}, int64_t{1} << 40, 2.5, Int128::FromInt64(-12345),
                           std::string("k\0ey", 4), int64_t{19000}, int64_t{-1}})
                  .ok());
  ASSERT_TRUE(b.AppendRow({std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{},
                           std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{}})
                  .ok());
  std::vector<const Column*> cols;
  for (const Column& c : b.columns) cols.push_back(&c);
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    std::string expected;
    for (size_t c = 0; c < cols.size(); ++c) {
      if (cols[c]->IsNull(r)) {
        PutFixed8(&expected, 0);
        continue;
      }
      PutFixed8(&expected, 1);
      PutLengthPrefixed(&expected, EncodeStatValue(schema.fields[c].type, cols[c]->GetValue(r)));
    }
    EXPECT_EQ(EncodeRowKey(cols, r), expected) << "row " << r;
  }
}

}  // namespace
}  // namespace loam
