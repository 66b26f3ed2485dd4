// BodyPipe: hands a request body from the connection's I/O thread (which
// reads it asynchronously) to the handler thread that consumes it as a
// ByteSource, holding at most `capacity` bytes: a slow consumer stops the
// reads (backpressure), a slow client never blocks an I/O thread.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "loam/object_store.h"

namespace loam::server {

class BodyPipe : public ByteSource {
 public:
  explicit BodyPipe(size_t capacity) : capacity_(capacity) {}

  // Producer (I/O side). Adds `data`; returns false when the pipe is now
  // full: `on_space` runs (on the consumer's thread) once it has room again.
  bool Push(std::string data, std::function<void()> on_space);
  void Finish();          // the body ended
  void Fail(Status why);  // the connection broke or timed out
  // The consumer is done (answered early): drops what is buffered and the
  // producer's pending callback; later pushes are dropped.
  void Abandon();
  // Consumer (handler side).
  Result<size_t> Read(char* dst, size_t n) override;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::string> chunks_;
  size_t offset_ = 0;  // into chunks_.front()
  size_t buffered_ = 0;
  bool finished_ = false;
  bool abandoned_ = false;
  Status failed_;
  std::function<void()> on_space_;
};

}  // namespace loam::server
