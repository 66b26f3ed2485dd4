#include "server/body_pipe.h"

#include <cstring>

namespace loam::server {

bool BodyPipe::Push(std::string data, std::function<void()> on_space) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abandoned_) return true;
  buffered_ += data.size();
  chunks_.push_back(std::move(data));
  ready_.notify_one();
  if (buffered_ < capacity_) return true;
  on_space_ = std::move(on_space);
  return false;
}

void BodyPipe::Finish() {
  std::lock_guard<std::mutex> lock(mu_);
  finished_ = true;
  ready_.notify_one();
}

void BodyPipe::Fail(Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_ = std::move(why);
  ready_.notify_one();
}

Result<size_t> BodyPipe::Read(char* dst, size_t n) {
  std::function<void()> resume;
  size_t copied = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    ready_.wait(lock, [&] { return !chunks_.empty() || finished_ || !failed_.ok(); });
    if (!failed_.ok()) return failed_;
    if (chunks_.empty()) return size_t{0};
    while (copied < n && !chunks_.empty()) {
      const std::string& front = chunks_.front();
      const size_t take = std::min(n - copied, front.size() - offset_);
      std::memcpy(dst + copied, front.data() + offset_, take);
      copied += take;
      offset_ += take;
      if (offset_ == front.size()) {
        chunks_.pop_front();
        offset_ = 0;
      }
    }
    buffered_ -= copied;
    if (on_space_ && buffered_ < capacity_) {
      resume = std::move(on_space_);
      on_space_ = nullptr;
    }
  }
  if (resume) resume();
  return copied;
}

void BodyPipe::Abandon() {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_ = true;
  chunks_.clear();
  buffered_ = 0;
  on_space_ = nullptr;
}

}  // namespace loam::server
