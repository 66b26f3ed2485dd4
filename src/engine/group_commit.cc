#include "engine/group_commit.h"

#include <chrono>
#include <vector>

namespace loam {

GroupCommitter::GroupCommitter(std::shared_ptr<WorkspaceEngine> workspace,
                               GroupCommitOptions options)
    : ws_(std::move(workspace)), options_(options) {
  if (options_.max_runs < 1) options_.max_runs = 1;
}

GroupCommitStats GroupCommitter::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

size_t GroupCommitter::Waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, line] : lines_) n += line.waiting.size();
  return n;
}

size_t GroupCommitter::Committing() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [key, line] : lines_) n += line.committing ? 1 : 0;
  return n;
}

Result<WriteResult> GroupCommitter::Commit(const WriteRequest& request) {
  if (!WorkspaceEngine::Groupable(request)) return ws_->Write(request);
  Waiter me;
  me.request = &request;
  std::unique_lock<std::mutex> lock(mu_);
  const LineKey key{request.branch, *request.table_sid};
  Line& line = lines_[key];
  line.waiting.push_back(&me);
  if (line.waiting.size() >= static_cast<size_t>(options_.max_runs)) cv_.notify_all();
  // Invariant: only the front waiter of a line that is not committing leads.
  cv_.wait(lock, [&] { return me.result || (!line.committing && line.waiting.front() == &me); });
  if (!me.result) {
    Lead(key, line, lock);  // gives `me` its result too
    // Only a leader erases a line (its followers no longer look at it).
    if (line.waiting.empty()) lines_.erase(key);
  }
  return *std::move(me.result);
}

void GroupCommitter::AwaitInterval(const LineKey& key, Line& line,
                                   std::unique_lock<std::mutex>& lock) {
  if (options_.interval_micros <= 0) return;
  const auto interval = std::chrono::microseconds(options_.interval_micros);
  const auto now = std::chrono::steady_clock::now();
  std::erase_if(started_, [&](const auto& s) { return s.second + interval <= now; });
  auto last = started_.find(key);
  if (last == started_.end()) return;        // idle: at once
  const auto due = last->second + interval;  // `last` may go while this waits
  const size_t max_runs = static_cast<size_t>(options_.max_runs);
  cv_.wait_until(lock, due, [&] { return line.waiting.size() >= max_runs; });
}

void GroupCommitter::Lead(const LineKey& key, Line& line, std::unique_lock<std::mutex>& lock) {
  const size_t max_runs = static_cast<size_t>(options_.max_runs);
  AwaitInterval(key, line, lock);
  started_[key] = std::chrono::steady_clock::now();
  std::vector<Waiter*> group;
  while (!line.waiting.empty() && group.size() < max_runs) {
    group.push_back(line.waiting.front());
    line.waiting.pop_front();
  }
  line.committing = true;
  lock.unlock();
  std::vector<const WriteRequest*> requests;
  requests.reserve(group.size());
  for (const Waiter* w : group) requests.push_back(w->request);
  std::vector<Result<WriteResult>> results = ws_->WriteGroup(requests);
  lock.lock();
  for (size_t i = 0; i < group.size(); ++i) group[i]->result = std::move(results[i]);
  line.committing = false;
  ++stats_.commits;
  stats_.runs += static_cast<int64_t>(group.size());
  cv_.notify_all();
}

}  // namespace loam
