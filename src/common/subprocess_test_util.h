// Test helper: run a function in forked child processes that start together.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

namespace loam::testing {

// Runs `work(index, out_fd)` in `n` forked processes, released at the same
// moment, and returns what each wrote to out_fd. Each child exits with 0.
// Call only while the test process has no other threads.
inline std::vector<std::string> RunInProcesses(int n, const std::function<void(int, int)>& work,
                                               std::vector<int>* exit_codes = nullptr) {
  int start[2];
  if (::pipe(start) != 0) return {};
  std::vector<int> outs;
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    int out[2];
    if (::pipe(out) != 0) return {};
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(start[1]);
      ::close(out[0]);
      char c;
      (void)!::read(start[0], &c, 1);  // returns 0 when the parent closes the pipe
      work(i, out[1]);
      ::close(out[1]);
      ::_exit(0);
    }
    ::close(out[1]);
    outs.push_back(out[0]);
    pids.push_back(pid);
  }
  ::close(start[0]);
  ::close(start[1]);  // release every child at once
  std::vector<std::string> results;
  for (int fd : outs) {
    std::string data;
    char buf[4096];
    ssize_t k;
    while ((k = ::read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(k));
    ::close(fd);
    results.push_back(std::move(data));
  }
  for (pid_t pid : pids) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (exit_codes) exit_codes->push_back(WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  return results;
}

inline void WriteLine(int fd, const std::string& line) {
  const std::string s = line + "\n";
  (void)!::write(fd, s.data(), s.size());
}

}  // namespace loam::testing
