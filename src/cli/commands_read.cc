// scan, get, count, export.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "ingest/where_clause.h"

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

Result<Value> ParseValue(const Field& field, const std::string& text) {
  return ingest::ParseFieldValue(field, text);
}

Result<Predicate> ParseWhere(const Schema& schema, const std::string& text) {
  Result<Predicate> p = ingest::ParseWhere(schema, text);
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

struct Opened {
  std::shared_ptr<WorkspaceEngine> ws;
  Snapshot snap;
  std::optional<Dataset> table;
  Schema schema;
};

Result<Opened> OpenForRead(const Context& ctx, const ReadFlags& f) {
  Opened o;
  ASSIGN_OR_RETURN(o.ws, ctx.Open());
  const std::string branch = f.branch == "main" ? "" : f.branch;
  if (f.version >= 0) {
    ASSIGN_OR_RETURN(o.snap, o.ws->SnapshotAt(branch, static_cast<uint64_t>(f.version)));
  } else {
    ASSIGN_OR_RETURN(o.snap, o.ws->Current(branch));
  }
  ASSIGN_OR_RETURN(Dataset table, o.ws->OpenTable(o.snap, f.table));
  o.table = std::move(table);
  o.schema = o.snap.Find(f.table)->def.schema;
  return o;
}

Status Scan(const Context& ctx, const ReadFlags& f, std::vector<Predicate> where,
            std::ostream& out) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  ScanSpec spec;
  spec.columns = SplitComma(f.columns);
  for (const std::string& c : spec.columns) {
    if (o.schema.IndexOf(c) < 0)
      return Status::InvalidArgument("--columns: no column '" + c + "' in '" + f.table + "'");
  }
  if (!f.where.empty()) {
    ASSIGN_OR_RETURN(Predicate p, ParseWhere(o.schema, f.where));
    where.push_back(std::move(p));
  }
  spec.where = std::move(where);
  ASSIGN_OR_RETURN(RowFormat format, ParseRowFormat(ctx.json ? "jsonl" : f.format));
  ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, o.table->Scan(spec));
  Schema shape;
  if (spec.columns.empty()) {
    shape = o.schema;
  } else {
    for (const std::string& c : spec.columns)
      shape.fields.push_back(o.schema.fields[o.schema.IndexOf(c)]);
  }
  RowWriter writer(out, format, shape);
  int64_t left = f.limit < 0 ? INT64_MAX : f.limit;
  for (const RecordBatch& b : batches) {
    if (left <= 0) break;
    const int64_t take = std::min<int64_t>(left, b.num_rows());
    writer.Write(take == b.num_rows() ? b : b.Slice(0, take));
    left -= take;
  }
  writer.Finish();
  if (format == RowFormat::kTable) {
    out << "(" << writer.rows() << (writer.rows() == 1 ? " row)\n" : " rows)\n");
  }
  return Status::OK();
}

Status Get(const Context& ctx, const ReadFlags& f) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  const std::vector<std::string>& keys = o.snap.Find(f.table)->def.keys;
  if (keys.empty())
    return Status::InvalidArgument("table '" + f.table +
                                   "' declares no key columns; use scan --where");
  if (f.key.size() != keys.size()) {
    std::string names;
    for (const auto& k : keys) names += (names.empty() ? "" : ", ") + k;
    return Status::InvalidArgument("get takes one value per key column (" + names + ")");
  }
  std::vector<Predicate> where;
  for (size_t i = 0; i < keys.size(); ++i) {
    ASSIGN_OR_RETURN(Value v, ParseValue(o.schema.fields[o.schema.IndexOf(keys[i])], f.key[i]));
    where.push_back(Predicate::Eq(keys[i], v));
  }
  std::ostringstream buf;
  RETURN_NOT_OK(Scan(ctx, f, where, buf));
  std::cout << buf.str();
  if (buf.str().find("(0 rows)") != std::string::npos || (ctx.json && buf.str().empty())) {
    return Status::NotFound("no row of '" + f.table + "' has that key");
  }
  return Status::OK();
}

Status Count(const Context& ctx, const ReadFlags& f) {
  ASSIGN_OR_RETURN(Opened o, OpenForRead(ctx, f));
  const int64_t rows = static_cast<int64_t>(o.table->CountRows());
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
  if (f.output.empty()) return Scan(plain, f, {}, std::cout);
  std::ofstream file(f.output, std::ios::binary | std::ios::trunc);
  if (!file) return Status::InvalidArgument("cannot write '" + f.output + "'");
  RETURN_NOT_OK(Scan(plain, f, {}, file));
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
  scan->callback([&ctx, scan_flags, run] { run(Scan(ctx, *scan_flags, {}, std::cout)); });

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
