#include "server/run_waiters.h"

#include <algorithm>

namespace loam::server {

RunWaiters::RunWaiters(std::chrono::milliseconds poll) : poll_(poll) {
  thread_ = std::thread([this] { Loop(); });
}

RunWaiters::~RunWaiters() { Stop(); }

void RunWaiters::Park(const std::string& run_id, const std::string& principal, SteadyTime deadline,
                      Read read, Answer answer) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      const std::string group = run_id + '\0' + principal;
      waiting_[group].push_back(Waiter{deadline, std::move(read), std::move(answer)});
      changed_.insert(group);  // read once more: it may have ended since the caller's read
      rearm_ = true;
      wake_.notify_one();
      return;
    }
  }
  answer(read());
}

void RunWaiters::Changed(const std::string& run_id) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string first = run_id + '\0';
  bool any = false;
  for (auto it = waiting_.lower_bound(first);
       it != waiting_.end() && it->first.compare(0, first.size(), first) == 0; ++it) {
    changed_.insert(it->first);
    any = true;
  }
  if (any) wake_.notify_one();
}

void RunWaiters::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
}

size_t RunWaiters::parked() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, waiters] : waiting_) n += waiters.size();
  return n;
}

void RunWaiters::Loop() {
  SteadyTime next_poll = std::chrono::steady_clock::now() + poll_;
  for (;;) {
    std::set<std::string> due;
    SteadyTime now;
    {
      std::unique_lock<std::mutex> lock(mu_);
      SteadyTime until = next_poll;
      for (const auto& [id, waiters] : waiting_) {
        for (const Waiter& w : waiters) until = std::min(until, w.deadline);
      }
      wake_.wait_until(lock, until, [&] { return stopping_ || rearm_ || !changed_.empty(); });
      rearm_ = false;
      now = std::chrono::steady_clock::now();
      const bool poll_due = now >= next_poll;
      if (poll_due) next_poll = now + poll_;
      if (stopping_) {
        for (const auto& [id, waiters] : waiting_) due.insert(id);
      } else {
        due = Due(now, poll_due);
      }
    }
    for (const std::string& id : due) Settle(id, now);
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && waiting_.empty()) return;
  }
}

std::set<std::string> RunWaiters::Due(SteadyTime now, bool poll_due) {
  std::set<std::string> due = std::move(changed_);
  changed_.clear();
  for (const auto& [id, waiters] : waiting_) {
    if (poll_due) {
      due.insert(id);
      continue;
    }
    for (const Waiter& w : waiters) {
      if (w.deadline <= now) due.insert(id);
    }
  }
  return due;
}

void RunWaiters::Settle(const std::string& group, SteadyTime now) {
  Read read;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiting_.find(group);
    if (it == waiting_.end() || it->second.empty()) return;
    read = it->second.front().read;
  }
  const Result<service::RunStatus> run = read();
  const bool done = !run.ok() || run->run.terminal;
  std::vector<Waiter> answered;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = waiting_.find(group);
    if (it == waiting_.end()) return;
    std::vector<Waiter>& waiters = it->second;
    // Waiters parked after the read keep waiting unless the read ended them.
    auto keep = std::stable_partition(waiters.begin(), waiters.end(), [&](const Waiter& w) {
      return !(done || stopping_ || w.deadline <= now);
    });
    answered.assign(std::make_move_iterator(keep), std::make_move_iterator(waiters.end()));
    waiters.erase(keep, waiters.end());
    if (waiters.empty()) waiting_.erase(it);
  }
  for (Waiter& w : answered) w.answer(run);
}

}  // namespace loam::server
