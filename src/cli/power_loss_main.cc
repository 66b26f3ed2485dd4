// loam_power_loss: the `loam` command line for crash tests, whose
// LOAM_CRASH_AT kill is also a machine losing power. Every store it opens
// is wrapped in a FaultInjectionObjectStore that tracks writes made without
// durability; at the crash point LosePower() undoes them as a power loss may
// (an unsynced new object vanishes or is cut, a relaxed delete comes back),
// drawn from LOAM_POWER_LOSS_SEED, and the process then kills itself. Never
// installed: a test program (src/cli/cli_kill_test.cc).
//
// LOAM_POWER_LOSS_LEDGER=<dir> (outside the workspace) makes the page cache
// outlive each process, as a machine's does: a command takes over the
// unsynced writes earlier commands left in <dir> (a file per store, named by
// a hash of what the store describes) and removes them, leaves its own there
// when it ends, and a power loss undoes them all. A command that dies
// otherwise leaves nothing: its page cache counts as flushed, never as
// older than it was. Commands sharing a ledger run one after another; one
// root named two ways is two stores here.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>

#include "cli/context.h"
#include "common/hash.h"
#include "io/fault_injection_object_store.h"

namespace {

using loam::FaultInjectionObjectStore;

std::mutex mu;
// By what the base store describes: two opens of one root share what the
// machine has not synced yet.
std::map<std::string, std::shared_ptr<FaultInjectionObjectStore>> stores;
std::string ledger;  // empty: the unsynced writes die with the process

std::string LedgerFile(const std::string& description) {
  char name[32];
  std::snprintf(name, sizeof(name), "%016llx.unsynced",
                static_cast<unsigned long long>(loam::Hash64(description)));
  return ledger + "/" + name;
}

[[noreturn]] void Fatal(const std::string& what) {
  std::cerr << "power loss ledger: " << what << std::endl;
  std::abort();
}

void Adopt(FaultInjectionObjectStore& store, const std::string& description) {
  const std::string file = LedgerFile(description);
  std::ifstream in(file, std::ios::binary);
  if (!in) return;
  std::stringstream saved;
  saved << in.rdbuf();
  loam::Status adopted = store.AdoptUnsynced(saved.str());
  if (!adopted.ok()) Fatal(adopted.ToString());
  std::error_code ec;
  if (!std::filesystem::remove(file, ec)) Fatal("cannot remove " + file + ": " + ec.message());
}

// Leaves each store's unsynced writes for the next command (a temporary
// file renamed over the last, so a reader never sees half of one).
void SaveLedger() {
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [description, store] : stores) {
    const std::string file = LedgerFile(description);
    {
      std::ofstream out(file + ".tmp", std::ios::binary | std::ios::trunc);
      out << store->SaveUnsynced();
      if (!out.flush()) Fatal("cannot write " + file + ".tmp");
    }
    std::error_code ec;
    std::filesystem::rename(file + ".tmp", file, ec);
    if (ec) Fatal("cannot rename " + file + ".tmp: " + ec.message());
  }
}

void LosePowerEverywhere() {
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [description, store] : stores) {
    int from_earlier = 0;
    loam::Result<int> lost = store->LosePower(&from_earlier);
    std::cerr << "power loss: "
              << (lost.ok() ? std::to_string(*lost) + " unsynced keys changed, " +
                                  std::to_string(from_earlier) + " written by earlier commands"
                            : lost.status().ToString())
              << std::endl;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto seed = static_cast<uint64_t>(loam::cli::EnvInt("LOAM_POWER_LOSS_SEED", 1));
  if (const char* dir = std::getenv("LOAM_POWER_LOSS_LEDGER")) ledger = dir;
  loam::cli::TestHooks hooks;
  hooks.wrap_store = [seed](std::shared_ptr<loam::ObjectStore> base) {
    const std::string description = base->Describe();
    std::lock_guard<std::mutex> lock(mu);
    auto& store = stores[description];
    if (store == nullptr) {
      store = std::make_shared<FaultInjectionObjectStore>(std::move(base), seed);
      store->TrackUnsyncedWrites();
      if (!ledger.empty()) Adopt(*store, description);
    }
    return std::shared_ptr<loam::ObjectStore>(store);
  };
  hooks.before_crash = LosePowerEverywhere;
  loam::cli::SetTestHooks(std::move(hooks));
  const int code = loam::cli::RunCli(argc, argv);
  if (!ledger.empty()) SaveLedger();
  return code;
}
