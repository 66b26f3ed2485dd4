// SQL over a workspace (docs/sql.md): SQLite as the engine, every table of
// one pinned state as a read-only virtual table, plus `loam_runs` and
// `loam_log`. Statements may only read; grants apply when a principal is
// named; a time budget and size limits bound each statement.
//
//   loam::sql::SqlOptions o;
//   o.at.branch = "main";
//   Status s = loam::sql::RunSql(*ws, "SELECT city, count(*) FROM t GROUP BY 1", o, sink);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loam/status.h"
#include "loam/workspace.h"

namespace loam::sql {

// An SQL value: NULL, INTEGER, REAL, TEXT or BLOB.
struct Blob {
  std::string bytes;
  friend auto operator<=>(const Blob&, const Blob&) = default;
};
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, Blob>;

struct SqlColumn {
  std::string name;
  // The declared type of a table's column (INTEGER, REAL, TEXT, BLOB), else
  // the storage class of the first row's value (NULL when there is none).
  std::string type;
};

// Where a statement's answer goes. Begin once per statement that returns
// rows, before its rows; a non-OK status ends the script with it.
class SqlSink {
 public:
  virtual ~SqlSink() = default;
  virtual Status Begin(const std::vector<SqlColumn>& columns) = 0;
  virtual Status Row(const std::vector<SqlValue>& row) = 0;
  // After a statement's rows: how many were sent, and whether `max_rows`
  // cut the answer short.
  virtual Status End(int64_t rows, bool truncated) = 0;
};

struct SqlOptions {
  // Every table of every statement is read at this state: a branch at a
  // version (nullopt: the branch's version when the script starts).
  ReadOptions at;
  // Set: each statement may read only tables this principal holds a role
  // on (the workspace's owner holds every role), and loam_log is the
  // owner's; refused at prepare time with permission_denied naming the
  // table. Unset: every table (a process that opens the workspace reads
  // its files anyway).
  std::optional<std::string> principal;
  // One statement per script (the HTTP API); else any number, run in turn.
  bool single_statement = false;
  // Limits; each breach ends the statement with limit_exceeded naming it.
  int64_t time_budget_millis = 30'000;  // per script; 0: none
  int64_t max_value_bytes = 64 << 20;   // the longest TEXT or BLOB a statement makes
  int64_t max_sql_bytes = 1 << 20;      // the script's text
  // Rows a statement returns at most; more end its answer (End's
  // `truncated`). -1: no limit.
  int64_t max_rows = -1;
};

// Runs `script`'s statements at one state of the workspace, each answer to
// `sink`.
Status RunSql(const Workspace& ws, const std::string& script, const SqlOptions& options,
              SqlSink& sink);

// A merge check written as SQL (docs/branches.md, sql_check.cc): OK when the
// one statement returns no row at `options.at`; else merge_check_failed
// naming `name` (detail "check") and showing the first row. A statement
// that fails is its own error, with the check named.
Status ExpectNoRows(const Workspace& ws, const std::string& name, const std::string& statement,
                    SqlOptions options);

// SQLite's process-wide heap ceiling for every statement of this process
// (sqlite3_hard_heap_limit64); past it a statement fails with
// limit_exceeded. 0: none (the default).
void SetSqlHeapLimit(int64_t bytes);

// A value as JSON (numbers, strings, null; a BLOB as base64 text) and as
// text (CSV and table cells: NULL is empty; a BLOB is base64).
void AppendJsonValue(const SqlValue& v, std::string* out);
void AppendText(const SqlValue& v, std::string* out);

}  // namespace loam::sql
