#include "ingest/row_source.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "common/status_macros.h"
#include "common/thread_annotations.h"
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
  int64_t rows_rejected() const override { return reader_->rows_rejected(); }
  const std::vector<int64_t>& row_lines() const override { return reader_->row_lines(); }
  uint64_t bytes_read() const override { return input_->decoded_bytes(); }
  uint64_t raw_bytes_read() const override { return input_->compressed_bytes(); }

 private:
  std::unique_ptr<DecodedSource> input_;
  std::unique_ptr<Reader> reader_;
};

// A parsed batch with where its rows start and the position after it.
struct Parsed {
  Result<std::optional<RecordBatch>> batch = std::optional<RecordBatch>();
  std::vector<int64_t> lines;
  int64_t rows_read = 0, rows_rejected = 0;
  uint64_t bytes_read = 0, raw_bytes_read = 0;
};

class PrefetchingRowSource final : public RowSource {
 public:
  PrefetchingRowSource(std::unique_ptr<RowSource> source, size_t max_rows, size_t depth)
      : source_(std::move(source)), max_rows_(max_rows), depth_(depth) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~PrefetchingRowSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      space_.notify_one();
    }
    thread_.join();
  }

  Result<std::optional<RecordBatch>> Next(size_t max_rows) override {
    if (max_rows != max_rows_) {
      return Status::InvalidArgument("a prefetching source reads batches of " +
                                     std::to_string(max_rows_) + " rows");
    }
    if (ended_) {
      if (end_.ok()) return std::optional<RecordBatch>();
      return end_;
    }
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !queue_.empty(); });
    Parsed p = std::move(queue_.front());
    queue_.pop_front();
    space_.notify_one();
    lock.unlock();
    if (!p.batch.ok() || !p.batch->has_value()) {
      ended_ = true;  // later calls repeat the end or the error
      end_ = p.batch.status();
    }
    lines_ = std::move(p.lines);
    rows_read_ = p.rows_read;
    rows_rejected_ = p.rows_rejected;
    bytes_read_ = p.bytes_read;
    raw_bytes_read_ = p.raw_bytes_read;
    return std::move(p.batch);
  }
  int64_t rows_read() const override { return rows_read_; }
  int64_t rows_rejected() const override { return rows_rejected_; }
  const std::vector<int64_t>& row_lines() const override { return lines_; }
  uint64_t bytes_read() const override { return bytes_read_; }
  uint64_t raw_bytes_read() const override { return raw_bytes_read_; }

 private:
  // Parses until the end, an error, or stop_; the last item queued is the
  // end (nullopt) or the error.
  void Loop() LOAM_EXCLUDES(mu_) {
    while (true) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        space_.wait(lock, [&] { return queue_.size() < depth_ || stop_; });
        if (stop_) return;
      }
      Parsed p;
      try {  // nothing may escape the thread (std::terminate)
        p.batch = source_->Next(max_rows_);
      } catch (const std::exception& e) {
        p.batch = Status::ResourceExhausted(std::string("parsing failed: ") + e.what());
      }
      const bool last = !p.batch.ok() || !p.batch->has_value();
      p.lines = source_->row_lines();
      p.rows_read = source_->rows_read();
      p.rows_rejected = source_->rows_rejected();
      p.bytes_read = source_->bytes_read();
      p.raw_bytes_read = source_->raw_bytes_read();
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(p));
      ready_.notify_one();
      if (last) return;
    }
  }

  const std::unique_ptr<RowSource> source_;  // used by the thread only
  const size_t max_rows_, depth_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<Parsed> queue_ LOAM_GUARDED_BY(mu_);
  bool stop_ LOAM_GUARDED_BY(mu_) = false;
  std::thread thread_;
  // The consumer's view, as of the last batch it took.
  bool ended_ = false;
  Status end_;
  std::vector<int64_t> lines_;
  int64_t rows_read_ = 0, rows_rejected_ = 0;
  uint64_t bytes_read_ = 0, raw_bytes_read_ = 0;
};

}  // namespace

std::unique_ptr<RowSource> Prefetch(std::unique_ptr<RowSource> source, size_t max_rows,
                                    size_t depth) {
  return std::make_unique<PrefetchingRowSource>(std::move(source), max_rows, depth);
}

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

Status RowError(Status error, int64_t line, uint64_t offset, std::string_view column) {
  return std::move(error)
      .WithDetail("line", std::to_string(line))
      .WithDetail("offset", std::to_string(offset))
      .WithDetail("column", std::string(column));
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
  if (limits.csv_delimiter == '"' || limits.csv_delimiter == '\n' || limits.csv_delimiter == '\r') {
    return Status::InvalidArgument(
        "the CSV delimiter cannot be a quote, CR or LF; use ',', ';', '|' or \\t");
  }
  RETURN_NOT_OK(limits.csv.Check(limits.csv_delimiter, limits.max_columns, "CSV options"));
  CsvOptions options;
  options.delimiter = limits.csv_delimiter;
  options.dialect = limits.csv;
  options.max_columns = limits.max_columns;
  options.max_field_bytes = limits.max_field_bytes;
  options.max_json_depth = limits.max_json_depth;
  options.batch_bytes = limits.batch_bytes;
  ASSIGN_OR_RETURN(CsvBatches csv,
                   CsvBatches::Open(*input, table, std::move(name), options, policy));
  csv.set_reject(std::move(reject));
  return std::unique_ptr<RowSource>(new OwningRowSource<CsvBatches>(
      std::move(input), std::make_unique<CsvBatches>(std::move(csv))));
}

}  // namespace loam::ingest
