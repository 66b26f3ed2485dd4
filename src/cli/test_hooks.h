// `loam serve --test-store-faults / --test-store-latency`: fault injection
// for the readiness benchmark and the tests. The flags exist only in a tree
// that builds the tests (LOAM_TEST_HOOKS, defined for test_hooks.cc alone),
// never in a release build or an installed `loam`.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "cli/context.h"

namespace loam::cli {

struct TestStoreFlags {
  // This share (0-1) of object store calls fails with `unavailable`, as a
  // flaky store would.
  double faults = 0;
  // Every object store call first waits a delay with this p50 and p99
  // ("20:100", ms), as a remote store would.
  std::string latency;
};

// Adds the flags to `serve` where the hooks are built; nothing elsewhere.
void AddTestStoreOptions(CLI::App* serve, TestStoreFlags* flags);

// The workspace over a store that waits the latency before each call and
// fails the share of its calls (after the open itself, so the server
// starts); nullptr when no flag asks for it.
Result<std::shared_ptr<WorkspaceEngine>> OpenWithTestStore(const Context& ctx,
                                                           const TestStoreFlags& flags);

}  // namespace loam::cli
