// maintain: automatic compaction for embedded use, one pass or --watch
// (engine/table_maintenance.h; docs/operations.md, "Maintenance").
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/commands.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/table_maintenance.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

struct MaintainFlags {
  bool watch = false;
  int64_t interval_seconds = 60;
  int64_t min_fragments = 16;
  int64_t target_rows = 1 << 20;
};

void Print(const Context& ctx, bool held, const MaintenanceReport& r) {
  if (ctx.json) {
    std::cout << json{{"leaseHeld", held},
                      {"tables", r.tables},
                      {"compacted", r.compacted},
                      {"fragmentsRemoved", r.fragments_removed},
                      {"fragmentsAdded", r.fragments_added},
                      {"bytesWritten", r.bytes_written},
                      {"fragments", r.fragments},
                      {"deferred", r.deferred}}
                     .dump()
              << std::endl;
    return;
  }
  if (!held) {
    std::cout << "another process holds the maintenance lease (it compacts); nothing done"
              << std::endl;
    return;
  }
  std::cout << "compacted " << r.compacted << " of " << r.tables
            << " tables: " << r.fragments_removed << " fragments into " << r.fragments_added << ", "
            << r.bytes_written << " bytes written" << std::endl;
  for (const std::string& why : r.deferred) std::cout << "deferred: " << why << std::endl;
}

Status Maintain(const Context& ctx, const MaintainFlags& f) {
  ASSIGN_OR_RETURN(auto ws, ctx.Open());
  CompactionPolicy policy;
  policy.min_fragments = static_cast<uint64_t>(f.min_fragments);
  policy.options.target_rows = static_cast<uint64_t>(f.target_rows);
  const int64_t interval = f.interval_seconds * 1'000'000;
  MaintenanceLease lease(ws->store(), ws->root(), "loam maintain " + NewUlidString(),
                         Clock::System(), std::max<int64_t>(5 * interval, 60'000'000));
  MaintenanceMemo memo;
  for (;;) {
    ASSIGN_OR_RETURN(bool held, lease.Acquire());
    MaintenanceReport report;
    if (held) {
      ASSIGN_OR_RETURN(report, CompactAllBranches(*ws, policy, ctx.principal, &memo));
    }
    Print(ctx, held, report);
    if (!f.watch) break;
    std::this_thread::sleep_for(std::chrono::microseconds(interval));  // the pass's period
  }
  return lease.Release();
}

}  // namespace

void AddMaintainCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto* maintain = app.add_subcommand(
      "maintain", "compact the tables whose small fragments pass a threshold, on every branch");
  auto f = std::make_shared<MaintainFlags>();
  maintain->add_flag("--watch", f->watch, "keep going: a pass every --interval-seconds");
  maintain->add_option("--interval-seconds", f->interval_seconds, "with --watch (default 60)")
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
  maintain
      ->add_option("--min-fragments", f->min_fragments,
                   "compact a table once this many of its fragments are small (default 16)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 20));
  maintain
      ->add_option("--target-rows", f->target_rows,
                   "rows per compacted fragment; smaller than half is small (default 1048576)")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 32));
  maintain->callback([&ctx, f, run] { run(Maintain(ctx, *f)); });
}

}  // namespace loam::cli
