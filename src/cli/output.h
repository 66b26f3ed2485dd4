// Rendering results: aligned text tables for people, CSV and JSON Lines that
// read back into Loam unchanged (canonical forms; "" is an empty string, an
// empty field is null).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "loam/batch.h"

namespace loam::cli {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;
  size_t size() const { return rows_.size(); }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

enum class RowFormat { kTable, kCsv, kJsonLines };
Result<RowFormat> ParseRowFormat(const std::string& s);

// Streams batches of one schema in `format`; the header (CSV) or the table
// frame is written once.
class RowWriter {
 public:
  RowWriter(std::ostream& out, RowFormat format, Schema schema)
      : out_(out), format_(format), schema_(std::move(schema)) {}
  void Write(const RecordBatch& batch);  // of the schema given
  void Finish();                         // a table is printed here; a header even without rows
  int64_t rows() const { return rows_; }

 private:
  std::ostream& out_;
  RowFormat format_;
  Schema schema_;
  void Header();
  bool header_done_ = false;
  int64_t rows_ = 0;
  std::unique_ptr<TextTable> table_;
};

std::string CsvQuote(std::string_view field, bool null);
// A value as a table shows it: on one line, cut to 48 characters.
std::string TableCell(std::string s);

}  // namespace loam::cli
