// RunWaiters: the answers of `GET /v1/runs/{id}?wait=N`, parked until their
// run is terminal or their wait ends (docs/server.md, "Waiting for a run").
// One thread serves every waiter, so a waiting client holds a connection but
// no thread. A run this process finishes wakes its waiters at once
// (Changed); a run another process finishes is seen by re-reading it every
// `poll` (one read per waited run and caller, however many requests of that
// caller wait for it: each caller's answer is read with its own grants).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "loam/result.h"
#include "service/service.h"

namespace loam::server {

class RunWaiters {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;
  // Reads the run as it is now (with the waiter's grants).
  using Read = std::function<Result<service::RunStatus>()>;
  // Called once, on the waiters' thread, with the run as last read.
  using Answer = std::function<void(const Result<service::RunStatus>&)>;

  explicit RunWaiters(std::chrono::milliseconds poll);
  ~RunWaiters();  // Stop()
  RunWaiters(const RunWaiters&) = delete;
  RunWaiters& operator=(const RunWaiters&) = delete;

  // Parks a waiter of `principal`: `answer` runs when the run is terminal,
  // at `deadline`, or at Stop, whichever comes first (at once after Stop).
  // The run is read once more after it is parked: an end between the
  // caller's read and its park is not missed.
  void Park(const std::string& run_id, const std::string& principal, SteadyTime deadline, Read read,
            Answer answer);
  // A run of this process changed state (finished or cancelled): its
  // waiters see it now rather than at the next poll.
  void Changed(const std::string& run_id);
  // Answers every waiter with its run as it is now and ends the thread.
  void Stop();
  size_t parked() const;

 private:
  struct Waiter {
    SteadyTime deadline;
    Read read;
    Answer answer;
  };
  void Loop();
  // The waiter groups to read now: changed ones, every one at a poll,
  // expired ones.
  std::set<std::string> Due(SteadyTime now, bool poll_due);
  // Reads a group's run once and answers its waiters that are done.
  void Settle(const std::string& group, SteadyTime now);

  const std::chrono::milliseconds poll_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  // By group: the run id, a NUL, the principal (a run's groups are adjacent).
  std::map<std::string, std::vector<Waiter>> waiting_;
  std::set<std::string> changed_;  // groups
  bool rearm_ = false;             // a waiter was parked: its deadline may be nearer
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace loam::server
