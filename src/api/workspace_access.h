// What the public API's sources share: the engine behind a loam::Workspace
// (its Rep), the engine's branch names, and the snapshot a ReadOptions names.
// Never included by a public header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "catalog/snapshot.h"
#include "common/lru_cache.h"
#include "engine/workspace.h"
#include "loam/load.h"
#include "loam/workspace.h"

namespace loam {

struct Workspace::Rep {
  std::shared_ptr<WorkspaceEngine> engine;
  std::string principal;
  std::shared_ptr<LruCache> read_cache;  // OpenOptions::read_cache_bytes; may be null
};

namespace internal {

struct WorkspaceAccess {
  static WorkspaceEngine& Engine(const Workspace& ws) { return *ws.rep_->engine; }
  static const std::shared_ptr<WorkspaceEngine>& Shared(const Workspace& ws) {
    return ws.rep_->engine;
  }
  static const std::string& Principal(const Workspace& ws) { return ws.rep_->principal; }
  static const std::shared_ptr<LruCache>& ReadCache(const Workspace& ws) {
    return ws.rep_->read_cache;
  }
  // A Workspace over an engine its caller opened (the CLI: with its crash
  // hooks and tuning), acting as `principal`.
  static std::unique_ptr<Workspace> Wrap(
      std::shared_ptr<WorkspaceEngine> engine, std::string principal,
      uint64_t read_cache_bytes = OpenOptions{}.read_cache_bytes) {
    auto rep = std::make_unique<Workspace::Rep>();
    rep->engine = std::move(engine);
    rep->principal = std::move(principal);
    if (read_cache_bytes > 0) rep->read_cache = std::make_shared<LruCache>(read_cache_bytes);
    return std::unique_ptr<Workspace>(new Workspace(std::move(rep)));
  }
};

// The engine names main "".
inline std::string EngineBranch(const std::string& branch) {
  return branch == "main" ? "" : branch;
}

// The state `at` names: the branch's current one, or the version asked for.
Result<Snapshot> SnapshotFor(const WorkspaceEngine& engine, const ReadOptions& at);

// The table `name` of `snap`; NotFound naming the branch when it has none.
Result<const TableState*> FindTable(const Snapshot& snap, const std::string& name);

// What a write of the engine made, as the API reports it.
Commit CommitOf(const WriteResult& w);

// How a load runs beyond its request: the `loam` command's knobs.
struct LoadTuning {
  int64_t lease_micros = 0;  // the run's lease (0: the loader's 30 s)
  bool skip_rows_enabled = true;
  std::function<Status(std::string_view)> failpoint;  // the loader's failpoints (crash tests)
};
Result<LoadResult> LoadWith(Workspace& ws, const LoadRequest& request, const LoadTuning& tuning,
                            const std::function<void(const LoadProgress&)>& progress);
Result<LoadResult> DeleteWith(Workspace& ws, const DeleteRequest& request, const LoadTuning& tuning,
                              const std::function<void(const LoadProgress&)>& progress);

}  // namespace internal
}  // namespace loam
