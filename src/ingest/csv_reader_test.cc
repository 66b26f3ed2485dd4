#include "ingest/csv_reader.h"

#include <gtest/gtest.h>

#include <random>

namespace loam::ingest {
namespace {

// Hands out the input in pieces of `step` bytes, to cross chunk boundaries.
class SteppedSource final : public ByteSource {
 public:
  SteppedSource(std::string data, size_t step) : data_(std::move(data)), step_(step) {}
  Result<size_t> Read(char* dst, size_t n) override {
    const size_t k = std::min({n, step_, data_.size() - pos_});
    std::copy_n(data_.data() + pos_, k, dst);
    pos_ += k;
    return k;
  }

 private:
  std::string data_;
  size_t step_;
  size_t pos_ = 0;
};

struct Parsed {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int64_t> lines;
  std::vector<std::vector<uint8_t>> quoted;
};

Result<Parsed> Parse(const std::string& text, CsvOptions options = {}, size_t step = 1 << 20) {
  SteppedSource src(text, step);
  CsvReader reader(src, options);
  Parsed out;
  auto header = reader.ReadHeader();
  if (!header.ok()) return header.status();
  out.header = *header;
  CsvRecord rec;
  while (true) {
    Result<bool> more = reader.Next(&rec);
    if (!more.ok()) return more.status();
    if (!*more) break;
    out.rows.emplace_back(rec.fields.begin(), rec.fields.end());
    out.lines.push_back(rec.line);
    out.quoted.push_back(rec.quoted);
  }
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

void ExpectErrorIn(const std::string& text, const std::string& where, const std::string& what,
                   CsvOptions options) {
  Result<Parsed> r = Parse(text, options);
  ASSERT_FALSE(r.ok()) << text;
  // Limits are limit_exceeded; everything else is malformed input.
  const bool limit = what.find("limit") != std::string::npos;
  EXPECT_EQ(r.status().error_code(),
            limit ? ErrorCode::kLimitExceeded : ErrorCode::kInvalidArgument)
      << r.status();
  EXPECT_NE(r.status().message().find(where), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find(what), std::string::npos) << r.status();
}

TEST(CsvReader, Rfc4180FeaturesAtEveryChunkBoundary) {
  const std::string text =
      "\xEF\xBB\xBFid,name,note\r\n"
      "1,plain,\"with, comma\"\r\n"
      "2,\"say \"\"hi\"\"\",\"two\nlines\"\n"
      "3,,\"\"\n"
      "4,last,no newline";
  for (size_t step : {1u, 2u, 3u, 7u, 64u, 1u << 20}) {
    for (size_t chunk : {1u, 5u, 65536u}) {
      SCOPED_TRACE("step " + std::to_string(step) + " chunk " + std::to_string(chunk));
      CsvOptions o;
      o.chunk_bytes = chunk;
      Parsed p = Parse(text, o, step).value();
      EXPECT_EQ(p.header, (std::vector<std::string>{"id", "name", "note"}));
      EXPECT_EQ(p.rows, (Rows{{"1", "plain", "with, comma"},
                              {"2", "say \"hi\"", "two\nlines"},
                              {"3", "", ""},
                              {"4", "last", "no newline"}}));
      EXPECT_EQ(p.lines, (std::vector<int64_t>{2, 3, 5, 6}));
    }
  }
}

// Plain records inside a chunk are read without copying; every chunk size
// must give the same fields, quoting, lines and errors as reading the input
// whole.
TEST(CsvReader, EveryChunkSizeReadsTheSame) {
  const std::string text = "a,b,c\r\n1,two,3\r\n,,\n4,\"q\",5\r6,7,8\n\n";
  // A lone CR ends a record; a blank line is one empty field (too few here).
  const Result<Parsed> whole = Parse(text);
  ASSERT_FALSE(whole.ok());
  EXPECT_NE(whole.status().message().find("line 6, column 2"), std::string::npos) << whole.status();
  const std::string good = text.substr(0, text.size() - 1);
  for (size_t chunk = 1; chunk <= good.size() + 1; ++chunk) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    CsvOptions o;
    o.chunk_bytes = chunk;
    SteppedSource src(good, 1 << 20);
    CsvReader reader(src, o);
    ASSERT_TRUE(reader.ReadHeader().ok());
    CsvRecord rec;
    std::vector<std::vector<uint8_t>> quoted;
    Rows rows;
    std::vector<int64_t> lines;
    while (reader.Next(&rec).value()) {
      rows.emplace_back(rec.fields.begin(), rec.fields.end());
      quoted.push_back(rec.quoted);
      lines.push_back(rec.line);
    }
    EXPECT_EQ(rows, (Rows{{"1", "two", "3"}, {"", "", ""}, {"4", "q", "5"}, {"6", "7", "8"}}));
    EXPECT_EQ(quoted,
              (std::vector<std::vector<uint8_t>>{{0, 0, 0}, {0, 0, 0}, {0, 1, 0}, {0, 0, 0}}));
    EXPECT_EQ(lines, (std::vector<int64_t>{2, 3, 4, 5}));
    EXPECT_EQ(reader.bytes_read(), good.size());
    CsvOptions narrow = o;
    narrow.max_columns = 2;
    ExpectErrorIn(text, "line 1, column 3", "limit of 2 columns", narrow);
    CsvOptions small = o;
    small.max_field_bytes = 2;
    ExpectErrorIn(text, "line 2, column 2", "limit of 2 bytes", small);
    small.max_field_bytes = 3;  // "two" is exactly at the limit
    EXPECT_TRUE(Parse(good, small).ok());
    // A record longer than one 16-byte block, over the column limit in its
    // second block.
    narrow.max_columns = 3;
    ExpectErrorIn("alpha,beta,gamma,delta\n", "line 1, column 4", "limit of 3 columns", narrow);
  }
}

TEST(CsvReader, QuotedEmptyIsNotMissing) {
  SteppedSource src("a,b,c\n,\"\",x\n", 4);
  CsvReader reader(src, {});
  ASSERT_TRUE(reader.ReadHeader().ok());
  CsvRecord rec;
  ASSERT_TRUE(reader.Next(&rec).value());
  EXPECT_EQ(rec.fields, (std::vector<std::string_view>{"", "", "x"}));
  EXPECT_EQ(rec.quoted, (std::vector<uint8_t>{0, 1, 0}));
  EXPECT_FALSE(reader.Next(&rec).value());
  EXPECT_EQ(reader.bytes_read(), 12u);
}

TEST(CsvReader, DelimiterIsConfigurable) {
  CsvOptions o;
  o.delimiter = ';';
  Parsed p = Parse("a;b\n1,5;\"x;y\"\n", o).value();
  EXPECT_EQ(p.rows, (Rows{{"1,5", "x;y"}}));
  o.delimiter = '\t';
  EXPECT_EQ(Parse("a\tb\n1\t2\n", o).value().rows, (Rows{{"1", "2"}}));
}

void ExpectError(const std::string& text, const std::string& where, const std::string& what,
                 CsvOptions options = {}) {
  ExpectErrorIn(text, where, what, options);
}

TEST(CsvReader, MalformedInputNamesLineColumnAndFix) {
  ExpectError("", "empty", "header row");
  ExpectError("a,,c\n", "line 1, column 2", "empty column name");
  ExpectError("a,b,a\n", "line 1, column 3", "appears twice");
  ExpectError("a,b\n1,2\n3\n", "line 3, column 2", "1 fields but the header has 2");
  ExpectError("a,b\n1,2,3\n", "line 2, column 3", "3 fields but the header has 2");
  ExpectError("a,b\n1,x\"y\n", "line 2, column 2", "quote inside an unquoted field");
  ExpectError("a,b\n1,\"x\"y\n", "line 2, column 2", "after the closing quote");
  ExpectError("a,b\n1,2\n3,\"open\nstill open\n", "line 3, column 2", "never closed");
  CsvOptions narrow;
  narrow.max_columns = 3;
  ExpectError("a,b,c,d\n", "line 1, column 4", "limit of 3 columns", narrow);
  CsvOptions small;
  small.max_field_bytes = 4;
  ExpectError("a\n12345\n", "line 2, column 1", "limit of 4 bytes", small);
  ExpectError("a\n\"12\n345\"\n", "line 2, column 1", "limit of 4 bytes", small);
  EXPECT_TRUE(Parse("a\n1234\n\"12\"\"4\"\n", small).ok());  // the limit is after unquoting
  // A record over 16 x the field limit, quoted or not (no field over it).
  std::string header, unquoted, quoted;
  for (int c = 0; c < 20; ++c) {
    header += (c ? ",c" : "c") + std::to_string(c);
    unquoted += c ? ",abcd" : "abcd";
    quoted += c ? ",\"abcd\"" : "\"abcd\"";
  }
  CsvOptions wide = small;
  wide.max_columns = 32;
  header += "\n";
  ExpectError(header + unquoted + "\n", "line 2", "record is longer than the limit of 64", wide);
  ExpectError(header + quoted + "\n", "line 2", "record is longer than the limit of 64", wide);
}

// Random fields (quotes, delimiters, newlines, CR) survive a write/read round trip.
TEST(CsvReader, RandomRoundTrip) {
  std::mt19937_64 rng(7);
  const std::string alphabet = "ab,\"\n\r x\xC3\xA9";
  for (int trial = 0; trial < 200; ++trial) {
    const size_t cols = 1 + rng() % 5;
    Rows rows;
    std::string text;
    for (size_t c = 0; c < cols; ++c) text += (c ? "," : "") + std::string("c") + std::to_string(c);
    text += "\n";
    for (size_t r = 0; r < 1 + rng() % 20; ++r) {
      std::vector<std::string> row;
      for (size_t c = 0; c < cols; ++c) {
        std::string f;
        for (size_t i = 0; i < rng() % 6; ++i) f += alphabet[rng() % alphabet.size()];
        if (cols == 1 && f.empty()) f = "x";  // an empty single field is a blank line
        std::string quoted = "\"";
        for (char ch : f) quoted += ch == '"' ? std::string("\"\"") : std::string(1, ch);
        quoted += "\"";
        const bool plain = f.find_first_of(",\"\n\r") == std::string::npos && rng() % 2;
        text += (c ? "," : "") + (plain ? f : quoted);
        row.push_back(f);
      }
      text += rng() % 2 ? "\r\n" : "\n";
      rows.push_back(row);
    }
    // Small chunks split records; whole ones let plain records take the
    // copy-free path. Both must agree on fields, quoting and lines.
    CsvOptions small;
    small.chunk_bytes = 1 + rng() % 16;
    Result<Parsed> p = Parse(text, small, 1 + rng() % 9);
    ASSERT_TRUE(p.ok()) << p.status() << "\n" << text;
    EXPECT_EQ(p->rows, rows) << text;
    Result<Parsed> whole = Parse(text);
    ASSERT_TRUE(whole.ok()) << whole.status() << "\n" << text;
    EXPECT_EQ(whole->rows, rows) << text;
    EXPECT_EQ(whole->quoted, p->quoted) << text;
    EXPECT_EQ(whole->lines, p->lines) << text;
  }
}

// A dialect reads the same at every chunk boundary; lines keep their
// numbers in the file (skipped and comment lines count).
TEST(CsvDialect, QuoteLinesToSkipCommentsAndANullMarker) {
  const std::string text =
      "exported 2026-12-06\nby a tool\n# the header follows\nid,name,note\n"
      "1,'a, b',NA\n# a comment\r\n2,'it''s','NA'\n3,NA,\"x\"\n";
  for (size_t step : {1u, 2u, 3u, 7u, 1u << 20}) {
    for (size_t chunk : {1u, 5u, 65536u}) {
      SCOPED_TRACE("step " + std::to_string(step) + " chunk " + std::to_string(chunk));
      CsvOptions o;
      o.chunk_bytes = chunk;
      o.dialect.quote = '\'';
      o.dialect.skip_lines = 2;
      o.dialect.comment_prefix = "#";
      o.dialect.null_marker = "NA";
      Result<Parsed> p = Parse(text, o, step);
      ASSERT_TRUE(p.ok()) << p.status();
      EXPECT_EQ(p->header, (std::vector<std::string>{"id", "name", "note"}));
      EXPECT_EQ(p->rows, (Rows{{"1", "a, b", ""}, {"2", "it's", "NA"}, {"3", "", "\"x\""}}));
      EXPECT_EQ(p->lines, (std::vector<int64_t>{5, 7, 8}));
      // A quoted marker is text; the marker unquoted is missing, as an empty field is.
      EXPECT_EQ(p->quoted, (std::vector<std::vector<uint8_t>>{{0, 1, 0}, {0, 1, 1}, {0, 0, 0}}));
    }
  }
}

TEST(CsvDialect, WithoutAHeaderTheRequestNamesTheColumns) {
  CsvOptions o;
  o.dialect.header = false;
  o.dialect.columns = {"a", "b"};
  Parsed p = Parse("1,2\n3,4\n", o).value();
  EXPECT_EQ(p.header, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.rows, (Rows{{"1", "2"}, {"3", "4"}}));
  EXPECT_EQ(p.lines, (std::vector<int64_t>{1, 2}));
  EXPECT_TRUE(Parse("", o).value().rows.empty());  // no header to require
  ExpectErrorIn("1,2\n1,2,3\n", "CSV line 2", "record has 3 fields but the request names 2 columns",
                o);
}

TEST(CsvDialect, TheRulesNameWhatIsWrong) {
  const auto refused = [](CsvDialect d) { return d.Check(',', 4, "formatOptions").message(); };
  CsvDialect d;
  EXPECT_TRUE(d.Check(',', 4, "x").ok());
  d.quote = ',';
  EXPECT_EQ(refused(d),
            "formatOptions: the quote must be one printable ASCII character other than a space "
            "and the delimiter");
  d = {};
  d.header = false;
  d.columns = {"a", "b", "c", "d", "e"};
  Status wide = d.Check(',', 4, "formatOptions");
  EXPECT_TRUE(wide.Is(ErrorCode::kLimitExceeded)) << wide;
  d.columns = {"a", ""};
  EXPECT_EQ(refused(d), "formatOptions: a column name is empty");
  d = {};
  d.null_marker = "N\"A";
  EXPECT_NE(refused(d).find("the null marker must be"), std::string::npos);
  d = {};
  d.skip_lines = CsvDialect::kMaxSkipLines + 1;
  EXPECT_EQ(refused(d), "formatOptions: the lines to skip must be from 0 to 1000000");
  d = {};
  d.comment_prefix = "\"#";
  EXPECT_NE(refused(d).find("not start with the quote or the delimiter"), std::string::npos);
  d.comment_prefix = ",";  // would take a record whose first field is empty for a comment
  EXPECT_NE(refused(d).find("not start with the quote or the delimiter"), std::string::npos);
  d = {};
  d.null_marker = "\xff";
  EXPECT_EQ(refused(d), "formatOptions: the null marker and comment prefix must be UTF-8");
}

}  // namespace
}  // namespace loam::ingest
