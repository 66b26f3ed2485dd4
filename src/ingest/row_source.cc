#include "ingest/row_source.h"

#include "common/status_macros.h"
#include "ingest/csv_batches.h"
#include "ingest/jsonl_batches.h"

namespace loam::ingest {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Owns the decoded input and the format reader that borrows it.
template <typename Reader>
class OwningRowSource final : public RowSource {
 public:
  OwningRowSource(std::unique_ptr<DecodedSource> input, std::unique_ptr<Reader> reader)
      : input_(std::move(input)), reader_(std::move(reader)) {}
  Result<std::optional<RecordBatch>> Next(size_t max_rows) override {
    return reader_->Next(max_rows);
  }
  int64_t rows_read() const override { return reader_->rows_read(); }
  const std::vector<int64_t>& row_lines() const override { return reader_->row_lines(); }
  uint64_t bytes_read() const override { return input_->decoded_bytes(); }
  uint64_t raw_bytes_read() const override { return input_->compressed_bytes(); }

 private:
  std::unique_ptr<DecodedSource> input_;
  std::unique_ptr<Reader> reader_;
};

}  // namespace

Result<InputFormat> ParseInputFormat(std::string_view name) {
  if (name == "csv") return InputFormat::kCsv;
  if (name == "jsonl" || name == "ndjson") return InputFormat::kJsonLines;
  return Status::InvalidArgument("unknown input format '" + std::string(name) +
                                 "'; use csv or jsonl");
}

std::string_view InputFormatName(InputFormat f) { return f == InputFormat::kCsv ? "csv" : "jsonl"; }

InputFormat GuessInputFormat(std::string_view file_name) {
  for (std::string_view z : {".gz", ".zst"}) {
    if (EndsWith(file_name, z)) file_name.remove_suffix(z.size());
  }
  return EndsWith(file_name, ".jsonl") || EndsWith(file_name, ".ndjson") ? InputFormat::kJsonLines
                                                                         : InputFormat::kCsv;
}

Result<std::unique_ptr<RowSource>> OpenRowSource(std::unique_ptr<ByteSource> raw,
                                                 InputFormat format, const Schema& table,
                                                 const SchemaPolicy& policy, std::string name,
                                                 const ParseLimits& limits, RejectFn reject) {
  RETURN_NOT_OK(policy.CheckAgainst(table));
  ASSIGN_OR_RETURN(std::unique_ptr<DecodedSource> input,
                   DecodedSource::Open(std::move(raw), name, limits.decode));
  if (format == InputFormat::kJsonLines) {
    auto reader = std::make_unique<JsonlBatches>(*input, table, policy, std::move(name), limits);
    reader->set_reject(std::move(reject));
    return std::unique_ptr<RowSource>(
        new OwningRowSource<JsonlBatches>(std::move(input), std::move(reader)));
  }
  CsvOptions options;
  options.delimiter = limits.csv_delimiter;
  options.max_columns = limits.max_columns;
  options.max_field_bytes = limits.max_field_bytes;
  ASSIGN_OR_RETURN(CsvBatches csv,
                   CsvBatches::Open(*input, table, std::move(name), options, policy));
  csv.set_reject(std::move(reject));
  return std::unique_ptr<RowSource>(new OwningRowSource<CsvBatches>(
      std::move(input), std::make_unique<CsvBatches>(std::move(csv))));
}

}  // namespace loam::ingest
