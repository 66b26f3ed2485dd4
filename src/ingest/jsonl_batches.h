// Typed record batches from JSON Lines (one JSON object per line, UTF-8),
// parsed with simdjson's on-demand API under the strict schema policy: keys
// map to declared columns by name; an unknown key fails, a missing key is
// null (an error for a non-nullable column). Blank lines are skipped.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ingest/row_source.h"

namespace loam::ingest {

class JsonlBatches {
 public:
  JsonlBatches(ByteSource& input, Schema table, const SchemaPolicy& policy, std::string source,
               ParseLimits limits);
  ~JsonlBatches();
  JsonlBatches(JsonlBatches&&) noexcept;

  Result<std::optional<RecordBatch>> Next(size_t max_rows);
  // Skip rows with invalid values, reporting them here (row_source.h).
  void set_reject(std::function<Status(const Status&)> reject) { reject_ = std::move(reject); }
  int64_t rows_read() const { return rows_; }
  int64_t rows_rejected() const { return rejected_; }  // rows given to the reject function
  // Where each row of the last batch starts (1-based line of the file).
  const std::vector<int64_t>& row_lines() const { return row_lines_; }

 private:
  struct Parser;
  // The next line into line_ (without its end, and the first line without a
  // leading UTF-8 byte-order mark, as CSV); false at the end of input.
  Result<bool> NextLine();
  Result<bool> ReadLine();
  Status ParseLine(RecordBatch* batch);
  Status CheckLine() const;                      // every byte of the line, first
  Status FillMissing(RecordBatch* batch) const;  // nulls for the keys a line left out
  // An error about the current line, positioned (RowError); `column`: the
  // table column it is about, if one.
  Status Error(std::string_view where, std::string_view what, std::string_view column = {}) const;
  // As Error, for a limit (limit_exceeded).
  Status LimitError(std::string_view where, std::string_view what) const;

  ByteSource* input_;
  Schema table_;
  std::vector<std::optional<Coercion>> coercion_of_;
  std::unordered_map<std::string, int> column_of_;
  std::string source_;
  ParseLimits limits_;
  std::unique_ptr<Parser> parser_;
  std::string chunk_;
  size_t pos_ = 0;
  bool eof_ = false;
  std::string line_;  // with simdjson padding past its size
  size_t line_size_ = 0;
  int64_t line_number_ = 0;
  uint64_t consumed_ = 0;     // input bytes before pos_
  uint64_t line_offset_ = 0;  // where the current line starts
  int64_t rows_ = 0;
  int64_t rejected_ = 0;
  std::vector<int64_t> row_lines_;
  std::function<Status(const Status&)> reject_;
  std::vector<uint8_t> seen_;  // per column, for the current line
};

}  // namespace loam::ingest
