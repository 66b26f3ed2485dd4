// What every `loam` command shares: the workspace root, the principal, the
// output mode, and the mapping from Status to documented exit codes.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/workspace.h"
#include "loam/workspace.h"

namespace loam::cli {

// Documented in docs/cli.md; never renumber.
enum ExitCode : int {
  kExitOk = 0,
  kExitRunFailed = 1,  // a run ended failed (validation, conflict at commit, ...)
  kExitUsage = 2,      // bad flags or arguments
  kExitConflict = 3,   // a concurrent change, a held run, an idempotency clash
  kExitNotFound = 4,   // no such workspace, table, branch, run or file
  kExitDenied = 5,     // a missing grant, a refused policy
  kExitLimit = 6,      // a limit was exceeded
  kExitCorrupt = 7,    // checksum or format damage (heads verify found problems)
  kExitPartial = 8,    // a skipRows run committed, but left rows out
  kExitFormat = 9,     // data written by another Loam version (migrate or upgrade)
  kExitInternal = 10,  // I/O trouble or a bug
};

int ExitCodeFor(const Status& s);

// An integer from the environment (test and tuning hooks, docs/cli.md), or
// `fallback` when unset.
int64_t EnvInt(const char* name, int64_t fallback);
// The exit code of a failed run that recorded `code` (docs/errors.md).
int ExitCodeFor(ErrorCode code);

struct Context {
  std::string root;       // --root, LOAM_ROOT, or ./loam-data
  std::string principal;  // LOAM_PRINCIPAL, or the login name
  bool json = false;      // --json: one JSON document on stdout

  // `recover`: settle sidecars older than the grace period first (false for
  // read-only inspection, heads verify).
  Result<std::shared_ptr<WorkspaceEngine>> Open(bool recover = true) const;
  // The same as the public API's Workspace (loam/workspace.h), acting as
  // `principal`.
  Result<std::unique_ptr<Workspace>> OpenPublic(bool recover = true) const;
  // The public Workspace over an engine already open (`loam serve`: the
  // tables its SQL reads are those its service writes).
  std::unique_ptr<Workspace> Public(std::shared_ptr<WorkspaceEngine> engine) const;
  // The store at `root` (wrapped by TestHooks::wrap_store when set).
  Result<std::shared_ptr<ObjectStore>> Store() const;
  // LOAM_CRASH_AT=<failpoint>[#<n>]: the process kills itself with SIGKILL
  // there, the n-th time it gets there (crash tests); empty function when
  // unset or malformed.
  static std::function<Status(std::string_view)> CrashHook();
  // What a command callback does with its Status: *exit becomes 0, or the
  // error is reported and *exit becomes its code.
  std::function<void(Status)> Runner(int* exit) const;

  // Options for opening or making the workspace as `principal`, which must be
  // valid (common/principal.h): InvalidArgument naming LOAM_PRINCIPAL if not.
  Result<WorkspaceOptions> Options() const;
  Result<std::shared_ptr<WorkspaceEngine>> Init() const;
  // A new workspace as the public API's Workspace (AlreadyExists when one is there).
  Result<std::unique_ptr<Workspace>> InitPublic() const;
};

// Prints the error (stderr; also as JSON on stdout with --json) and returns its exit code.
int Report(const Context& ctx, const Status& s);

// Parses the command line and runs the command; returns the exit code.
int RunCli(int argc, char** argv);

// Set only by test binaries (never by `loam`), before RunCli: `wrap_store`
// wraps every store a command opens; `before_crash` runs just before a
// LOAM_CRASH_AT kill (a simulated power loss undoes unsynced writes there).
struct TestHooks {
  std::function<std::shared_ptr<ObjectStore>(std::shared_ptr<ObjectStore>)> wrap_store;
  std::function<void()> before_crash;
};
void SetTestHooks(TestHooks hooks);

}  // namespace loam::cli
