// maintain, gc and retention: automatic compaction and the time-travel
// window for embedded use (loam/maintenance.h; docs/operations.md,
// "Maintenance" and "Retention").
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "common/status_macros.h"
#include "loam/maintenance.h"

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

json RetentionJson(const ExpiryReport& r) {
  return {{"windowSeconds", r.window_seconds},
          {"manifestVersionsRemoved", r.manifest_versions_removed},
          {"tableVersionsRemoved", r.table_versions_removed},
          {"tablesRemoved", r.tables_removed},
          {"forksRemoved", r.forks_removed},
          {"filesRemoved", r.files_removed},
          {"bytesRemoved", r.bytes_removed},
          {"oldestManifestVersion", r.oldest_version}};
}

void PrintRetention(const ExpiryReport& r) {
  std::cout << "expired " << r.manifest_versions_removed << " manifest versions and "
            << r.table_versions_removed << " table versions past the " << r.window_seconds
            << "-second time-travel window and " << r.tables_removed
            << " tables no branch keeps (dropped on every branch before it, or of deleted"
            << " branches), " << r.forks_removed << " forks of deleted branches; removed "
            << r.files_removed << " files (" << r.bytes_removed << " bytes)";
  if (auto main = r.oldest_version.find("main"); main != r.oldest_version.end()) {
    std::cout << "; main reads back to manifest version " << main->second;
  }
  std::cout << std::endl;
}

void Print(const Context& ctx, const MaintenancePass& r) {
  if (ctx.json) {
    json out = {{"leaseHeld", r.lease_held},
                {"tables", r.tables},
                {"compacted", r.compacted},
                {"fragmentsRemoved", r.fragments_removed},
                {"fragmentsAdded", r.fragments_added},
                {"bytesWritten", r.bytes_written},
                {"fragments", r.fragments},
                {"deferred", r.deferred}};
    if (r.lease_held) out["retention"] = RetentionJson(r.retention);
    std::cout << out.dump() << std::endl;
    return;
  }
  if (!r.lease_held) {
    std::cout << "another process holds the maintenance lease (it compacts); nothing done"
              << std::endl;
    return;
  }
  std::cout << "compacted " << r.compacted << " of " << r.tables
            << " tables: " << r.fragments_removed << " fragments into " << r.fragments_added << ", "
            << r.bytes_written << " bytes written" << std::endl;
  for (const std::string& why : r.deferred) std::cout << "deferred: " << why << std::endl;
  PrintRetention(r.retention);
}

Status Maintain(const Context& ctx, const MaintainFlags& f) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  MaintainerOptions options;
  options.min_fragments = static_cast<uint64_t>(f.min_fragments);
  options.target_rows = static_cast<uint64_t>(f.target_rows);
  options.grace_seconds = kDefaultGraceSeconds;
  options.lease_seconds = std::max<int64_t>(5 * f.interval_seconds, 60);
  ASSIGN_OR_RETURN(std::unique_ptr<Maintainer> maintainer, Maintainer::Create(*ws, options));
  for (;;) {
    ASSIGN_OR_RETURN(MaintenancePass pass, maintainer->RunOnce());
    Print(ctx, pass);
    if (!f.watch) break;
    std::this_thread::sleep_for(std::chrono::seconds(f.interval_seconds));  // the pass's period
  }
  return maintainer->Release();
}

Status Gc(const Context& ctx, int64_t grace_seconds) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(ExpiryReport r, ApplyRetention(*ws, grace_seconds));
  if (ctx.json) {
    std::cout << RetentionJson(r).dump() << std::endl;
  } else {
    PrintRetention(r);
  }
  return Status::OK();
}

Status Retention(const Context& ctx, std::optional<int64_t> window_seconds) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  if (window_seconds) RETURN_NOT_OK(SetRetentionWindow(*ws, *window_seconds));
  ASSIGN_OR_RETURN(RetentionInfo info, GetRetention(*ws));
  if (ctx.json) {
    std::cout << json{{"windowSeconds", info.window_seconds},
                      {"oldestManifestVersion", info.oldest_version}}
                     .dump()
              << std::endl;
  } else {
    std::cout << "time-travel window: " << info.window_seconds
              << " seconds; main reads back to manifest version " << info.oldest_version
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
