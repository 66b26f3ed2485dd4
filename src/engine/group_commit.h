// GroupCommitter: runs that reach their commit close together share one
// table commit and one manifest commit (Workspace::WriteGroup).
//
// Callers wait in a line per (branch, table). The first in line leads: it
// takes everyone waiting behind it (up to max_runs) and commits them as one
// group, then hands the line to the next. An idle line commits at once; under
// load a group gathers while the previous one commits, so the commit rate
// stays bounded while the run rate grows. Requests that cannot share a
// commit (upserts, replaces, keyed appends, added columns) commit alone.
#pragma once

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
  // Under load (others already waiting), a leader waits up to this long for
  // its group to reach max_runs before it commits; 0 commits what has
  // gathered at once.
  int64_t max_wait_micros = 0;
};

struct GroupCommitStats {
  int64_t commits = 0;  // table + manifest commits made for groups (of one or more)
  int64_t runs = 0;     // runs they carried
};

class GroupCommitter {
 public:
  GroupCommitter(std::shared_ptr<Workspace> workspace, GroupCommitOptions options = {});

  // Commits `request` (Workspace::Write's contract), in a group when it can.
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
  void Lead(Line& line, std::unique_lock<std::mutex>& lock);

  std::shared_ptr<Workspace> ws_;
  GroupCommitOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<LineKey, Line> lines_;
  GroupCommitStats stats_;
};

}  // namespace loam
