#include "ingest/row_source.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>

namespace loam::ingest {
namespace {

Schema RowSourceEvents() {
  return Schema{{{"id", DataType::Int64(), false}, {"name", DataType::String()}}};
}

// `rows` CSV records, one per line; the row with id `bad` (if any) is not an int64.
std::string Csv(int rows, int bad = -1) {
  std::string text = "id,name\n";
  for (int i = 0; i < rows; ++i) {
    text += (i == bad ? std::string("x") : std::to_string(i)) + ",name " + std::to_string(i) + "\n";
  }
  return text;
}

std::unique_ptr<RowSource> Open(const std::string& text, bool prefetch, size_t batch) {
  auto source = OpenRowSource(std::make_unique<StringSource>(text), InputFormat::kCsv,
                              RowSourceEvents(), SchemaPolicy{}, "events.csv")
                    .value();
  return prefetch ? Prefetch(std::move(source), batch) : std::move(source);
}

TEST(Prefetch, YieldsWhatTheSourceYieldsWithPositions) {
  const std::string text = Csv(5000);  // past the first batch's 1024-row sample
  auto plain = Open(text, false, 1500), ahead = Open(text, true, 1500);
  int batches = 0;
  while (true) {
    auto want = plain->Next(1500).value();
    auto got = ahead->Next(1500).value();
    ASSERT_EQ(want.has_value(), got.has_value());
    if (!want) break;
    ++batches;
    EXPECT_EQ(*got, *want);
    EXPECT_EQ(ahead->row_lines(), plain->row_lines());
    EXPECT_EQ(ahead->rows_read(), plain->rows_read());
    EXPECT_EQ(ahead->bytes_read(), plain->bytes_read());
  }
  EXPECT_EQ(batches, 4);
  EXPECT_EQ(ahead->rows_read(), 5000);
  EXPECT_FALSE(ahead->Next(1500).value().has_value());  // the end, again
  EXPECT_TRUE(ahead->Next(7).status().IsInvalidArgument());
}

TEST(Prefetch, ErrorsArriveInOrderAndRepeat) {
  auto ahead = Open(Csv(3000, /*bad=*/2500), true, 1000);
  EXPECT_EQ(ahead->Next(1000).value()->num_rows(), 1000);
  EXPECT_EQ(ahead->Next(1000).value()->num_rows(), 1000);
  Status s = ahead->Next(1000).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
  EXPECT_NE(s.message().find("line 2502"), std::string::npos) << s;
  EXPECT_EQ(ahead->Next(1000).status().message(), s.message());
}

TEST(RowSource, RefusesADelimiterThatCsvReserves) {
  for (char d : {'"', '\n', '\r'}) {
    ParseLimits limits;
    limits.csv_delimiter = d;
    Status s = OpenRowSource(std::make_unique<StringSource>(Csv(2)), InputFormat::kCsv,
                             RowSourceEvents(), SchemaPolicy{}, "events.csv", limits)
                   .status();
    EXPECT_TRUE(s.IsInvalidArgument()) << s;
    EXPECT_NE(s.message().find("cannot be a quote, CR or LF"), std::string::npos) << s;
  }
}

// Counts the bytes read from a string, in small reads.
class CountingSource final : public ByteSource {
 public:
  CountingSource(std::string text, std::shared_ptr<std::atomic<size_t>> read)
      : text_(std::move(text)), read_(std::move(read)) {}
  Result<size_t> Read(char* dst, size_t n) override {
    const size_t k = std::min({n, size_t{4096}, text_.size() - at_});
    text_.copy(dst, k, at_);
    at_ += k;
    *read_ += k;
    return k;
  }

 private:
  std::string text_;
  size_t at_ = 0;
  std::shared_ptr<std::atomic<size_t>> read_;
};

TEST(Prefetch, StopsParsingWhenDroppedEarly) {
  const std::string text = Csv(200000);
  auto read = std::make_shared<std::atomic<size_t>>(0);
  auto source = OpenRowSource(std::make_unique<CountingSource>(text, read), InputFormat::kCsv,
                              RowSourceEvents(), SchemaPolicy{}, "events.csv")
                    .value();
  auto ahead = Prefetch(std::move(source), 100, /*depth=*/2);
  EXPECT_EQ(ahead->Next(100).value()->num_rows(), 100);
  ahead.reset();  // stops and joins the parsing thread
  // At most the taken batch, `depth` more and the one in progress were parsed.
  EXPECT_LT(read->load(), text.size() / 10);
}

}  // namespace
}  // namespace loam::ingest
