#include "common/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace loam {
namespace {

TEST(ThreadPoolTest, RunsEveryItemExactlyOnce) {
  ThreadPool pool(3);
  std::vector<std::atomic<int>> hits(1000);
  pool.ParallelFor(hits.size(), [&](size_t i) { hits[i]++; });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
}

TEST(ThreadPoolTest, UsesWorkerThreadsAndRespectsTheLimit) {
  ThreadPool pool(3);
  // Every item waits until four distinct threads have arrived, so the loop
  // only finishes if the caller and all three workers take part.
  std::mutex mu;
  std::set<std::thread::id> seen;
  std::condition_variable cv;
  pool.ParallelFor(4, [&](size_t) {
    std::unique_lock<std::mutex> lock(mu);
    seen.insert(std::this_thread::get_id());
    cv.notify_all();
    cv.wait(lock, [&] { return seen.size() == 4; });
  });
  EXPECT_EQ(seen.size(), 4u);

  std::set<std::thread::id> one;
  pool.ParallelFor(50, [&](size_t) {
    std::lock_guard<std::mutex> lock(mu);
    one.insert(std::this_thread::get_id());
  }, /*max_threads=*/1);
  EXPECT_EQ(one, std::set<std::thread::id>{std::this_thread::get_id()});
}

TEST(ThreadPoolTest, ConcurrentCallersAllFinish) {
  ThreadPool pool(1);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 8; ++t) {
    callers.emplace_back([&] {
      for (int r = 0; r < 50; ++r) pool.ParallelFor(20, [&](size_t) { total++; });
    });
  }
  for (auto& c : callers) c.join();
  EXPECT_EQ(total.load(), 8 * 50 * 20);
}

TEST(ThreadPoolTest, WithoutWorkersTheCallerRunsEverything) {
  ThreadPool pool(0);
  int sum = 0;  // no synchronisation needed: one thread
  pool.ParallelFor(10, [&](size_t i) { sum += static_cast<int>(i); });
  EXPECT_EQ(sum, 45);
}

TEST(ThreadPoolTest, DefaultPoolWorksInAForkedChild) {
  std::atomic<int> before{0};
  ThreadPool::Default().ParallelFor(100, [&](size_t) { before++; });
  ASSERT_EQ(before.load(), 100);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int> n{0};
    ThreadPool::Default().ParallelFor(100, [&](size_t) { n++; });
    _exit(n.load() == 100 && ThreadPool::Default().workers() == 0 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

}  // namespace
}  // namespace loam
