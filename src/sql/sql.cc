#include "sql/sql.h"

#include <sqlite3.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "common/status_macros.h"
#include "loam/scan.h"
#include "sql/history_module.h"
#include "sql/table_module.h"

namespace loam::sql {
namespace {

using Clock = std::chrono::steady_clock;

// What the authorizer and the progress handler saw: the first action it
// refused, whether the time budget ran out.
struct Guard {
  bool strict = false;  // a principal is named: the schema tables are not read either
  // Strict: whether a table's columns may be described (PRAGMA table_info).
  std::function<bool(const std::string&)> may_describe;
  const std::map<std::string, TableInfo>* tables = nullptr;  // the workspace's, by name
  std::string refused;
  std::optional<Clock::time_point> deadline;
  bool timed_out = false;
};

const char* ActionName(int action) {
  switch (action) {
    case SQLITE_INSERT:
      return "INSERT";
    case SQLITE_UPDATE:
      return "UPDATE";
    case SQLITE_DELETE:
      return "DELETE";
    case SQLITE_ATTACH:
      return "ATTACH";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_PRAGMA:
      return "PRAGMA";
    case SQLITE_TRANSACTION:
      return "a transaction";
    case SQLITE_SAVEPOINT:
      return "SAVEPOINT";
    case SQLITE_ANALYZE:
      return "ANALYZE";
    default:
      return "a change to the schema";
  }
}

// Reads only: SELECT (with CTEs and recursion), the functions other than
// load_extension, and the pragmas that only describe.
int Authorize(void* data, int action, const char* a, const char* b, const char*, const char*) {
  auto* g = static_cast<Guard*>(data);
  const std::string arg1 = a == nullptr ? "" : a;
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_RECURSIVE:
      return SQLITE_OK;
    case SQLITE_READ:
      // Strict: the schema table and the pragma tables would name tables
      // the principal holds no grant on.
      if (!g->strict || (arg1 != "sqlite_master" && arg1 != "sqlite_temp_master" &&
                         (arg1.rfind("pragma_", 0) != 0 || g->tables->count(arg1) > 0))) {
        return SQLITE_OK;
      }
      g->refused = "reading " + arg1;
      return SQLITE_DENY;
    case SQLITE_FUNCTION:
      // fts3_tokenizer would hand out a pointer into the library.
      if (b != nullptr && (sqlite3_stricmp(b, "load_extension") == 0 ||
                           sqlite3_stricmp(b, "fts3_tokenizer") == 0)) {
        g->refused = b;
        return SQLITE_DENY;
      }
      return SQLITE_OK;
    case SQLITE_PRAGMA:
      if ((arg1 == "table_info" || arg1 == "table_xinfo") && b != nullptr &&
          (!g->strict || (g->may_describe && g->may_describe(b)))) {
        return SQLITE_OK;
      }
      if (b == nullptr && (arg1 == "function_list" || (arg1 == "table_list" && !g->strict))) {
        return SQLITE_OK;
      }
      break;
    default:
      break;
  }
  if (g->refused.empty()) g->refused = ActionName(action);
  return SQLITE_DENY;
}

int Progress(void* data) {
  auto* g = static_cast<Guard*>(data);
  if (g->deadline && Clock::now() >= *g->deadline) {
    g->timed_out = true;
    return 1;
  }
  return 0;
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
struct StmtFinalizer {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Db = std::unique_ptr<sqlite3, DbCloser>;
using Stmt = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Everything a script's statements read, pinned when it starts.
struct Session {
  TableSource tables;
  HistorySource history;
  Guard guard;
  const SqlOptions* options = nullptr;
};

Status Limit(const std::string& limit, const std::string& what) {
  return Status::ResourceExhausted("limit_exceeded (" + limit + "): " + what)
      .WithErrorCode(ErrorCode::kLimitExceeded)
      .WithDetail("limit", limit);
}

// The status of a failed prepare or step, as Loam codes it.
Status Failure(sqlite3* db, int rc, const Session& s) {
  if (!s.tables.error.ok()) return s.tables.error;
  if (!s.history.error.ok()) return s.history.error;
  if (s.guard.timed_out) {
    return Limit("sqlTimeBudgetMillis", "the statement ran past its time budget of " +
                                            std::to_string(s.options->time_budget_millis) + " ms");
  }
  if (!s.guard.refused.empty()) {
    return Status::PermissionDenied("SQL here only reads: " + s.guard.refused + " is refused")
        .WithDetail("refused", s.guard.refused);
  }
  const int primary = rc & 0xff;
  if (primary == SQLITE_NOMEM) {
    return Limit("sqlHeapBytes", "SQLite ran out of memory (the process's heap ceiling for SQL)");
  }
  if (primary == SQLITE_TOOBIG) {
    return Limit("sqlValueBytes",
                 "a value would exceed " + std::to_string(s.options->max_value_bytes) + " bytes");
  }
  return Status::InvalidArgument(std::string("SQL: ") + sqlite3_errmsg(db));
}

// Who may read what, when a principal is named: grants are those of now
// (as every read of the service), on the table's identity.
Status SetUpGrants(const Workspace& ws, const SqlOptions& o, Session* s) {
  const std::string principal = *o.principal;
  if (principal == ws.owner()) return Status::OK();
  ReadOptions now;
  now.branch = o.at.branch;
  ASSIGN_OR_RETURN(std::vector<TableInfo> current, ws.ListTables(now));
  auto readable = std::make_shared<std::set<std::pair<int64_t, int64_t>>>();
  auto names = std::make_shared<std::set<std::string>>();
  for (const TableInfo& t : current) {
    for (const TableGrant& g : t.grants) {
      if (g.principal != principal) continue;
      readable->insert({t.id, t.incarnation});
      names->insert(t.name);
    }
  }
  s->guard.strict = true;
  s->guard.may_describe = [readable, s](const std::string& name) {
    auto it = s->tables.tables.find(name);
    return it != s->tables.tables.end() &&
           readable->count({it->second.id, it->second.incarnation}) > 0;
  };
  s->tables.check_read = [readable, principal](const TableInfo& t) -> Status {
    if (readable->count({t.id, t.incarnation}) > 0) return Status::OK();
    return Status::PermissionDenied("principal '" + principal + "' holds no grant on table '" +
                                    t.name + "'")
        .WithDetail("table", t.name);
  };
  s->history.shows_table = [names](const std::string& t) { return names->count(t) > 0; };
  s->history.check_log = [principal]() {
    return Status::PermissionDenied("principal '" + principal +
                                    "' is not the workspace's owner: loam_log is the owner's")
        .WithDetail("table", kLogTable);
  };
  return Status::OK();
}

// ASCII lower case, as SQLite compares names.
std::string Lower(std::string text) {
  for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return text;
}

Result<Db> OpenConnection(Session* s) {
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(
      ":memory:", &raw,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
      nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return Status::Internal("sqlite3_open_v2 failed");
  sqlite3_db_config(raw, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(raw, SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0, nullptr);
  sqlite3_limit(raw, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(raw, SQLITE_LIMIT_LENGTH,
                static_cast<int>(std::min<int64_t>(s->options->max_value_bytes, INT32_MAX)));
  sqlite3_limit(raw, SQLITE_LIMIT_SQL_LENGTH,
                static_cast<int>(std::min<int64_t>(s->options->max_sql_bytes, INT32_MAX)));
  RETURN_NOT_OK(RegisterTableModule(raw, &s->tables));
  // SQLite names tables without regard to case and reserves sqlite_…: a
  // table it cannot tell from an earlier one (in byte order), a reserved
  // name or columns that differ only in case is left out (docs/sql.md).
  // (A failed CREATE VIRTUAL TABLE would leave the connection's schema to
  // be read again under the authorizer: nothing is tried that can fail.)
  std::set<std::string> declared;  // lower case
  for (const auto& [name, info] : s->tables.tables) {
    const std::string lower = Lower(name);
    if (declared.count(lower) > 0 || lower.rfind("sqlite_", 0) == 0) continue;
    std::set<std::string> columns;
    for (const Field& f : info.schema.fields) columns.insert(Lower(f.name));
    if (columns.size() != info.schema.fields.size()) continue;
    const std::string ddl = CreateVirtualTable(name);
    if (sqlite3_exec(raw, ddl.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Status::Internal("declaring table '" + name + "': " + sqlite3_errmsg(raw));
    }
    declared.insert(lower);
  }
  RETURN_NOT_OK(DeclareHistoryTables(raw, &s->history, declared.count(kRunsTable) == 0,
                                     declared.count(kLogTable) == 0));
  sqlite3_set_authorizer(raw, Authorize, &s->guard);
  sqlite3_progress_handler(raw, 1000, Progress, &s->guard);
  return db;
}

std::string StorageClass(int type) {
  switch (type) {
    case SQLITE_INTEGER:
      return "INTEGER";
    case SQLITE_FLOAT:
      return "REAL";
    case SQLITE_TEXT:
      return "TEXT";
    case SQLITE_BLOB:
      return "BLOB";
    default:
      return "NULL";
  }
}

SqlValue ValueAt(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt, i);
    case SQLITE_TEXT: {
      const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      return std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, i)));
    }
    case SQLITE_BLOB: {
      const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, i));
      return Blob{
          std::string(p == nullptr ? "" : p, static_cast<size_t>(sqlite3_column_bytes(stmt, i)))};
    }
    default:
      return std::monostate{};
  }
}

Status RunStatement(sqlite3* db, sqlite3_stmt* stmt, Session* s, SqlSink& sink) {
  const int n = sqlite3_column_count(stmt);
  int rc = sqlite3_step(stmt);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return Failure(db, rc, *s);
  if (n == 0) return Status::OK();
  std::vector<SqlColumn> columns(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const char* declared = sqlite3_column_decltype(stmt, i);
    columns[i].name = sqlite3_column_name(stmt, i);
    columns[i].type = declared != nullptr ? declared
                      : rc == SQLITE_ROW  ? StorageClass(sqlite3_column_type(stmt, i))
                                          : "NULL";
  }
  RETURN_NOT_OK(sink.Begin(columns));
  int64_t rows = 0;
  std::vector<SqlValue> row(static_cast<size_t>(n));
  const int64_t max_rows = s->options->max_rows;
  for (; rc == SQLITE_ROW; rc = sqlite3_step(stmt)) {
    if (max_rows >= 0 && rows >= max_rows) return sink.End(rows, /*truncated=*/true);
    for (int i = 0; i < n; ++i) row[i] = ValueAt(stmt, i);
    RETURN_NOT_OK(sink.Row(row));
    ++rows;
  }
  if (rc != SQLITE_DONE) return Failure(db, rc, *s);
  return sink.End(rows, /*truncated=*/false);
}

// The next statement of `*tail` (null at the end), refusing a write.
Result<Stmt> PrepareNext(sqlite3* db, const char** tail, const char* end, Session* s) {
  while (*tail < end) {
    sqlite3_stmt* raw = nullptr;
    const char* before = *tail;
    const int rc = sqlite3_prepare_v3(db, *tail, static_cast<int>(end - *tail), 0, &raw, tail);
    Stmt stmt(raw);
    if (rc != SQLITE_OK) return Failure(db, rc, *s);
    if (stmt == nullptr && *tail == before) break;  // nothing SQLite can read further
    if (stmt == nullptr) continue;                  // only blanks or a comment
    if (!sqlite3_stmt_readonly(raw)) {
      return Status::PermissionDenied("SQL here only reads: the statement would write")
          .WithDetail("refused", "write");
    }
    return stmt;
  }
  return Stmt();
}

Status PinState(const Workspace& ws, const SqlOptions& o, Session* s) {
  s->options = &o;
  s->tables.ws = &ws;
  s->tables.at = o.at;
  if (!o.at.version.has_value()) {
    ASSIGN_OR_RETURN(uint64_t version, ws.CurrentVersion(o.at.branch));
    s->tables.at.version = version;
  }
  ASSIGN_OR_RETURN(std::vector<TableInfo> tables, ws.ListTables(s->tables.at));
  for (TableInfo& t : tables) s->tables.tables.emplace(t.name, std::move(t));
  s->history.ws = &ws;
  s->history.branch = o.at.branch;
  s->history.version = *s->tables.at.version;
  s->guard.tables = &s->tables.tables;
  if (o.principal.has_value()) RETURN_NOT_OK(SetUpGrants(ws, o, s));
  if (o.time_budget_millis > 0) {
    s->guard.deadline = Clock::now() + std::chrono::milliseconds(o.time_budget_millis);
    s->tables.deadline = s->guard.deadline;
    s->tables.budget_millis = o.time_budget_millis;
  }
  return Status::OK();
}

}  // namespace

Status RunSql(const Workspace& ws, const std::string& script, const SqlOptions& options,
              SqlSink& sink) {
  if (script.find('\0') != std::string::npos) {
    return Status::InvalidArgument("SQL: the text holds a NUL character");
  }
  if (static_cast<int64_t>(script.size()) > options.max_sql_bytes) {
    return Limit("sqlTextBytes", "the SQL text has " + std::to_string(script.size()) +
                                     " bytes; at most " + std::to_string(options.max_sql_bytes));
  }
  Session s;
  RETURN_NOT_OK(PinState(ws, options, &s));
  ASSIGN_OR_RETURN(Db db, OpenConnection(&s));
  const char* tail = script.data();
  const char* end = script.data() + script.size();
  ASSIGN_OR_RETURN(Stmt first, PrepareNext(db.get(), &tail, end, &s));
  if (first == nullptr) return Status::InvalidArgument("SQL: no statement");
  for (Stmt stmt = std::move(first); stmt != nullptr;) {
    if (options.single_statement) {
      ASSIGN_OR_RETURN(Stmt more, PrepareNext(db.get(), &tail, end, &s));
      if (more != nullptr) {
        return Status::InvalidArgument("SQL: one statement per request; this has more");
      }
    }
    RETURN_NOT_OK(RunStatement(db.get(), stmt.get(), &s, sink));
    stmt.reset();
    ASSIGN_OR_RETURN(stmt, PrepareNext(db.get(), &tail, end, &s));
  }
  return Status::OK();
}

void SetSqlHeapLimit(int64_t bytes) { sqlite3_hard_heap_limit64(bytes); }

void AppendText(const SqlValue& v, std::string* out) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    *out += std::to_string(*i);
  } else if (const auto* d = std::get_if<double>(&v)) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), *d);
    const std::string_view text(buf, static_cast<size_t>(end - buf));
    *out += text;
    if (std::isfinite(*d) && text.find_first_of(".e") == std::string_view::npos) *out += ".0";
  } else if (const auto* s = std::get_if<std::string>(&v)) {
    *out += *s;
  } else if (const auto* b = std::get_if<Blob>(&v)) {
    Column c(DataType::Binary());
    c.AppendBytes(b->bytes);
    AppendCanonicalText(c, 0, out);
  }
}

void AppendJsonValue(const SqlValue& v, std::string* out) {
  if (std::holds_alternative<std::monostate>(v)) {
    *out += "null";
  } else if (const auto* d = std::get_if<double>(&v); d != nullptr && !std::isfinite(*d)) {
    *out += "null";  // JSON has no infinities
  } else if (std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v)) {
    AppendText(v, out);
  } else {
    std::string text;
    AppendText(v, &text);
    *out += nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
}

}  // namespace loam::sql
