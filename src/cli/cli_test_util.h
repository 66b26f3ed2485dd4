// Test helpers: run the real `loam` binary (LOAM_BINARY, set by CMake) in a
// child process with its own environment, capturing output and exit code.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/ulid.h"

namespace loam::testing {

struct CliResult {
  int code = -1;    // exit code; -1 when killed by a signal
  int signal = 0;   // the signal that ended it
  std::string out;  // stdout
  std::string err;  // stderr
  std::string all() const { return out + err; }
};

inline std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Starts `loam args...` (or `binary args...`) in `dir` with `env` added;
// returns its pid. Output goes to dir/.stdout and dir/.stderr.
inline pid_t StartLoam(const std::string& dir, const std::vector<std::string>& args,
                       const std::map<std::string, std::string>& env = {},
                       const std::string& binary = LOAM_BINARY) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    const int out = ::open(".stdout", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(".stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::unsetenv("LOAM_ROOT");
    ::unsetenv("LOAM_PRINCIPAL");
    ::unsetenv("LOAM_QUARANTINE");
    ::setenv("USER", "owner", 1);
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    std::string bin = binary;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (std::string& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return pid;
}

inline CliResult WaitLoam(const std::string& dir, pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  CliResult r;
  if (WIFEXITED(status)) r.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = Slurp(dir + "/.stdout");
  r.err = Slurp(dir + "/.stderr");
  return r;
}

inline CliResult RunLoam(const std::string& dir, const std::vector<std::string>& args,
                         const std::map<std::string, std::string>& env = {},
                         const std::string& binary = LOAM_BINARY) {
  return WaitLoam(dir, StartLoam(dir, args, env, binary));
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

// Every file under `root` except run records and the local store's lock
// files (.loam/), with its bytes: equal snapshots mean the tables and the
// manifest are byte-for-byte unchanged.
inline std::map<std::string, std::string> TreeExceptRuns(const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = std::filesystem::relative(e.path(), root).string();
    if (rel.rfind("_control/runs/", 0) == 0 || rel.rfind("_control/run-errors/", 0) == 0 ||
        rel.rfind("_control/idempotency/", 0) == 0 || rel.rfind(".loam/", 0) == 0) {
      continue;
    }
    out[rel] = Slurp(e.path().string());
  }
  return out;
}

// A fresh directory with a workspace and table "events" (id int64 not null
// and key, name, amount decimal(10,2), at timestamp, tags json), and
// `loam` run in it.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / ("loam-cli-" + NewUlidString())).string();
    std::filesystem::create_directories(dir_);
    Ok({"init"});
    Ok({"table", "create", "events", "--column", "id:int64:not-null", "--column", "name:string",
        "--column", "amount:decimal(10,2)", "--column", "at:timestamp", "--column", "tags:json",
        "--key", "id"});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  CliResult Run(const std::vector<std::string>& args,
                const std::map<std::string, std::string>& env = {}) {
    return RunLoam(dir_, args, env);
  }
  CliResult Ok(const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env = {}) {
    CliResult r = Run(args, env);
    EXPECT_EQ(r.code, 0) << "loam " << ::testing::PrintToString(args) << "\n" << r.all();
    return r;
  }
  void File(const std::string& name, const std::string& data) {
    WriteFile(dir_ + "/" + name, data);
  }
  std::string ws() const { return dir_ + "/loam-data"; }

  std::string dir_;
};

}  // namespace loam::testing
