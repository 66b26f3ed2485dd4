// A streaming RFC 4180 CSV reader with hard limits and positioned errors.
//
// Reads records from a ByteSource in fixed-size chunks, so memory is bounded
// by the largest record, never by the input. Accepts what RFC 4180 allows
// (quoted fields, doubled quotes, embedded delimiters and newlines, CRLF or
// LF line ends) plus a leading UTF-8 byte-order mark, a configurable
// delimiter and the options of a CsvDialect (quote, header or named columns,
// null marker, leading lines to skip, comment lines). Everything else is an InvalidArgument error
// that names the line and column (1-based field number) and says how to fix the input.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/csv_delimiter.h"
#include "ingest/csv_dialect.h"
#include "loam/object_store.h"
#include "loam/result.h"

namespace loam::ingest {

struct CsvOptions {
  char delimiter = ',';
  size_t max_columns = 1024;              // fields per record
  size_t max_field_bytes = 1 << 20;       // bytes in one field, after unquoting
  int max_json_depth = 64;                // nesting of a value bound for a json column
  size_t batch_bytes = size_t{16} << 20;  // CsvBatches: input bytes per batch
  size_t chunk_bytes = 1 << 16;           // read size
  CsvDialect dialect;                     // checked by the caller (CsvDialect::Check)
};

struct CsvRecord {
  std::vector<std::string_view> fields;  // valid until the next Next() call
  // 1 where the field was quoted: "" is an empty string, an empty unquoted
  // field is a missing value.
  std::vector<uint8_t> quoted;
  int64_t number = 0;   // 1 = the first record after the header
  int64_t line = 0;     // line on which the record starts
  uint64_t offset = 0;  // byte of the (decompressed) input at which it starts
};

class CsvReader {
 public:
  CsvReader(ByteSource& input, CsvOptions options);

  // The header record (after the lines to skip). Required: an empty input
  // is an error. Names must be non-empty and distinct. Without a header
  // (CsvDialect::header false): the dialect's columns, nothing read but
  // the lines to skip.
  Result<std::vector<std::string>> ReadHeader();

  // The next data record into `out`; false at the end of the input. Each
  // record must have exactly as many fields as the header: one that has not
  // is an error with detail "fieldCount", its line and offset in `out`,
  // after which the next call reads the next record.
  Result<bool> Next(CsvRecord* out);

  // The line the header was on; 0 without one (after ReadHeader).
  int64_t header_line() const { return header_line_; }

  // Bytes consumed from the input so far.
  uint64_t bytes_read() const { return bytes_read_; }

 private:
  // Parses one record into fields_ and quoted_; false at end of input.
  Result<bool> ParseRecord();
  bool ParseSimpleRecord();
  // Bit i set where block[i] is special (block[i] for i < kBlock, before end).
  static constexpr ptrdiff_t kBlock = 16;
  // The standard quote only (ParseSimpleRecord).
  uint32_t SpecialBytes(const char* block, const char* end) const;
  Result<bool> ParseGeneralRecord();  // into field_bytes_ and ends_
  void StartRecord();                 // empties the record's fields, notes its first line
  // An unquoted field's ordinary bytes from *p on (up to a delimiter, quote,
  // or line end, or the chunk's end), checked against the field limit.
  Status TakeUnquoted(const char** p, const char* end);
  // A quoted field's bytes from *p up to the next quote; true once past it,
  // false when the chunk ends first.
  Result<bool> TakeQuoted(const char** p, const char* end, int64_t quote_line);
  // At the '\r' or '\n' at `p` that ends the record: consumes it (a CRLF
  // split across chunks too) and ends the last field.
  Status EndRecordAt(const char* p);
  Status QuoteInUnquotedField() const;
  Status UnexpectedAfterQuote(char c) const;
  Result<bool> Refill();  // false at end of input
  // Keeps the unread bytes and reads on until `n` are buffered or the input ends.
  Status Ensure(size_t n);
  // Consumes input through the next `n` line feeds.
  Status SkipLines(int64_t n);
  // At the start of a record: skips the comment lines that start here.
  Status SkipComments();
  Status SkipByteOrderMark();
  Status Error(int64_t line, size_t column, std::string_view what, std::string_view fix) const;
  // As Error, for a limit (limit_exceeded).
  Status LimitError(int64_t line, size_t column, std::string_view what, std::string_view fix) const;
  Status EndField(int64_t line);
  Status FieldTooLong(int64_t line) const;

  ByteSource& input_;
  const CsvOptions options_;
  std::array<bool, 256> special_{};  // bytes that end an unquoted run: delimiter, CR, LF, quote
  const char quote_;
  std::string chunk_;
  size_t pos_ = 0;
  bool eof_ = false;
  uint64_t bytes_read_ = 0;
  int64_t line_ = 1;         // current line
  int64_t record_line_ = 1;  // line the current record started on
  int64_t records_ = -1;     // records returned, -1 before the header
  size_t header_columns_ = 0;
  int64_t header_line_ = 0;
  // The current record's fields: views into chunk_ (a simple record) or
  // into field_bytes_.
  std::vector<std::string_view> fields_;
  std::string field_bytes_;      // all fields of the current record, unquoted
  std::vector<size_t> ends_;     // end offset of each field in field_bytes_
  std::vector<uint8_t> quoted_;  // per field: was it quoted
  bool field_quoted_ = false;
  size_t field_start_ = 0;
};

}  // namespace loam::ingest
