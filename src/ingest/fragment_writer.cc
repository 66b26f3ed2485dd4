#include "ingest/fragment_writer.h"

#include <optional>

namespace loam::ingest {

FragmentWriter::FragmentWriter(const Dataset& data, size_t depth, const Schema* schema)
    : data_(data), depth_(depth), schema_(schema) {
  thread_ = std::thread([this] { Loop(); });
}

FragmentWriter::~FragmentWriter() { static_cast<void>(Close()); }

Status FragmentWriter::Push(RecordBatch batch) {
  std::unique_lock<std::mutex> lock(mu_);
  space_.wait(lock, [&] { return queue_.size() < depth_ || !error_.ok(); });
  if (!error_.ok()) return error_;
  queue_.push_back(std::move(batch));
  ready_.notify_one();
  return Status::OK();
}

Status FragmentWriter::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    ready_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

std::vector<Fragment> FragmentWriter::written() {
  std::lock_guard<std::mutex> lock(mu_);
  return written_;
}

namespace {
// Whether a first batch may stay in memory if no other follows: no larger,
// unencoded, than an inline fragment may be by default (a larger one is
// written at once, overlapping the parse).
bool Small(const RecordBatch& batch) {
  uint64_t bytes = 0;
  for (const Column& c : batch.columns) bytes += static_cast<uint64_t>(c.ByteSize());
  return bytes <= DatasetOptions{}.max_inline_fragment_bytes;
}
}  // namespace

void FragmentWriter::Loop() {
  // A small first batch waits for a second: alone, it may stay in memory.
  std::optional<RecordBatch> first;
  bool more = false;
  while (true) {
    RecordBatch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (!error_.ok()) return;
      if (queue_.empty()) break;
      batch = std::move(queue_.front());
      queue_.pop_front();
      space_.notify_one();
    }
    if (!first && !more && Small(batch)) {
      first = std::move(batch);
      continue;
    }
    more = true;
    if (first && !Write(*first, /*allow_inline=*/false)) return;
    first.reset();
    if (!Write(batch, /*allow_inline=*/false)) return;
  }
  if (first) static_cast<void>(Write(*first, /*allow_inline=*/true));
}

bool FragmentWriter::Write(const RecordBatch& batch, bool allow_inline) {
  Result<Fragment> f = data_.WriteFragment(batch, allow_inline, schema_);
  std::lock_guard<std::mutex> lock(mu_);
  if (!f.ok()) {
    error_ = f.status();
    space_.notify_all();
    return false;
  }
  written_.push_back(std::move(*f));
  return true;
}

}  // namespace loam::ingest
