// GroupCommitter: runs that reach their commit close together share one
// table commit and one manifest commit (WorkspaceEngine::WriteGroup).
//
// Callers wait in a line per (branch, table). The first in line leads: it
// takes everyone waiting behind it (up to max_runs) and commits them as one
// group, then hands the line to the next. A line commits at most once per
// interval: a leader that comes within the interval of the line's previous
// commit waits for the rest of it (or until max_runs wait), so a group
// gathers; an idle line commits at once. The commit rate of a table stays
// bounded while its run rate grows. Requests that cannot share a commit
// (upserts, replaces, added columns, large keyed appends) commit alone.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "engine/workspace.h"

namespace loam {

struct GroupCommitOptions {
  // At most this many runs in one commit.
  int max_runs = 64;
  // At least this long between the starts of two commits of one line (0:
  // none; a group is what gathered during the previous commit).
  int64_t interval_micros = 0;
};

struct GroupCommitStats {
  int64_t commits = 0;  // table + manifest commits made for groups (of one or more)
  int64_t runs = 0;     // runs they carried
};

class GroupCommitter {
 public:
  GroupCommitter(std::shared_ptr<WorkspaceEngine> workspace, GroupCommitOptions options = {});

  // Commits `request` (WorkspaceEngine::Write's contract), in a group when it can.
  Result<WriteResult> Commit(const WriteRequest& request);
  GroupCommitStats stats() const;
  // Runs waiting for a commit to take them, and lines with one in flight.
  size_t Waiting() const;
  size_t Committing() const;

 private:
  struct Waiter {
    const WriteRequest* request = nullptr;
    std::optional<Result<WriteResult>> result;
  };
  struct Line {
    std::deque<Waiter*> waiting;  // front: the leader, or the next one
    bool committing = false;
  };
  using LineKey = std::pair<std::string, int64_t>;  // branch, table sid

  // Takes the leader's group from `line` (mu_ held) and commits it.
  void Lead(const LineKey& key, Line& line, std::unique_lock<std::mutex>& lock);
  // Waits (mu_ held) until `key`'s interval since its last commit is over or
  // `line` has max_runs waiting.
  void AwaitInterval(const LineKey& key, Line& line, std::unique_lock<std::mutex>& lock);

  std::shared_ptr<WorkspaceEngine> ws_;
  GroupCommitOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<LineKey, Line> lines_;
  // When each line last started a commit, kept for one interval (a line
  // goes when it empties).
  std::map<LineKey, std::chrono::steady_clock::time_point> started_;
  GroupCommitStats stats_;
};

}  // namespace loam
