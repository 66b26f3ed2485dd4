// scan, get, count, export: reads through the public API (loam/scan.h).
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "loam/scan.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

struct ReadFlags {
  std::string table;
  std::string branch = "main";
  int64_t version = -1;  // manifest version; -1 = current
  std::string columns;
  std::string where;
  int64_t limit = -1;
  std::string format = "table";
  std::string output;
  std::vector<std::string> key;
};

Result<Predicate> ParseWhere(const Schema& schema, const std::string& text) {
  Result<Predicate> p = ParsePredicate(schema, text);
  if (!p.ok()) return Status::InvalidArgument("--" + p.status().message());
  return p;
}

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ',')) {
    if (!part.empty()) out.push_back(part);
  }
  return out;
}

// The table as the read names it, through the public API (loam/scan.h).
struct Opened {
  std::unique_ptr<Workspace> ws;
  ReadOptions at;
  TableInfo table;
};

Result<Opened> OpenForRead(const Context& ctx, const ReadFlags& f) {
  Opened o;
  ASSIGN_OR_RETURN(o.ws, ctx.OpenPublic());
  o.at.branch = f.branch;
  if (f.version >= 0) o.at.version = static_cast<uint64_t>(f.version);
  ASSIGN_OR_RETURN(o.table, o.ws->DescribeTable(f.table, o.at));
  return o;
}

// `batches` (of `shape`) as the read's format asks; a table ends with its count.
Status PrintRows(const Context& ctx, const ReadFlags& f, const Schema& shape,
                 const std::vector<RecordBatch>& batches, std::ostream& out) {
  ASSIGN_OR_RETURN(RowFormat format, ParseRowFormat(ctx.json ? "jsonl" : f.format));
  RowWriter writer(out, format, shape);
  for (const RecordBatch& b : batches) writer.Write(b);
  writer.Finish();
  if (format == RowFormat::kTable) {
    out << "(" << writer.rows() << (writer.rows() == 1 ? " row)\n" : " rows)\n");
  }
  return Status::OK();
}

Status Scan(const Context& ctx, const ReadFlags& f, std::ostream& out) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  const Schema& schema = o.table.schema;
  ScanOptions scan;
  static_cast<ReadOptions&>(scan) = o.at;
  scan.columns = SplitComma(f.columns);
  Schema shape;
  for (const std::string& c : scan.columns) {
    if (schema.IndexOf(c) < 0)
      return Status::InvalidArgument("--columns: no column '" + c + "' in '" + f.table + "'");
    shape.fields.push_back(schema.fields[schema.IndexOf(c)]);
  }
  if (scan.columns.empty()) shape = schema;
  if (!f.where.empty()) {
    ASSIGN_OR_RETURN(Predicate p, ParseWhere(schema, f.where));
    scan.where.push_back(std::move(p));
  }
  if (f.limit >= 0) scan.limit = f.limit;
  ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, loam::Scan(*o.ws, f.table, scan));
  return PrintRows(ctx, f, shape, batches, out);
}

Status Get(const Context& ctx, const ReadFlags& f) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  const std::vector<std::string>& keys = o.table.keys;
  if (keys.empty())
    return Status::InvalidArgument("table '" + f.table +
                                   "' declares no key columns; use scan --where");
  if (f.key.size() != keys.size()) {
    std::string names;
    for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
    return Status::InvalidArgument("get takes one value per key column (" + names + ")");
  }
  const Schema& schema = o.table.schema;
  std::vector<Value> key;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ParseValue(schema.fields[schema.IndexOf(keys[i])], f.key[i]));
    key.push_back(std::move(v));
  }
  ASSIGN_OR_RETURN(std::optional<RecordBatch> row, loam::Lookup(*o.ws, f.table, key, o.at));
  std::vector<RecordBatch> rows;
  if (row) rows.push_back(*std::move(row));
  RETURN_NOT_OK(PrintRows(ctx, f, schema, rows, std::cout));
  if (rows.empty()) return Status::NotFound("no row of '" + f.table + "' has that key");
  return Status::OK();
}

Status Count(const Context& ctx, const ReadFlags& f) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  const int64_t rows = o.table.row_count;
  if (ctx.json) {
    std::cout << json{{"table", f.table}, {"rows", rows}}.dump() << "\n";
  } else {
    std::cout << rows << "\n";
  }
  return Status::OK();
}

Status Export(const Context& ctx, ReadFlags f) {
  if (f.format != "csv" && f.format != "jsonl")
    return Status::InvalidArgument("export --format takes csv or jsonl");
  Context plain = ctx;
  plain.json = false;
  if (f.output.empty()) return Scan(plain, f, std::cout);
  std::ofstream file(f.output, std::ios::binary | std::ios::trunc);
  if (!file) return Status::InvalidArgument("cannot write '" + f.output + "'");
  RETURN_NOT_OK(Scan(plain, f, file));
  file.close();
  if (!file) return Status::Unavailable("writing '" + f.output + "' failed");
  return Status::OK();
}

void AddTarget(CLI::App* cmd, ReadFlags* f) {
  cmd->add_option("TABLE", f->table, "table name")->required();
  cmd->add_option("--branch", f->branch, "branch (default main)");
  cmd->add_option("--version", f->version,
                  "read as of this manifest version (time travel; see 'loam log')");
}

}  // namespace

void AddReadCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto scan_flags = std::make_shared<ReadFlags>();
  auto* scan = app.add_subcommand("scan", "rows of a table");
  AddTarget(scan, scan_flags.get());
  scan->add_option("--columns", scan_flags->columns, "a,b: only these columns");
  scan->add_option("--where", scan_flags->where,
                   "\"COL OP VALUE\" (OP: = < <= > >=) or \"COL is null\"");
  scan->add_option("--limit", scan_flags->limit, "at most this many rows");
  scan->add_option("--format", scan_flags->format, "table | csv | jsonl");
  scan->callback([&ctx, scan_flags, run] { run(Scan(ctx, *scan_flags, std::cout)); });

  auto get_flags = std::make_shared<ReadFlags>();
  auto* get = app.add_subcommand("get", "the row with these key values");
  get->add_option("TABLE", get_flags->table, "table name")->required();
  get->add_option("KEY", get_flags->key, "one value per key column")->required();
  get->add_option("--branch", get_flags->branch, "branch (default main)");
  get->callback([&ctx, get_flags, run] { run(Get(ctx, *get_flags)); });

  auto count_flags = std::make_shared<ReadFlags>();
  auto* count = app.add_subcommand("count", "number of rows");
  AddTarget(count, count_flags.get());
  count->callback([&ctx, count_flags, run] { run(Count(ctx, *count_flags)); });

  auto export_flags = std::make_shared<ReadFlags>();
  export_flags->format = "csv";
  auto* exp = app.add_subcommand("export", "all rows as CSV or JSON Lines (loads back unchanged)");
  AddTarget(exp, export_flags.get());
  exp->add_option("--format", export_flags->format, "csv | jsonl");
  exp->add_option("--output", export_flags->output, "file (default stdout)");
  exp->callback([&ctx, export_flags, run] { run(Export(ctx, *export_flags)); });
}

}  // namespace loam::cli
