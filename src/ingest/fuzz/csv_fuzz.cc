// Fuzz target: the CSV reader and batcher over any bytes, with small limits,
// into a table of every kind of column. Errors are fine; a crash, a hang or
// a row count that disagrees with the batches is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "ingest/csv_batches.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  static const Schema table{{{"id", DataType::Int64(), false},
                             {"name", DataType::String()},
                             {"amount", DataType::Decimal(10, 2)},
                             {"at", DataType::Timestamp()},
                             {"doc", DataType::Json()},
                             {"x", DataType::Float64()}}};
  const std::string text(reinterpret_cast<const char*>(data), size);
  StringSource src(text);
  ingest::CsvOptions options;
  options.max_columns = 16;
  options.max_field_bytes = 256;
  options.max_json_depth = 8;
  options.chunk_bytes = 7;  // records across many chunk boundaries
  options.batch_bytes = 1024;
  Result<ingest::CsvBatches> csv = ingest::CsvBatches::Open(src, table, "f.csv", options);
  if (!csv.ok()) return 0;
  int64_t rows = 0;
  bool clean = false;  // the read reached the end without an error
  while (true) {
    Result<std::optional<RecordBatch>> b = csv->Next(5);
    if (!b.ok()) break;
    if (!*b) {
      clean = true;
      break;
    }
    if ((*b)->num_rows() > 5 || (*b)->columns.size() != table.fields.size()) std::abort();
    rows += (*b)->num_rows();
  }
  if (clean && rows != csv->rows_read()) std::abort();
  return 0;
}
