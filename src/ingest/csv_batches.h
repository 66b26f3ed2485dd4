// Typed record batches from a CSV input under the strict schema policy:
// source columns map to declared columns by name; an unknown source column
// fails, a missing non-nullable column fails, a missing nullable column is
// null. Every value must be in its canonical text form (text_value.h) unless
// the policy declares a coercion for its column.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ingest/coercion.h"
#include "ingest/csv_reader.h"
#include "loam/batch.h"
#include "loam/types.h"

namespace loam::ingest {

class CsvBatches {
 public:
  // Reads the header of `input` and maps it onto `table`. `source` names the
  // input in messages (a file name).
  static Result<CsvBatches> Open(ByteSource& input, const Schema& table, std::string source,
                                 CsvOptions options = {}, const SchemaPolicy& policy = {});

  // Up to `max_rows` more rows (none when every row of a batch's bytes was
  // rejected); nullopt at the end of the input. The first bad value ends the
  // read with an error naming source, line and column.
  Result<std::optional<RecordBatch>> Next(size_t max_rows);

  // Skip rows with invalid values, reporting them here (row_source.h).
  void set_reject(std::function<Status(const Status&)> reject) { reject_ = std::move(reject); }
  int64_t rows_read() const { return rows_; }
  int64_t rows_rejected() const { return rejected_; }  // rows given to the reject function
  // Where each row of the last batch starts (1-based line of the file).
  const std::vector<int64_t>& row_lines() const { return row_lines_; }
  uint64_t bytes_read() const { return reader_->bytes_read(); }

 private:
  static constexpr int64_t kSampleRows = 1024;
  static constexpr double kMaxSampleReserve = 64 << 20;
  void ReserveLikeSample(RecordBatch* batch, size_t max_rows);
  CsvBatches(std::unique_ptr<CsvReader> reader, Schema table, std::string source)
      : reader_(std::move(reader)), table_(std::move(table)), source_(std::move(source)) {}

  std::unique_ptr<CsvReader> reader_;
  Schema table_;
  std::string source_;
  int max_json_depth_ = 64;
  size_t batch_bytes_ = size_t{16} << 20;
  std::vector<int> source_of_;  // per table column: its field in the CSV, or -1
  std::vector<std::optional<Coercion>> coercion_of_;  // per table column
  int64_t rows_ = 0;
  int64_t rejected_ = 0;
  bool ended_ = false;  // the reader met the end of the input
  std::vector<int64_t> row_lines_;
  std::function<Status(const Status&)> reject_;
  std::vector<int64_t> var_bytes_;  // per column: bytes to reserve in the next batch
};

}  // namespace loam::ingest
