// maintain, gc and retention: automatic compaction and the time-travel
// window for embedded use (engine/table_maintenance.h, engine/retention.h;
// docs/operations.md, "Maintenance" and "Retention").
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <utility>

#include "cli/commands.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/retention.h"
#include "engine/table_maintenance.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

constexpr int64_t kDefaultGraceSeconds = 86400;

struct MaintainFlags {
  bool watch = false;
  int64_t interval_seconds = 60;
  int64_t min_fragments = 16;
  int64_t target_rows = 1 << 20;
};

int64_t NowMicros() { return Clock::System()->NowMicros(); }

json RetentionJson(const RetentionReport& r, int64_t window_seconds) {
  json oldest = json::object();
  for (const auto& [branch, v] : r.oldest_manifest_version) {
    oldest[branch.empty() ? "main" : branch] = v;
  }
  return {{"windowSeconds", window_seconds},
          {"manifestVersionsRemoved", r.manifest_versions_removed},
          {"tableVersionsRemoved", r.table_versions_removed},
          {"tablesRemoved", r.tables_removed},
          {"forksRemoved", r.forks_removed},
          {"filesRemoved", r.files_removed},
          {"bytesRemoved", r.bytes_removed},
          {"oldestManifestVersion", oldest}};
}

void PrintRetention(const RetentionReport& r, int64_t window_seconds) {
  std::cout << "expired " << r.manifest_versions_removed << " manifest versions and "
            << r.table_versions_removed << " table versions past the " << window_seconds
            << "-second time-travel window and " << r.tables_removed
            << " tables no branch keeps (dropped on every branch before it, or of deleted"
            << " branches), " << r.forks_removed << " forks of deleted branches; removed "
            << r.files_removed << " files (" << r.bytes_removed << " bytes)";
  if (auto main = r.oldest_manifest_version.find(""); main != r.oldest_manifest_version.end()) {
    std::cout << "; main reads back to manifest version " << main->second;
  }
  std::cout << std::endl;
}

// The workspace's window, applied now (unreferenced files younger than
// `grace_seconds` stay: a load's staged files).
Result<std::pair<RetentionReport, int64_t>> ApplyRetention(WorkspaceEngine& ws,
                                                           int64_t grace_seconds) {
  ASSIGN_OR_RETURN(RetentionSetting setting, ReadRetentionSetting(*ws.store(), ws.root()));
  ASSIGN_OR_RETURN(RetentionReport r, ExpireVersions(ws, NowMicros(), setting.window_seconds,
                                                     grace_seconds * 1'000'000));
  return std::make_pair(std::move(r), setting.window_seconds);
}

void Print(const Context& ctx, bool held, const MaintenanceReport& r,
           const std::optional<std::pair<RetentionReport, int64_t>>& retention) {
  if (ctx.json) {
    json out = {{"leaseHeld", held},
                {"tables", r.tables},
                {"compacted", r.compacted},
                {"fragmentsRemoved", r.fragments_removed},
                {"fragmentsAdded", r.fragments_added},
                {"bytesWritten", r.bytes_written},
                {"fragments", r.fragments},
                {"deferred", r.deferred}};
    if (retention) out["retention"] = RetentionJson(retention->first, retention->second);
    std::cout << out.dump() << std::endl;
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
  if (retention) PrintRetention(retention->first, retention->second);
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
    std::optional<std::pair<RetentionReport, int64_t>> retention;
    if (held) {
      ASSIGN_OR_RETURN(report, CompactAllBranches(*ws, policy, ctx.principal, &memo));
      ASSIGN_OR_RETURN(retention, ApplyRetention(*ws, kDefaultGraceSeconds));
    }
    Print(ctx, held, report, retention);
    if (!f.watch) break;
    std::this_thread::sleep_for(std::chrono::microseconds(interval));  // the pass's period
  }
  return lease.Release();
}

Status Gc(const Context& ctx, int64_t grace_seconds) {
  ASSIGN_OR_RETURN(auto ws, ctx.Open());
  ASSIGN_OR_RETURN(auto applied, ApplyRetention(*ws, grace_seconds));
  if (ctx.json) {
    std::cout << RetentionJson(applied.first, applied.second).dump() << std::endl;
  } else {
    PrintRetention(applied.first, applied.second);
  }
  return Status::OK();
}

Status Retention(const Context& ctx, std::optional<int64_t> window_seconds) {
  ASSIGN_OR_RETURN(auto ws, ctx.Open());
  if (window_seconds) {
    RETURN_NOT_OK(WriteRetentionSetting(*ws->store(), ws->root(), {*window_seconds}));
  }
  ASSIGN_OR_RETURN(RetentionSetting setting, ReadRetentionSetting(*ws->store(), ws->root()));
  ASSIGN_OR_RETURN(uint64_t oldest, ReadTimeTravelHorizon(*ws->store(), ws->root(), ""));
  if (ctx.json) {
    std::cout << json{{"windowSeconds", setting.window_seconds},
                      {"oldestManifestVersion", std::max<uint64_t>(oldest, 1)}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "time-travel window: " << setting.window_seconds
              << " seconds; main reads back to manifest version " << std::max<uint64_t>(oldest, 1)
              << std::endl;
  }
  return Status::OK();
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

  auto* gc = app.add_subcommand(
      "gc", "remove versions past the time-travel window and files no version references");
  auto grace = std::make_shared<int64_t>(kDefaultGraceSeconds);
  gc->add_option("--grace-seconds", *grace,
                 "keep unreferenced files younger than this; longer than any load runs "
                 "(default 86400)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  gc->callback([&ctx, grace, run] { run(Gc(ctx, *grace)); });

  auto* retention =
      app.add_subcommand("retention", "show the time-travel window, or set it (--window-seconds)");
  auto window = std::make_shared<int64_t>(0);
  auto* window_opt = retention->add_option(
      "--window-seconds", *window,
      "how long a superseded version stays readable (60 to 3153600000; default 604800, 7 days)");
  retention->callback([&ctx, window, window_opt, run] {
    run(Retention(ctx, window_opt->count() ? std::optional<int64_t>(*window) : std::nullopt));
  });
}

}  // namespace loam::cli
