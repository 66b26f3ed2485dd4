#include "ingest/fragment_writer.h"

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

void FragmentWriter::Loop() {
  while (true) {
    RecordBatch batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
      if (queue_.empty() || !error_.ok()) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
      space_.notify_one();
    }
    Result<Fragment> f = data_.WriteFragment(batch, /*allow_inline=*/false, schema_);
    std::lock_guard<std::mutex> lock(mu_);
    if (!f.ok()) {
      error_ = f.status();
      space_.notify_all();
      return;
    }
    written_.push_back(std::move(*f));
  }
}

}  // namespace loam::ingest
