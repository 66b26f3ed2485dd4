// `loam_runs` and `loam_log`: the workspace's runs (loam/load.h ListRuns)
// and a branch's commits (Workspace::Log) as read-only SQL tables, so that
// "what did run X commit" is a query (docs/sql.md, "History tables").
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "loam/status.h"
#include "loam/workspace.h"

namespace loam::sql {

struct HistorySource {
  const Workspace* ws = nullptr;
  std::string branch = "main";
  // Whether a run's rows are shown: runs on tables the reader may read.
  std::function<bool(const std::string& table)> shows_table;
  // Whether the statement may read loam_log (checked when it is planned).
  std::function<Status()> check_log;
  // loam_log lists the commits up to the pinned version; both tables are
  // read once per script (later reads use these rows).
  uint64_t version = UINT64_MAX;
  std::shared_ptr<void> runs_rows, log_rows;
  Status error;  // the first error of a read, with its Loam code
};

inline constexpr char kRunsTable[] = "loam_runs";
inline constexpr char kLogTable[] = "loam_log";

// Declares loam_runs and loam_log on `db` (a table of the workspace with
// one of those names hides it); `source` outlives `db`.
Status DeclareHistoryTables(sqlite3* db, HistorySource* source, bool runs, bool log);

}  // namespace loam::sql
