#include "cli/test_hooks.h"

#include <unistd.h>

#include <iostream>

#include "common/status_macros.h"
#ifdef LOAM_TEST_HOOKS
#include "io/fault_injection_object_store.h"
#include "io/latency_object_store.h"
#endif

namespace loam::cli {

#ifdef LOAM_TEST_HOOKS

void AddTestStoreOptions(CLI::App* serve, TestStoreFlags* flags) {
  serve
      ->add_option("--test-store-faults", flags->faults,
                   "TEST ONLY: fail this share (0-1) of object store calls with unavailable")
      ->check(CLI::Range(0.0, 1.0))
      ->group("");  // not in --help: docs/cli.md names it
  serve
      ->add_option("--test-store-latency", flags->latency,
                   "TEST ONLY: each object store call first waits P50MS[:P99MS]")
      ->group("");
}

Result<std::shared_ptr<WorkspaceEngine>> OpenWithTestStore(const Context& ctx,
                                                           const TestStoreFlags& flags) {
  if (flags.faults == 0 && flags.latency.empty()) return std::shared_ptr<WorkspaceEngine>();
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> base, ctx.Store());
  if (!flags.latency.empty()) {
    ASSIGN_OR_RETURN(LatencyProfile profile, LatencyProfile::Parse(flags.latency));
    profile.seed = static_cast<uint64_t>(getpid());
    base = std::make_shared<LatencyObjectStore>(base, profile);
    std::cout << "loam serve: TEST ONLY: object store calls wait " << base->Describe() << std::endl;
  }
  auto store = std::make_shared<FaultInjectionObjectStore>(base, static_cast<uint64_t>(getpid()));
  ASSIGN_OR_RETURN(WorkspaceOptions options, ctx.Options());
  ASSIGN_OR_RETURN(std::shared_ptr<WorkspaceEngine> ws, WorkspaceEngine::Open(store, "", options));
  if (flags.faults == 0) return ws;
  FaultRule rule;
  rule.name = "test-store-faults";
  rule.times = FaultRule::kForever;
  rule.probability = flags.faults;
  rule.status = Status::Unavailable("injected store fault (--test-store-faults)");
  store->AddRule(std::move(rule));
  std::cout << "loam serve: TEST ONLY: failing " << flags.faults * 100 << "% of object store calls"
            << std::endl;
  return ws;
}

#else

void AddTestStoreOptions(CLI::App*, TestStoreFlags*) {}

Result<std::shared_ptr<WorkspaceEngine>> OpenWithTestStore(const Context&, const TestStoreFlags&) {
  return std::shared_ptr<WorkspaceEngine>();
}

#endif  // LOAM_TEST_HOOKS

}  // namespace loam::cli
