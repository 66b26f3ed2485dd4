// The `loam` virtual-table module: each table of the pinned state as a
// read-only SQL table over the public scan API (loam/scan.h), with the
// columns a statement uses projected and its comparisons pushed down
// (docs/sql.md, "Pushdown").
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "loam/status.h"
#include "loam/workspace.h"

namespace loam::sql {

// What the module's tables read: one workspace at one state.
struct TableSource {
  const Workspace* ws = nullptr;
  ReadOptions at;  // a branch at a pinned version
  std::map<std::string, TableInfo> tables;
  // Whether the statement may read a table (checked when it is planned);
  // unset: every table.
  std::function<Status(const TableInfo&)> check_read;
  // Reads stop past this point (limit_exceeded, sqlTimeBudgetMillis): a
  // scan checks it between files, where SQLite's progress handler cannot.
  std::optional<std::chrono::steady_clock::time_point> deadline;
  int64_t budget_millis = 0;
  // The first error of a read, with its Loam code (SQLite keeps only text).
  Status error;
};

// Registers the module as "loam" on `db`; `source` outlives `db`.
Status RegisterTableModule(sqlite3* db, TableSource* source);

// The statement that declares `table` through the module.
std::string CreateVirtualTable(const std::string& table);

}  // namespace loam::sql
