// loam_power_loss: the `loam` command line for crash tests, whose
// LOAM_CRASH_AT kill is also a machine losing power. Every store it opens
// is wrapped in a FaultInjectionObjectStore that tracks writes made without
// durability; at the crash point LosePower() undoes them as a power loss may
// (an unsynced new object vanishes or is cut, a relaxed delete comes back),
// drawn from LOAM_POWER_LOSS_SEED, and the process then kills itself. Never
// installed: a test program (src/cli/cli_kill_test.cc).
#include <iostream>
#include <mutex>
#include <vector>

#include "cli/context.h"
#include "io/fault_injection_object_store.h"

int main(int argc, char** argv) {
  using loam::FaultInjectionObjectStore;
  static std::mutex mu;
  static std::vector<std::shared_ptr<FaultInjectionObjectStore>> stores;
  const auto seed = static_cast<uint64_t>(loam::cli::EnvInt("LOAM_POWER_LOSS_SEED", 1));
  loam::cli::TestHooks hooks;
  hooks.wrap_store = [seed](std::shared_ptr<loam::ObjectStore> base) {
    auto faulty = std::make_shared<FaultInjectionObjectStore>(std::move(base), seed);
    faulty->TrackUnsyncedWrites();
    std::lock_guard<std::mutex> lock(mu);
    stores.push_back(faulty);
    return std::shared_ptr<loam::ObjectStore>(faulty);
  };
  hooks.before_crash = [] {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& s : stores) {
      loam::Result<int> lost = s->LosePower();
      std::cerr << "power loss: "
                << (lost.ok() ? std::to_string(*lost) + " unsynced keys changed"
                              : lost.status().ToString())
                << std::endl;
    }
  };
  loam::cli::SetTestHooks(std::move(hooks));
  return loam::cli::RunCli(argc, argv);
}
