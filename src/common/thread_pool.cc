#include "common/thread_pool.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>

namespace loam {

// One ParallelFor call. Shared with the workers that join it, so a worker that
// arrives after the last item was claimed touches live memory.
struct ThreadPool::Loop {
  size_t n = 0;
  const std::function<void(size_t)>* fn = nullptr;
  std::atomic<size_t> next{0};
  std::atomic<size_t> helpers_left{0};  // worker slots still open
  std::mutex mu;
  std::condition_variable done_cv;
  size_t done = 0;  // guarded by mu

  // Claims and runs items until none are left.
  void Drain() {
    size_t finished = 0;
    for (size_t i = next++; i < n; i = next++) {
      (*fn)(i);
      ++finished;
    }
    if (finished == 0) return;
    std::lock_guard<std::mutex> lock(mu);
    done += finished;
    if (done == n) done_cv.notify_all();
  }
};

ThreadPool::ThreadPool(size_t workers) {
  workers_.reserve(workers);
  for (size_t i = 0; i < workers; ++i) workers_.emplace_back([this] { WorkerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::WorkerMain() {
  while (true) {
    std::shared_ptr<Loop> loop;
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&]() LOAM_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      loop = queue_.front();
      // The last open slot, or a loop with nothing left to claim, leaves the queue.
      if (--loop->helpers_left == 0 || loop->next.load() >= loop->n) queue_.pop_front();
    }
    loop->Drain();
  }
}

void ThreadPool::ParallelFor(size_t n, const std::function<void(size_t)>& fn,
                             size_t max_threads) {
  if (n == 0) return;
  const size_t threads = max_threads == 0 ? workers_.size() + 1 : max_threads;
  const size_t helpers = std::min({workers_.size(), threads - 1, n - 1});
  if (helpers == 0) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  auto loop = std::make_shared<Loop>();
  loop->n = n;
  loop->fn = &fn;
  loop->helpers_left = helpers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(loop);
  }
  for (size_t i = 0; i < helpers; ++i) wake_.notify_one();
  loop->Drain();
  {
    std::unique_lock<std::mutex> lock(loop->mu);
    loop->done_cv.wait(lock, [&] { return loop->done == n; });
  }
  // Nothing is left to claim; drop the loop if no worker took its slots.
  std::lock_guard<std::mutex> lock(mu_);
  queue_.erase(std::remove(queue_.begin(), queue_.end(), loop), queue_.end());
}

namespace {

// A forked child has the pool's memory but none of its threads, so it gets a
// pool without workers (every loop runs on the caller); the parent's pool is
// left untouched in the child, never destroyed. Holding default_mu across fork
// keeps the pointer consistent.
ThreadPool* default_pool = nullptr;
std::mutex default_mu;

void LockBeforeFork() { default_mu.lock(); }
void UnlockAfterFork() { default_mu.unlock(); }
void ResetInChild() {
  if (default_pool != nullptr) default_pool = new ThreadPool(0);
  default_mu.unlock();
}

}  // namespace

ThreadPool& ThreadPool::Default() {
  static const bool registered = [] {
    pthread_atfork(LockBeforeFork, UnlockAfterFork, ResetInChild);
    return true;
  }();
  (void)registered;
  std::lock_guard<std::mutex> lock(default_mu);
  if (default_pool == nullptr) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    default_pool = new ThreadPool(cores - 1);
  }
  return *default_pool;
}

}  // namespace loam
