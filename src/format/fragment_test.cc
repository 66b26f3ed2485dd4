#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "common/coding.h"
#include "common/hash.h"
#include "format/compression.h"
#include "format/fragment_reader.h"
#include "format/fragment_writer.h"
#include "io/counting_object_store.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"

namespace loam {
namespace {

Schema AllTypes() {
  return Schema{{{"b", DataType::Bool()},
                 {"i32", DataType::Int32()},
                 {"i64", DataType::Int64(), false},
                 {"f", DataType::Float64()},
                 {"s", DataType::String()},
                 {"bin", DataType::Binary()},
                 {"d", DataType::Date()},
                 {"ts", DataType::Timestamp()},
                 {"dec", DataType::Decimal(38, 4)},
                 {"j", DataType::Json()}}};
}

Int128 MaxDecimal38() {  // 10^38 - 1
  __extension__ typedef unsigned __int128 U128;
  U128 v = 1;
  for (int i = 0; i < 38; ++i) v *= 10;
  v -= 1;
  return Int128{static_cast<uint64_t>(v), static_cast<int64_t>(v >> 64)};
}

// Rows covering nulls and edge values of every type.
RecordBatch EdgeRows() {
  RecordBatch b(AllTypes());
  const Int128 max_dec = MaxDecimal38();
  const Int128 min_dec{~max_dec.lo + 1, ~max_dec.hi + (max_dec.lo == 0 ? 1 : 0)};
  auto row = [&](std::vector<Value> v) { b.AppendRow(v).CheckOK(); };
  row({true, int64_t{INT32_MIN}, int64_t{INT64_MIN}, -0.0, std::string(""), std::string(""),
       int64_t{INT32_MIN}, int64_t{INT64_MIN}, min_dec, std::string("null")});
  row({false, int64_t{INT32_MAX}, int64_t{INT64_MAX}, std::numeric_limits<double>::infinity(),
       std::string("héllo 世界 🙂"), std::string("\0\1\2\xff", 4), int64_t{INT32_MAX},
       int64_t{INT64_MAX}, max_dec, std::string(R"({"a":[1,2,{"b":null}]})")});
  row({std::monostate{}, std::monostate{}, int64_t{0}, std::nan(""), std::monostate{},
       std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{}});
  row({true, int64_t{0}, int64_t{-1}, std::numeric_limits<double>::denorm_min(),
       std::string(4 << 20, 'x'), std::string(100, '\0'), int64_t{0}, int64_t{0},
       Int128::FromInt64(-12345), std::string("[]")});
  for (int i = 0; i < 1000; ++i) {
    row({i % 3 == 0, int64_t{i}, int64_t{i * 1000003LL}, i * 0.5,
         i % 7 == 0 ? Value(std::monostate{}) : Value("row-" + std::to_string(i)),
         std::string(static_cast<size_t>(i % 5), static_cast<char>(i)), int64_t{19000 + i},
         int64_t{1700000000000000LL + i}, Int128::FromInt64(i * 10001LL),
         std::string("{\"i\":" + std::to_string(i) + "}")});
  }
  return b;
}

class FragmentTest : public ::testing::Test {
 protected:
  Result<FragmentFileInfo> Write(const std::string& key, const std::vector<RecordBatch>& batches,
                                 FragmentWriteOptions options = {}) {
    VectorBatchStream stream(&batches);
    return WriteFragmentFile(*store_, key, batches.empty() ? AllTypes() : batches[0].schema, stream,
                             options);
  }
  std::shared_ptr<MemoryObjectStore> store_ = std::make_shared<MemoryObjectStore>();
};

TEST_F(FragmentTest, EveryTypeRoundTripsWithEveryCodec) {
  const RecordBatch rows = EdgeRows();
  for (Codec codec : {Codec::kZstd, Codec::kLz4, Codec::kNone}) {
    SCOPED_TRACE(std::string(CodecName(codec)));
    FragmentWriteOptions opts;
    opts.codec = codec;
    opts.target_page_bytes = 16 << 10;  // many row groups
    const std::string key = "frag-" + std::string(CodecName(codec));
    auto info = Write(key, {rows}, opts);
    ASSERT_TRUE(info.ok()) << info.status();
    EXPECT_EQ(info->num_rows, static_cast<uint64_t>(rows.num_rows()));
    auto reader = FragmentReader::Open(store_.get(), key, info->size);
    ASSERT_TRUE(reader.ok()) << reader.status();
    EXPECT_EQ((*reader)->schema(), rows.schema);
    EXPECT_GT((*reader)->footer().groups.size(), 3u);
    auto back = (*reader)->ReadAll();
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, rows);
    // NaN and -0.0 keep their bits.
    EXPECT_TRUE(std::isnan(back->columns[3].GetFloat64(2)));
    EXPECT_TRUE(std::signbit(back->columns[3].GetFloat64(0)));
    EXPECT_TRUE((*reader)->Verify().ok());
  }
}

TEST_F(FragmentTest, EmptyFragmentAndMetadata) {
  FragmentWriteOptions opts;
  opts.metadata = {{"writer", "test"}, {"k", ""}};
  auto info = Write("empty", {RecordBatch(AllTypes())}, opts);
  ASSERT_TRUE(info.ok()) << info.status();
  auto reader = FragmentReader::Open(store_.get(), "empty").value();
  EXPECT_EQ(reader->num_rows(), 0u);
  EXPECT_EQ(reader->footer().metadata, opts.metadata);
  EXPECT_EQ(reader->ReadAll().value().num_rows(), 0);
}

TEST_F(FragmentTest, ManyInputBatchesStreamIntoGroups) {
  std::vector<RecordBatch> batches;
  const RecordBatch rows = EdgeRows();
  for (int i = 0; i < 20; ++i) batches.push_back(rows.Slice(4 + i * 50, 50));
  FragmentWriteOptions opts;
  opts.target_page_bytes = 2000;
  ASSERT_TRUE(Write("many", batches, opts).ok());
  auto reader = FragmentReader::Open(store_.get(), "many").value();
  EXPECT_EQ(reader->ReadAll().value(), ConcatenateBatches(rows.schema, batches).value());
}

// Columns read apart from each other come in separate runs of bytes; with
// pages of a few bytes each, a run is a short string whose bytes live inside
// it, and the page views must survive the runs' vector growing (the sanitizer
// build caught a view left pointing at a moved short string).
TEST_F(FragmentTest, ColumnsReadApartFromTinyPagesDecodeFromTheirOwnBytes) {
  Schema schema;
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g"}) {
    schema.fields.push_back({name, DataType::Bool(), false});
  }
  RecordBatch rows(schema);
  ASSERT_TRUE(rows.AppendRow({true, false, true, false, false, true, true}).ok());
  FragmentWriteOptions opts;
  opts.codec = Codec::kNone;
  ASSERT_TRUE(Write("tiny", {rows}, opts).ok());
  auto reader = FragmentReader::Open(store_.get(), "tiny").value();
  for (const auto& page : reader->footer().groups[0].pages) ASSERT_LT(page.stored_size, 16u);
  Result<RecordBatch> apart = reader->ReadAll({"a", "c", "e", "g"});
  ASSERT_TRUE(apart.ok()) << apart.status();
  EXPECT_EQ(*apart, rows.Project({"a", "c", "e", "g"}).value());
}

TEST_F(FragmentTest, OpenWithKnownSizeCostsOneRequestAndProjectionReadsLess) {
  auto counting = std::make_shared<CountingObjectStore>(store_);
  // A small file is read whole by the open: its pages cost nothing more.
  const RecordBatch rows = EdgeRows().Slice(4, 1000);
  ASSERT_TRUE(Write("small", {rows}).ok());
  const uint64_t small_size = store_->Head("small").value().size;
  ASSERT_LE(small_size, FragmentReader::kSpeculativeTailBytes);
  auto small = FragmentReader::Open(counting.get(), "small", small_size).value();
  EXPECT_EQ(counting->Snapshot().total.total_requests(), 1u);
  EXPECT_EQ(counting->Snapshot().total.bytes_read, small_size);
  counting->Reset();
  auto all = small->ReadAll().value();
  EXPECT_EQ(counting->Snapshot().total.total_requests(), 0u);
  EXPECT_EQ(all.columns[2], rows.columns[2]);
  // A larger one: the open reads only the tail, a projection only its pages.
  Schema schema{{{"i64", DataType::Int64(), false}, {"s", DataType::String()}}};
  RecordBatch big(schema);
  for (int64_t i = 0; i < 60000; ++i) {
    big.AppendRow({i * 7919 % 100003, "row " + std::to_string(i * 31 % 1000003)}).CheckOK();
  }
  ASSERT_TRUE(Write("proj", {big}).ok());
  const uint64_t size = store_->Head("proj").value().size;
  ASSERT_GT(size, FragmentReader::kSpeculativeTailBytes);
  counting->Reset();
  auto reader = FragmentReader::Open(counting.get(), "proj", size).value();
  EXPECT_EQ(counting->Snapshot().total.total_requests(), 1u);
  counting->Reset();
  auto one = reader->ReadAll({"i64"}).value();
  const uint64_t one_bytes = counting->Snapshot().total.bytes_read;
  EXPECT_EQ(one.columns.size(), 1u);
  EXPECT_EQ(one.columns[0], big.columns[0]);
  counting->Reset();
  ASSERT_TRUE(reader->ReadAll().ok());
  EXPECT_LT(one_bytes * 2, counting->Snapshot().total.bytes_read);
  // Unknown size: a HEAD first.
  counting->Reset();
  ASSERT_TRUE(FragmentReader::Open(counting.get(), "proj").ok());
  EXPECT_EQ(counting->Snapshot().total.count(ObjectOp::kHead), 1u);
}

// Integer-like columns are filtered in place, not value by value: the rows
// kept are exactly those ValueMatches keeps, nulls and extremes included.
TEST_F(FragmentTest, IntegerFiltersKeepExactlyTheRowsValueMatchesKeeps) {
  Schema schema{{{"i32", DataType::Int32()},
                 {"i64", DataType::Int64()},
                 {"d", DataType::Date()},
                 {"ts", DataType::Timestamp()}}};
  RecordBatch b(schema);
  std::mt19937_64 rng(7);
  for (int64_t i = 0; i < 3000; ++i) {
    std::vector<Value> row;
    for (int c = 0; c < 4; ++c) {
      const int64_t v = static_cast<int64_t>(rng() % 41) - 20;
      row.push_back(i % 13 == c ? Value(std::monostate{})
                    : i == 5    ? Value(int64_t{c % 2 ? INT64_MIN : INT32_MIN})
                                : Value(v));
    }
    b.AppendRow(row).CheckOK();
  }
  ASSERT_TRUE(Write("ints", {b}).ok());
  auto reader = FragmentReader::Open(store_.get(), "ints").value();
  const RecordBatch all = reader->ReadAll().value();
  for (const Field& f : schema.fields) {
    for (CompareOp op :
         {CompareOp::kEq, CompareOp::kLt, CompareOp::kLe, CompareOp::kGt, CompareOp::kGe}) {
      for (int64_t x : {int64_t{-21}, int64_t{-3}, int64_t{0}, int64_t{7}, int64_t{20}}) {
        const Predicate p{f.name, op, {Value(x)}};
        FragmentScanOptions o;
        o.predicates = {p};
        o.with_row_offsets = true;
        std::vector<int64_t> got;
        for (const RecordBatch& part : reader->Scan(o).value()) {
          for (int64_t r = 0; r < part.num_rows(); ++r)
            got.push_back(part.columns.back().GetInt64(r));
        }
        std::vector<int64_t> want;
        const Column& col = all.columns[schema.IndexOf(f.name)];
        for (int64_t r = 0; r < all.num_rows(); ++r) {
          if (ValueMatches(p, col.GetValue(r))) want.push_back(r);
        }
        EXPECT_EQ(got, want) << f.name << " op " << static_cast<int>(op) << " " << x;
      }
    }
  }
}

TEST_F(FragmentTest, PredicatesPruneRowGroupsAndFilterRowsExactly) {
  Schema schema{{{"k", DataType::Int64(), false}, {"v", DataType::String()}}};
  RecordBatch b(schema);
  for (int64_t i = 0; i < 20000; ++i) {
    b.AppendRow({i, i % 100 == 0 ? Value(std::monostate{}) : Value("v" + std::to_string(i))})
        .CheckOK();
  }
  FragmentWriteOptions opts;
  opts.target_page_bytes = 16 << 10;  // 2048 int64 per page
  ASSERT_TRUE(Write("sorted", {b}, opts).ok());
  auto reader = FragmentReader::Open(store_.get(), "sorted").value();
  const int groups = static_cast<int>(reader->footer().groups.size());
  ASSERT_GE(groups, 8);

  struct Case {
    Predicate p;
    int64_t expected_rows;
    int max_groups_read;
  };
  const std::vector<Case> cases = {
      {Predicate::Eq("k", int64_t{12345}), 1, 1},
      {Predicate::In("k", {int64_t{5}, int64_t{19999}, int64_t{50000}}), 2, 2},
      {Predicate::Lt("k", int64_t{100}), 100, 1},
      {Predicate::Ge("k", int64_t{19990}), 10, 1},
      {Predicate::Gt("k", int64_t{30000}), 0, 0},
      {Predicate::IsNull("v"), 200, groups},
      {Predicate::Eq("v", std::string("v7")), 1, groups},
  };
  for (const Case& c : cases) {
    FragmentScanOptions opts2;
    opts2.predicates = {c.p};
    opts2.with_row_offsets = true;
    FragmentScanStats stats;
    auto got = reader->Scan(opts2, &stats);
    ASSERT_TRUE(got.ok()) << got.status();
    int64_t n = 0;
    for (const RecordBatch& batch : *got) {
      n += batch.num_rows();
      for (int64_t r = 0; r < batch.num_rows(); ++r) {
        // Every returned row matches, and its offset points at the same row.
        const int64_t off = batch.columns[2].GetInt64(r);
        EXPECT_EQ(batch.columns[0].GetInt64(r), off);
        EXPECT_TRUE(ValueMatches(c.p, batch.columns[c.p.column == "k" ? 0 : 1].GetValue(r)));
      }
    }
    EXPECT_EQ(n, c.expected_rows);
    EXPECT_LE(stats.groups_total - stats.groups_pruned, c.max_groups_read);
  }
  FragmentScanOptions bad;
  bad.predicates = {Predicate::Eq("k", std::string("x"))};
  EXPECT_TRUE(reader->Scan(bad).status().IsInvalidArgument());
}

// Flips one byte at every offset of a file: every read must fail with
// DataLoss; no flip may ever yield data.
TEST_F(FragmentTest, EveryCorruptedByteIsDataLoss) {
  Schema schema{
      {{"i", DataType::Int64()}, {"s", DataType::String()}, {"d", DataType::Decimal(9, 2)}}};
  RecordBatch b(schema);
  for (int64_t i = 0; i < 60; ++i) {
    b.AppendRow({i % 9 == 0 ? Value(std::monostate{}) : Value(i), "s" + std::to_string(i),
                 Int128::FromInt64(i * 7)})
        .CheckOK();
  }
  FragmentWriteOptions opts;
  opts.target_page_bytes = 200;
  for (Codec codec : {Codec::kNone, Codec::kZstd}) {
    opts.codec = codec;
    ASSERT_TRUE(Write("good", {b}, opts).ok());
    const std::string good = store_->Get("good").value();
    // Every byte (sanitized runs: every LOAM_CORRUPT_STRIDE-th byte).
    const char* stride_env = std::getenv("LOAM_CORRUPT_STRIDE");
    const size_t stride = stride_env ? std::max(1, std::atoi(stride_env)) : 1;
    int checked = 0;
    for (size_t i = 0; i < good.size(); i += stride) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 0x20);
      ASSERT_TRUE(store_->Put("bad", bad).ok());
      auto reader = FragmentReader::Open(store_.get(), "bad");
      Status s = reader.ok() ? (*reader)->ReadAll().status() : reader.status();
      ASSERT_TRUE(s.IsDataLoss()) << "flip at " << i << " of " << good.size() << ": " << s;
      ++checked;
    }
    EXPECT_EQ(checked, static_cast<int>((good.size() + stride - 1) / stride));
    ASSERT_TRUE(store_->Delete("good").ok());
  }
  // Truncation is DataLoss too.
  ASSERT_TRUE(Write("good", {b}, opts).ok());
  const std::string good = store_->Get("good").value();
  for (size_t len : {size_t{0}, size_t{10}, good.size() / 2, good.size() - 1}) {
    ASSERT_TRUE(store_->Put("short", good.substr(0, len)).ok());
    auto reader = FragmentReader::Open(store_.get(), "short");
    Status s = reader.ok() ? (*reader)->ReadAll().status() : reader.status();
    EXPECT_TRUE(s.IsDataLoss()) << len << ": " << s;
  }
}

TEST_F(FragmentTest, NewerFormatVersionIsRefusedClearly) {
  Schema schema{{{"i", DataType::Int64()}}};
  RecordBatch b(schema);
  b.AppendRow({int64_t{1}}).CheckOK();
  ASSERT_TRUE(Write("v1", {b}).ok());
  std::string bytes = store_->Get("v1").value();
  // Rewrite the trailer as a (hypothetical) version 2 with a valid checksum.
  const size_t t = bytes.size() - kFragmentTrailerSize;
  const uint64_t footer_offset = DecodeFixed(bytes.data() + t, 8);
  bytes[t + 12] = 2;
  Hasher64 h;
  h.Update(std::string_view(bytes).substr(footer_offset, t - footer_offset));
  h.Update(std::string_view(bytes).substr(t, 16));
  std::string sum;
  PutFixed64(&sum, h.Digest());
  bytes.replace(t + 16, 8, sum);
  ASSERT_TRUE(store_->Put("v2", bytes).ok());
  Status s = FragmentReader::Open(store_.get(), "v2").status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s;
  EXPECT_NE(s.message().find("upgrade"), std::string::npos) << s;
}

TEST_F(FragmentTest, BadValuesAreRejectedAndNothingIsWritten) {
  struct Case {
    Field field;
    Value value;
    std::string error;
  };
  const std::vector<Case> cases = {
      {{"s", DataType::String()}, std::string("ok\xff"), "invalid UTF-8"},
      {{"j", DataType::Json()}, std::string("{not json"), "not valid JSON"},
      {{"d", DataType::Decimal(3, 1)}, Int128::FromInt64(1000), "does not fit decimal(3,1)"},
      {{"d", DataType::Decimal(3, 1)}, Int128::FromInt64(-1000), "does not fit decimal(3,1)"},
      {{"n", DataType::Int64(), false}, std::monostate{}, "not nullable"},
  };
  for (const Case& c : cases) {
    Schema schema{{c.field}};
    RecordBatch b(schema);
    b.AppendRow({c.value}).CheckOK();
    Status s = Write("bad-" + c.field.name, {b}).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << s;
    EXPECT_NE(s.ToString().find(c.error), std::string::npos) << s;
    EXPECT_TRUE(store_->Head("bad-" + c.field.name).status().IsNotFound());
  }
  // A decimal at the edge of its precision is fine.
  Schema schema{{{"d", DataType::Decimal(3, 1)}}};
  RecordBatch ok(schema);
  ok.AppendRow({Int128::FromInt64(999)}).CheckOK();
  ok.AppendRow({Int128::FromInt64(-999)}).CheckOK();
  EXPECT_TRUE(Write("edge", {ok}).ok());
  // Schema mismatch between stream and file.
  RecordBatch other(Schema{{{"x", DataType::Int32()}}});
  std::vector<RecordBatch> batches = {other};
  VectorBatchStream stream(&batches);
  Status s = WriteFragmentFile(*store_, "mismatch", schema, stream).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_TRUE(store_->Head("mismatch").status().IsNotFound());
  // Fragment keys are write-once.
  EXPECT_TRUE(Write("edge", {ok}).status().IsAlreadyExists());
}

// Generates `batches` batches of `rows` rows on demand.
class GeneratedStream final : public BatchStream {
 public:
  GeneratedStream(Schema schema, int batches, int rows)
      : schema_(std::move(schema)), left_(batches), rows_(rows) {}
  Result<std::shared_ptr<const RecordBatch>> Next() override {
    if (left_-- == 0) return std::shared_ptr<const RecordBatch>();
    auto out = std::make_shared<RecordBatch>(schema_);
    RecordBatch& b = *out;
    for (int i = 0; i < rows_; ++i) {
      b.columns[0].AppendInt64(next_++);
      b.columns[1].AppendBytes(std::string(48, static_cast<char>('a' + next_ % 26)) +
                               std::to_string(rng_()));
    }
    return std::shared_ptr<const RecordBatch>(std::move(out));
  }

 private:
  Schema schema_;
  int left_, rows_;
  int64_t next_ = 0;
  std::mt19937_64 rng_{1};
};

// A "Vm...:" field of /proc/self/status, in KiB.
int64_t StatusKib(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size()));
  }
  return -1;
}

TEST(FragmentStreamingTest, LargeFragmentWritesWithBoundedMemory) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("loam-frag-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  auto store = LocalObjectStore::Open(dir.string()).value();
  Schema schema{{{"id", DataType::Int64(), false}, {"payload", DataType::String()}}};
  GeneratedStream stream(schema, /*batches=*/40, /*rows=*/32768);  // about 90 MB of column data
  std::ofstream("/proc/self/clear_refs") << "5";
  const int64_t base = StatusKib("VmRSS:");
  auto info = WriteFragmentFile(*store, "big.lfrag", schema, stream);
  ASSERT_TRUE(info.ok()) << info.status();
  const int64_t growth_mib = (StatusKib("VmHWM:") - base) / 1024;
  EXPECT_EQ(info->num_rows, 40u * 32768u);
  auto reader = FragmentReader::Open(store.get(), "big.lfrag", info->size).value();
  FragmentScanOptions point;
  point.predicates = {Predicate::Eq("id", int64_t{1000000})};
  FragmentScanStats stats;
  auto hit = reader->Scan(point, &stats).value();
  ASSERT_EQ(hit.size(), 1u);
  EXPECT_EQ(hit[0].columns[0].GetInt64(0), 1000000);
  EXPECT_EQ(stats.groups_total - stats.groups_pruned, 1);
  std::printf("[ figures ] %llu-row fragment, %llu bytes, peak RSS growth %lld MiB\n",
              static_cast<unsigned long long>(info->num_rows),
              static_cast<unsigned long long>(info->size), static_cast<long long>(growth_mib));
#ifdef LOAM_SANITIZER_BUILD
  EXPECT_LT(growth_mib, 384);  // plus ASan's 256 MiB quarantine of freed batches
#else
  EXPECT_LT(growth_mib, 32);  // one input batch (~2.5 MB) plus a few row groups, never the file
#endif
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loam
