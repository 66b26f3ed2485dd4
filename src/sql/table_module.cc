#include "sql/table_module.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "loam/scan.h"
#include "sql/read_only_module.h"
#include "sql/sql_value.h"
#include "sql/table_plan.h"

namespace loam::sql {
namespace {
namespace vtab {

struct LoamTable : sqlite3_vtab {
  TableSource* source = nullptr;
  const TableInfo* info = nullptr;
};

// One scan of a table: its reads in turn (a pushdown on a date or
// timestamp column adds the reads of the rows outside years 0000-9999),
// the current batch and row.
struct LoamCursor : sqlite3_vtab_cursor {
  std::vector<ScanOptions> reads;
  size_t next_read = 0;
  std::unique_ptr<ScanReader> reader;
  RecordBatch batch;
  int64_t row = 0;
  int64_t rowid = 0;
  bool eof = true;
  std::vector<int> column_of;  // SQL column -> batch column, -1: not read
};

LoamTable* TableOf(sqlite3_vtab_cursor* c) { return static_cast<LoamTable*>(c->pVtab); }

int Fail(sqlite3_vtab* vtab, TableSource* source, const Status& s) {
  if (source->error.ok()) source->error = s;
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", s.message().c_str());
  return SQLITE_ERROR;
}

std::string Quoted(const std::string& name) {
  std::string out = "\"";
  for (char c : name) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

int Connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
            char** err) {
  auto* source = static_cast<TableSource*>(aux);
  const std::string name = argc > 3 ? argv[3] : "";
  auto it = source->tables.find(name);
  if (it == source->tables.end()) {
    *err = sqlite3_mprintf("no table '%s'", name.c_str());
    return SQLITE_ERROR;
  }
  std::string ddl = "CREATE TABLE x(";
  const Schema& schema = it->second.schema;
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    if (i > 0) ddl += ", ";
    ddl += Quoted(schema.fields[i].name) + " " + SqlTypeOf(schema.fields[i].type);
  }
  ddl += ")";
  const int rc = sqlite3_declare_vtab(db, ddl.c_str());
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  auto* table = new LoamTable();
  table->source = source;
  table->info = &it->second;
  *out = table;
  return SQLITE_OK;
}

int Disconnect(sqlite3_vtab* vtab) {
  delete static_cast<LoamTable*>(vtab);
  return SQLITE_OK;
}

std::optional<SqlOp> OpOf(unsigned char op) {
  switch (op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      return SqlOp::kEq;
    case SQLITE_INDEX_CONSTRAINT_LT:
      return SqlOp::kLt;
    case SQLITE_INDEX_CONSTRAINT_LE:
      return SqlOp::kLe;
    case SQLITE_INDEX_CONSTRAINT_GT:
      return SqlOp::kGt;
    case SQLITE_INDEX_CONSTRAINT_GE:
      return SqlOp::kGe;
    case SQLITE_INDEX_CONSTRAINT_ISNULL:
      return SqlOp::kIsNull;
    default:
      return std::nullopt;
  }
}

// Whether SQLite need not check constraint `i` again: Loam's predicate for
// its constant value holds for exactly the rows SQL's comparison does.
bool ExactConstraint(sqlite3_index_info* info, int i, const Field& field, SqlOp op) {
  if (op == SqlOp::kIsNull) return PushdownOf(field, op, {}).exact;
  sqlite3_value* v = nullptr;
  if (sqlite3_vtab_rhs_value(info, i, &v) != SQLITE_OK || v == nullptr) return false;
  return PushdownOf(field, op, {v}).exact;
}

int BestIndex(sqlite3_vtab* vtab, sqlite3_index_info* info) {
  LoamTable& loam_table = *static_cast<LoamTable*>(vtab);
  const TableInfo& table = *loam_table.info;
  if (loam_table.source->check_read) {
    Status s = loam_table.source->check_read(table);
    if (!s.ok()) return Fail(vtab, loam_table.source, s);
  }
  const Schema& schema = table.schema;
  TablePlan plan;
  plan.columns_used = info->colUsed;
  int argc = 0;
  bool all_exact = true;
  std::vector<bool> key_eq(table.keys.size(), false);
  double rows = static_cast<double>(std::max<int64_t>(table.row_count, 1));
  int limit_at = -1, offset_at = -1;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (c.op == SQLITE_INDEX_CONSTRAINT_LIMIT) limit_at = c.usable ? i : -2;
    if (c.op == SQLITE_INDEX_CONSTRAINT_OFFSET) offset_at = c.usable ? i : -2;
    if (c.op == SQLITE_INDEX_CONSTRAINT_LIMIT || c.op == SQLITE_INDEX_CONSTRAINT_OFFSET) continue;
    std::optional<SqlOp> op = OpOf(c.op);
    const bool text = c.iColumn >= 0 &&
                      std::strcmp(SqlTypeOf(schema.fields[c.iColumn].type), "INTEGER") != 0 &&
                      std::strcmp(SqlTypeOf(schema.fields[c.iColumn].type), "REAL") != 0;
    if (!c.usable || !op || c.iColumn < 0 ||
        (text && std::strcmp(sqlite3_vtab_collation(info, i), "BINARY") != 0)) {
      all_exact = false;
      continue;
    }
    const Field& field = schema.fields[c.iColumn];
    if (*op == SqlOp::kEq && sqlite3_vtab_in(info, i, -1)) {
      sqlite3_vtab_in(info, i, 1);
      op = SqlOp::kIn;
    }
    const bool exact = *op != SqlOp::kIn && ExactConstraint(info, i, field, *op);
    all_exact = all_exact && exact;
    TablePlan::Term term{c.iColumn, *op, -1};
    if (*op != SqlOp::kIsNull) {
      term.argv = argc;
      info->aConstraintUsage[i].argvIndex = ++argc;
    }
    info->aConstraintUsage[i].omit = exact ? 1 : 0;
    plan.terms.push_back(term);
    rows /= (*op == SqlOp::kEq || *op == SqlOp::kIn || *op == SqlOp::kIsNull) ? 10.0 : 3.0;
    for (size_t k = 0; k < table.keys.size(); ++k) {
      if (*op == SqlOp::kEq && table.keys[k] == field.name) key_eq[k] = true;
    }
  }
  plan.key_lookup =
      !table.keys.empty() && std::all_of(key_eq.begin(), key_eq.end(), [](bool b) { return b; });
  // 0.0 and -0.0 are two keys that SQL finds equal: a float key is scanned.
  for (const std::string& k : table.keys) {
    const int i = schema.IndexOf(k);
    if (i >= 0 && schema.fields[i].type.id == TypeId::kFloat64) plan.key_lookup = false;
  }
  // A LIMIT counts the rows after every filter and after sorting: the scan
  // may stop early only when it filters exactly and the order is its own.
  if (all_exact && limit_at >= 0 && info->nOrderBy == 0) {
    plan.limit_argv = argc;
    info->aConstraintUsage[limit_at].argvIndex = ++argc;
    if (offset_at >= 0) {
      plan.offset_argv = argc;
      info->aConstraintUsage[offset_at].argvIndex = ++argc;
    }
  }
  // Not SQLITE_INDEX_SCAN_UNIQUE: a value that is not exact at filter time
  // (a join on text against an integer key) turns the look-up into a scan.
  if (plan.key_lookup) {
    info->estimatedRows = 1;
    info->estimatedCost = 10;
  } else {
    info->estimatedRows = static_cast<sqlite3_int64>(std::max(rows, 1.0));
    // Opening a scan costs about as much as reading a thousand rows.
    info->estimatedCost = 1000.0 + std::max(rows, 1.0);
  }
  info->idxStr = sqlite3_mprintf("%s", plan.Encode().c_str());
  info->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

int Open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  *out = new LoamCursor();
  return SQLITE_OK;
}

int Close(sqlite3_vtab_cursor* c) {
  delete static_cast<LoamCursor*>(c);
  return SQLITE_OK;
}

struct ValueFree {
  void operator()(sqlite3_value* v) const { sqlite3_value_free(v); }
};
using OwnedValue = std::unique_ptr<sqlite3_value, ValueFree>;

Status OutOfMemory() {
  return Status::ResourceExhausted("SQLite ran out of memory reading a comparison's values")
      .WithErrorCode(ErrorCode::kLimitExceeded)
      .WithDetail("limit", "sqlHeapBytes");
}

// The values SQLite hands term `t` (an IN list: copies of all of them, as
// SQLite reuses the value it hands for the next). A list cut short would
// drop rows: any failure fails the read.
Result<std::vector<OwnedValue>> TermValues(const TablePlan::Term& t, sqlite3_value** argv) {
  std::vector<OwnedValue> values;
  if (t.argv < 0) return values;
  if (t.op != SqlOp::kIn) {
    values.emplace_back(sqlite3_value_dup(argv[t.argv]));
    if (values.back() == nullptr) return OutOfMemory();
    return values;
  }
  sqlite3_value* v = nullptr;
  int rc = sqlite3_vtab_in_first(argv[t.argv], &v);
  for (; rc == SQLITE_OK && v != nullptr; rc = sqlite3_vtab_in_next(argv[t.argv], &v)) {
    values.emplace_back(sqlite3_value_dup(v));
    if (values.back() == nullptr) return OutOfMemory();
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) return OutOfMemory();
  return values;
}

// The columns to read: those the statement uses (one, for a statement that
// only counts rows, so the batches still carry their row counts).
std::vector<std::string> ProjectedColumns(const Schema& schema, uint64_t used,
                                          std::vector<int>* column_of) {
  std::vector<std::string> names;
  column_of->assign(schema.fields.size(), -1);
  for (size_t i = 0; i < schema.fields.size(); ++i) {
    const uint64_t bit = i < 63 ? (uint64_t{1} << i) : (uint64_t{1} << 63);
    if ((used & bit) == 0) continue;
    (*column_of)[i] = static_cast<int>(names.size());
    names.push_back(schema.fields[i].name);
  }
  if (names.empty() && !schema.fields.empty()) names.push_back(schema.fields[0].name);
  return names;
}

// The pushed-down predicates and, when one is on a date or timestamp
// column, that column (the reads outside years 0000-9999 need it).
struct Pushed {
  std::vector<Predicate> where;
  std::vector<Value> key;  // the key's values, all exact: a look-up
  const Field* date_column = nullptr;
};

Result<Pushed> PushedOf(const TableInfo& table, const TablePlan& plan, sqlite3_value** argv) {
  Pushed out;
  std::vector<std::optional<Value>> key(table.keys.size());
  for (const TablePlan::Term& t : plan.terms) {
    const Field& field = table.schema.fields[t.column];
    Result<std::vector<OwnedValue>> owned = TermValues(t, argv);
    if (!owned.ok()) return owned.status();
    std::vector<sqlite3_value*> values;
    for (const OwnedValue& v : *owned) values.push_back(v.get());
    // A range on a date-like column holds within years 0000-9999 only (one
    // such column per scan; IS NULL is exact and goes as it is).
    const bool ranged = IsDateLike(field.type) && t.op != SqlOp::kIsNull;
    if (ranged && out.date_column != nullptr && out.date_column != &field) continue;
    Pushdown p = PushdownOf(field, t.op, values);
    if (ranged && !p.where.empty()) out.date_column = &field;
    for (size_t k = 0; k < table.keys.size(); ++k) {
      if (t.op == SqlOp::kEq && p.exact && table.keys[k] == field.name) {
        key[k] = p.where[0].values[0];
      }
    }
    for (Predicate& w : p.where) out.where.push_back(std::move(w));
  }
  if (plan.key_lookup && std::all_of(key.begin(), key.end(), [](auto& v) { return v; })) {
    for (auto& v : key) out.key.push_back(std::move(*v));
  }
  return out;
}

// The reads of a scan with `pushed`: one, or three when a date-like column
// bounds it (the rows of years 0000-9999, then those before and after).
std::vector<ScanOptions> ReadsOf(ScanOptions base, const Pushed& pushed) {
  base.where = pushed.where;
  if (pushed.date_column == nullptr) return {base};
  const Field& d = *pushed.date_column;
  std::vector<Predicate> others;
  for (const Predicate& p : pushed.where) {
    if (p.column != d.name) others.push_back(p);
  }
  const Value first(DayStart(d.type, kFirstDay)), end(DayStart(d.type, kEndDay));
  std::vector<ScanOptions> reads(3, base);
  reads[0].where.push_back(Predicate::Ge(d.name, first));
  reads[0].where.push_back(Predicate::Lt(d.name, end));
  reads[1].where = others;
  reads[1].where.push_back(Predicate::Lt(d.name, first));
  reads[2].where = others;
  reads[2].where.push_back(Predicate::Ge(d.name, end));
  return reads;
}

// The next row, opening the next read when one is used up.
Status Advance(LoamCursor* c, const LoamTable& table) {
  ++c->row;
  while (c->row >= c->batch.num_rows()) {
    const TableSource& source = *table.source;
    if (source.deadline && std::chrono::steady_clock::now() >= *source.deadline) {
      return Status::ResourceExhausted(
                 "limit_exceeded (sqlTimeBudgetMillis): the statement ran "
                 "past its time budget of " +
                 std::to_string(source.budget_millis) + " ms")
          .WithErrorCode(ErrorCode::kLimitExceeded)
          .WithDetail("limit", "sqlTimeBudgetMillis");
    }
    c->row = 0;
    c->batch = RecordBatch();
    if (c->reader != nullptr) {
      Result<std::optional<RecordBatch>> next = c->reader->Next();
      if (!next.ok()) return next.status();
      if (next->has_value()) {
        c->batch = std::move(**next);
        continue;
      }
      c->reader.reset();
    }
    if (c->next_read >= c->reads.size()) {
      c->eof = true;
      return Status::OK();
    }
    const ScanOptions& read = c->reads[c->next_read++];
    Result<std::unique_ptr<ScanReader>> reader =
        OpenScan(*table.source->ws, table.info->name, read);
    if (!reader.ok()) return reader.status();
    c->reader = std::move(*reader);
  }
  ++c->rowid;
  return Status::OK();
}

// A key look-up's row, if it meets every other pushed predicate.
Status LookUp(LoamCursor* c, const LoamTable& table, const Pushed& pushed) {
  Result<std::optional<RecordBatch>> row =
      Lookup(*table.source->ws, table.info->name, pushed.key, table.source->at);
  if (!row.ok()) return row.status();
  c->eof = true;
  if (!row->has_value()) return Status::OK();
  const RecordBatch& b = **row;
  for (const Predicate& p : pushed.where) {
    const int i = b.schema.IndexOf(p.column);
    if (i < 0) return Status::OK();
    // Day bounds hold only within years 0000-9999: SQLite checks those.
    if (IsDateLike(b.schema.fields[i].type) && p.op != CompareOp::kIsNull) continue;
    if (!ValueMatches(p, b.columns[i].GetValue(0))) return Status::OK();
  }
  for (size_t i = 0; i < c->column_of.size(); ++i) c->column_of[i] = static_cast<int>(i);
  c->batch = b;
  c->row = 0;
  c->rowid = 1;
  c->eof = false;
  return Status::OK();
}

int Filter(sqlite3_vtab_cursor* cursor, int, const char* idx, int, sqlite3_value** argv) {
  auto* c = static_cast<LoamCursor*>(cursor);
  LoamTable& table = *TableOf(cursor);
  std::optional<TablePlan> plan = TablePlan::Decode(idx == nullptr ? "" : idx);
  if (!plan) return Fail(&table, table.source, Status::Internal("unreadable scan plan"));
  c->reads.clear();
  c->next_read = 0;
  c->reader.reset();
  c->batch = RecordBatch();
  c->rowid = 0;
  Result<Pushed> found = PushedOf(*table.info, *plan, argv);
  if (!found.ok()) return Fail(&table, table.source, found.status());
  const Pushed& pushed = *found;
  ScanOptions base;
  static_cast<ReadOptions&>(base) = table.source->at;
  base.columns = ProjectedColumns(table.info->schema, plan->columns_used, &c->column_of);
  if (plan->limit_argv >= 0 && sqlite3_value_int64(argv[plan->limit_argv]) >= 0) {
    // LIMIT rows after OFFSET rows: the scan stops after both (saturating).
    int64_t limit = sqlite3_value_int64(argv[plan->limit_argv]);
    if (plan->offset_argv >= 0) {
      const int64_t offset =
          std::max<sqlite3_int64>(sqlite3_value_int64(argv[plan->offset_argv]), 0);
      limit = offset > INT64_MAX - limit ? INT64_MAX : limit + offset;
    }
    base.limit = limit;
  }
  Status s;
  if (!pushed.key.empty()) {
    s = LookUp(c, table, pushed);
  } else {
    c->reads = ReadsOf(std::move(base), pushed);
    c->eof = false;
    c->row = -1;
    s = Advance(c, table);
  }
  return s.ok() ? SQLITE_OK : Fail(&table, table.source, s);
}

int Next(sqlite3_vtab_cursor* cursor) {
  auto* c = static_cast<LoamCursor*>(cursor);
  if (c->reads.empty()) {  // a key look-up: one row at most
    c->eof = true;
    return SQLITE_OK;
  }
  Status s = Advance(c, *TableOf(cursor));
  return s.ok() ? SQLITE_OK : Fail(TableOf(cursor), TableOf(cursor)->source, s);
}

// The tables are read-only; the authorizer refuses a change before it
// runs, so this only stands behind it.
int Update(sqlite3_vtab* vtab, int, sqlite3_value**, sqlite3_int64*) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("Loam tables are read-only in SQL");
  return SQLITE_READONLY;
}

int Eof(sqlite3_vtab_cursor* cursor) { return static_cast<LoamCursor*>(cursor)->eof ? 1 : 0; }

int ColumnValue(sqlite3_vtab_cursor* cursor, sqlite3_context* ctx, int i) {
  auto* c = static_cast<LoamCursor*>(cursor);
  const int at = i >= 0 && i < static_cast<int>(c->column_of.size()) ? c->column_of[i] : -1;
  if (at < 0) {
    sqlite3_result_null(ctx);  // a column the statement does not read
    return SQLITE_OK;
  }
  ResultValue(ctx, c->batch.columns[at], c->row);
  return SQLITE_OK;
}

int RowId(sqlite3_vtab_cursor* cursor, sqlite3_int64* out) {
  *out = static_cast<LoamCursor*>(cursor)->rowid;
  return SQLITE_OK;
}

const sqlite3_module kModule = ReadOnlyModule(
    {Connect, BestIndex, Disconnect, Open, Close, Filter, Next, Eof, ColumnValue, RowId, Update});

}  // namespace vtab
}  // namespace

Status RegisterTableModule(sqlite3* db, TableSource* source) {
  if (sqlite3_create_module_v2(db, "loam", &vtab::kModule, source, nullptr) != SQLITE_OK) {
    return Status::Internal(std::string("sqlite3_create_module: ") + sqlite3_errmsg(db));
  }
  return Status::OK();
}

std::string CreateVirtualTable(const std::string& table) {
  // Table names are letters, digits and '_': the module argument is the name.
  return "CREATE VIRTUAL TABLE " + vtab::Quoted(table) + " USING loam(" + table + ")";
}

}  // namespace loam::sql
