// A fixed set of worker threads for data-parallel loops (page encoding and
// decoding). The calling thread always takes part, so a loop finishes even when
// every worker is busy with other callers' loops, or in a forked child, which
// has no workers.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"

namespace loam {

class ThreadPool {
 public:
  explicit ThreadPool(size_t workers);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs fn(i) for every i in [0, n), each exactly once, on at most
  // `max_threads` threads (0 = the workers plus the caller); returns when all
  // calls have returned. Items are claimed in index order.
  void ParallelFor(size_t n, const std::function<void(size_t)>& fn, size_t max_threads = 0);

  size_t workers() const { return workers_.size(); }

  // The process-wide pool: one thread per core besides the caller. Never
  // destroyed, so it is usable from static destructors.
  static ThreadPool& Default();

 private:
  struct Loop;
  void WorkerMain();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Loop>> queue_ LOAM_GUARDED_BY(mu_);
  bool stopping_ LOAM_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace loam
