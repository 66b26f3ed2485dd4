// Typed rows from one input file, whatever its format and compression.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ingest/coercion.h"
#include "ingest/csv_dialect.h"
#include "ingest/input_source.h"
#include "loam/batch.h"

namespace loam::ingest {

enum class InputFormat { kCsv, kJsonLines };
Result<InputFormat> ParseInputFormat(std::string_view name);  // "csv", "jsonl"
std::string_view InputFormatName(InputFormat f);
// By file name: *.jsonl, *.ndjson (optionally .gz / .zst) are JSON Lines, else CSV.
InputFormat GuessInputFormat(std::string_view file_name);

// Per-file parse limits; each error names the file, line and column.
struct ParseLimits {
  size_t max_columns = 1024;         // fields per CSV record / keys per JSON object
  size_t max_field_bytes = 1 << 20;  // one value, after unquoting / unescaping
  int max_json_depth = 64;           // nesting of a value bound for a json column
  char csv_delimiter = ',';
  CsvDialect csv;  // the rest of how a CSV input is written (not limits either)
  DecodeLimits decode;
  // Not a limit: a batch ends once it holds this many input bytes, so wide
  // or long values cannot make a batch of many rows hold gigabytes. A record
  // (a CSV record, a JSON line) holds at most 16 x max_field_bytes.
  size_t batch_bytes = size_t{16} << 20;
};

// With a reject function, a row whose values are invalid is left out and
// its error (RowError: file, line, column, reason; never the value) goes
// there; a non-OK return ends the read. Structural errors (an unclosed CSV
// quote) and limits still end it.
using RejectFn = std::function<Status(const Status& row_error)>;

// `error` about one row, with its position as details: "line" (1-based),
// "offset" (the byte of the decompressed input at which the row starts)
// and "column" (the table column, "" when the row as a whole is wrong).
Status RowError(Status error, int64_t line, uint64_t offset, std::string_view column);

class RowSource {
 public:
  virtual ~RowSource() = default;
  // Up to `max_rows` more rows (none when every row of a batch's bytes was
  // rejected); nullopt at the end. The first bad value ends the read with an
  // error naming the file, line and column.
  virtual Result<std::optional<RecordBatch>> Next(size_t max_rows) = 0;
  virtual int64_t rows_read() const = 0;
  // Rows given to the reject function so far: those of the batches taken
  // (a prefetching source's reader may have rejected more, ahead).
  virtual int64_t rows_rejected() const = 0;
  // Where each row of the last batch starts in the file (1-based line).
  virtual const std::vector<int64_t>& row_lines() const = 0;
  // Decoded bytes consumed so far, and compressed bytes read from the file.
  virtual uint64_t bytes_read() const = 0;
  virtual uint64_t raw_bytes_read() const = 0;
};

// Opens `raw` (detecting gzip / zstd) as `format`, mapped onto `table` under
// the strict schema policy with `policy`'s coercions. `name` names the input
// in messages.
Result<std::unique_ptr<RowSource>> OpenRowSource(std::unique_ptr<ByteSource> raw,
                                                 InputFormat format, const Schema& table,
                                                 const SchemaPolicy& policy, std::string name,
                                                 const ParseLimits& limits = {},
                                                 RejectFn reject = {});

// Runs `source` on its own thread, up to `depth` batches of `max_rows`
// ahead, so parsing overlaps with what the caller does with each batch.
// Next must be called with that same `max_rows`. The source's reject
// callback (skipRows) then runs on the parsing thread. Stopping early (the
// wrapper destroyed) waits for the batch being parsed, then stops.
std::unique_ptr<RowSource> Prefetch(std::unique_ptr<RowSource> source, size_t max_rows,
                                    size_t depth = 2);

}  // namespace loam::ingest
