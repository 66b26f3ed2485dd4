#include "sql/history_module.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <variant>
#include <vector>

#include "loam/load.h"
#include "sql/read_only_module.h"
#include "sql/sql_value.h"

namespace loam::sql {
namespace {
namespace history {

using Cell = std::variant<std::monostate, int64_t, std::string>;
using Rows = std::vector<std::vector<Cell>>;

struct HistoryTable : sqlite3_vtab {
  HistorySource* source = nullptr;
  bool runs = false;  // loam_runs; else loam_log
};

struct HistoryCursor : sqlite3_vtab_cursor {
  Rows rows;
  size_t at = 0;
};

int Fail(HistoryTable* t, const Status& s) {
  if (t->source->error.ok()) t->source->error = s;
  sqlite3_free(t->zErrMsg);
  t->zErrMsg = sqlite3_mprintf("%s", s.message().c_str());
  return SQLITE_ERROR;
}

constexpr char kRunsDdl[] =
    "CREATE TABLE x(run_id TEXT, pipeline_id TEXT, table_name TEXT, principal TEXT, mode TEXT, "
    "state TEXT, validation_only "
    "INTEGER, rows_read INTEGER, inserted INTEGER, updated INTEGER, unchanged INTEGER, deleted "
    "INTEGER, rejected INTEGER, error_code TEXT, error TEXT, workspace_version INTEGER, "
    "table_version INTEGER, commit_id TEXT, started TEXT, finished TEXT)";
constexpr char kLogDdl[] =
    "CREATE TABLE x(workspace_version INTEGER, commit_id TEXT, branch TEXT, actor TEXT, created "
    "TEXT, parents TEXT, run_ids TEXT)";

Cell Time(int64_t micros) {
  if (micros <= 0) return std::monostate{};
  return TimestampText(micros);
}

Cell Text(const std::string& s) {
  if (s.empty()) return std::monostate{};
  return s;
}

std::string Joined(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// What the run record adds to the result: the service's pipeline (service
// runs) and who asked (docs/format/control.md, "Run record").
std::pair<Cell, Cell> PipelineAndPrincipal(const std::string& record_json) {
  const nlohmann::json j = nlohmann::json::parse(record_json, nullptr, false);
  if (!j.is_object()) return {};
  Cell pipeline, principal;
  const auto service = j.find("service");
  if (service != j.end() && service->is_object() && service->contains("pipelineId") &&
      (*service)["pipelineId"].is_string()) {
    pipeline = Text((*service)["pipelineId"].get<std::string>());
  }
  const auto request = j.find("request");
  if (request != j.end() && request->is_object() && request->contains("principal") &&
      (*request)["principal"].is_string()) {
    principal = Text((*request)["principal"].get<std::string>());
  }
  return {pipeline, principal};
}

Result<Rows> RunRows(const HistorySource& source) {
  Result<std::vector<LoadResult>> runs = ListRuns(*source.ws);
  if (!runs.ok()) return runs.status();
  Rows rows;
  for (const LoadResult& r : *runs) {
    if (source.shows_table && !source.shows_table(r.table)) continue;
    const bool committed = !r.commit_id.empty();
    auto [pipeline, principal] = PipelineAndPrincipal(r.record_json);
    rows.push_back({r.run_id,
                    pipeline,
                    Text(r.table),
                    principal,
                    Text(r.mode),
                    r.state,
                    int64_t{r.validation_only ? 1 : 0},
                    r.rows_read,
                    r.inserted,
                    r.updated,
                    r.unchanged,
                    r.deleted,
                    r.rejected,
                    Text(r.error_code),
                    Text(r.error),
                    committed ? Cell(static_cast<int64_t>(r.workspace_version)) : Cell(),
                    committed ? Cell(r.table_version) : Cell(),
                    Text(r.commit_id),
                    Time(r.started_micros),
                    Time(r.finished_micros)});
  }
  return rows;
}

Result<Rows> LogRows(const HistorySource& source) {
  Result<std::vector<LogEntry>> log = source.ws->Log(source.branch);
  if (!log.ok()) return log.status();
  Rows rows;
  for (const LogEntry& e : *log) {
    if (e.workspace_version > source.version) continue;  // after the pinned state
    rows.push_back({static_cast<int64_t>(e.workspace_version), e.commit_id, e.branch, Text(e.actor),
                    Time(e.created_micros), Text(Joined(e.parents)), Text(Joined(e.run_ids))});
  }
  return rows;
}

int Connect(sqlite3* db, void* aux, int, const char* const* argv, sqlite3_vtab** out, char**) {
  const bool runs = std::string(argv[0]) == "loam_runs_module";
  const int rc = sqlite3_declare_vtab(db, runs ? kRunsDdl : kLogDdl);
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  auto* t = new HistoryTable();
  t->source = static_cast<HistorySource*>(aux);
  t->runs = runs;
  *out = t;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete static_cast<HistoryTable*>(vtab);
  return SQLITE_OK;
}

int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  auto* t = static_cast<HistoryTable*>(vtab);
  if (!t->runs && t->source->check_log) {
    Status s = t->source->check_log();
    if (!s.ok()) return Fail(t, s);
  }
  info->estimatedCost = 10000;
  return SQLITE_OK;
}

int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new HistoryCursor();
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* c) {
  delete static_cast<HistoryCursor*>(c);
  return SQLITE_OK;
}

int Filter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) {
  auto* c = static_cast<HistoryCursor*>(cursor);
  auto* t = static_cast<HistoryTable*>(cursor->pVtab);
  std::shared_ptr<void>& cached = t->runs ? t->source->runs_rows : t->source->log_rows;
  if (cached == nullptr) {
    Result<Rows> rows = t->runs ? RunRows(*t->source) : LogRows(*t->source);
    if (!rows.ok()) return Fail(t, rows.status());
    cached = std::make_shared<Rows>(std::move(*rows));
  }
  c->rows = *std::static_pointer_cast<Rows>(cached);
  c->at = 0;
  return SQLITE_OK;
}

int Next(sqlite3_vtab_cursor* cursor) {
  ++static_cast<HistoryCursor*>(cursor)->at;
  return SQLITE_OK;
}

int Eof(sqlite3_vtab_cursor* cursor) {
  auto* c = static_cast<HistoryCursor*>(cursor);
  return c->at >= c->rows.size() ? 1 : 0;
}

int ColumnValue(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int i) {
  auto* c = static_cast<HistoryCursor*>(cursor);
  const Cell& cell = c->rows[c->at][static_cast<size_t>(i)];
  if (const auto* n = std::get_if<int64_t>(&cell)) {
    sqlite3_result_int64(ctx, *n);
  } else if (const auto* s = std::get_if<std::string>(&cell)) {
    sqlite3_result_text64(ctx, s->data(), s->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int RowId(sqlite3_vtab_cursor* cursor, sqlite3_int64* out) {
  *out = static_cast<sqlite3_int64>(static_cast<HistoryCursor*>(cursor)->at) + 1;
  return SQLITE_OK;
}

const sqlite3_module kModule = ReadOnlyModule(
    {Connect, BestIndex, Disconnect, Open, Close, Filter, Next, Eof, ColumnValue, RowId});

Status Declare(sqlite3* db, HistorySource* source, const char* module, const char* table) {
  if (sqlite3_create_module_v2(db, module, &kModule, source, nullptr) != SQLITE_OK) {
    return Status::Internal(std::string("sqlite3_create_module: ") + sqlite3_errmsg(db));
  }
  const std::string ddl = std::string("CREATE VIRTUAL TABLE ") + table + " USING " + module;
  if (sqlite3_exec(db, ddl.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Status::Internal(std::string("declaring ") + table + ": " + sqlite3_errmsg(db));
  }
  return Status::OK();
}

}  // namespace history
}  // namespace

Status DeclareHistoryTables(sqlite3* db, HistorySource* source, bool runs, bool log) {
  if (runs) {
    Status s = history::Declare(db, source, "loam_runs_module", kRunsTable);
    if (!s.ok()) return s;
  }
  if (log) return history::Declare(db, source, "loam_log_module", kLogTable);
  return Status::OK();
}

}  // namespace loam::sql
