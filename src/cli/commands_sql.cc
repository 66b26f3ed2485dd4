// sql: statements over the workspace's tables at one state (docs/sql.md),
// from the command line, a file, standard input, or a prompt with history
// on a terminal.
#include <editline/readline.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "sql/sql.h"

namespace loam::cli {
namespace {

struct SqlFlags {
  std::string query;
  std::string file;
  std::string branch = "main";
  int64_t version = -1;  // -1: the branch's current version
  std::string format = "table";
  int64_t time_budget_millis = 30'000;
  int64_t max_rows = -1;
};

// Each statement's answer as `scan` prints rows: a table (with its count),
// CSV with a header, or JSON Lines (one object per row).
class PrintingSink : public sql::SqlSink {
 public:
  PrintingSink(std::ostream& out, RowFormat format) : out_(out), format_(format) {}

  Status Begin(const std::vector<sql::SqlColumn>& columns) override {
    names_.clear();
    for (const sql::SqlColumn& c : columns) names_.push_back(c.name);
    if (format_ == RowFormat::kTable) table_ = std::make_unique<TextTable>(names_);
    if (format_ == RowFormat::kCsv) {
      std::string line;
      for (size_t i = 0; i < names_.size(); ++i) {
        line += (i ? "," : "") + CsvQuote(names_[i], false);
      }
      out_ << line << "\n";
    }
    return Status::OK();
  }

  Status Row(const std::vector<sql::SqlValue>& row) override {
    std::string line, text;
    std::vector<std::string> cells;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool null = std::holds_alternative<std::monostate>(row[i]);
      text.clear();
      if (format_ == RowFormat::kJsonLines) {
        line += (i ? "," : "{") + nlohmann::json(names_[i]).dump() + ":";
        sql::AppendJsonValue(row[i], &line);
        continue;
      }
      sql::AppendText(row[i], &text);
      if (format_ == RowFormat::kTable) {
        cells.push_back(TableCell(null ? "null" : text));
      } else {
        line += (i ? "," : "") + CsvQuote(text, null);
      }
    }
    if (format_ == RowFormat::kTable) {
      table_->Add(std::move(cells));
    } else {
      out_ << (format_ == RowFormat::kJsonLines ? (row.empty() ? "{}" : line + "}") : line) << "\n";
    }
    return Status::OK();
  }

  Status End(int64_t rows, bool truncated) override {
    if (format_ == RowFormat::kTable) {
      table_->Print(out_);
      out_ << "(" << rows << (rows == 1 ? " row" : " rows") << (truncated ? ", cut short" : "")
           << ")\n";
    }
    out_.flush();
    return Status::OK();
  }

 private:
  std::ostream& out_;
  RowFormat format_;
  std::vector<std::string> names_;
  std::unique_ptr<TextTable> table_;
};

Result<std::string> ReadScript(const SqlFlags& f) {
  std::stringstream text;
  if (!f.file.empty() && f.file != "-") {
    std::ifstream in(f.file, std::ios::binary);
    if (!in) return Status::NotFound("cannot read '" + f.file + "'");
    text << in.rdbuf();
  } else {
    text << std::cin.rdbuf();
  }
  return text.str();
}

// Statements typed at a prompt, each run when complete (its `;`), with the
// lines kept in ~/.loam_sql_history; the end of input (Ctrl-D) or a line
// ".quit" / ".exit" ends it.
Status Prompt(const Workspace& ws, const sql::SqlOptions& options, PrintingSink& sink) {
  const char* home = std::getenv("HOME");
  const std::string history = home != nullptr ? std::string(home) + "/.loam_sql_history" : "";
  using_history();
  if (!history.empty()) read_history(history.c_str());
  std::string pending;
  for (;;) {
    char* line = readline(pending.empty() ? "loam> " : "  ...> ");
    if (line == nullptr) break;  // end of input
    const std::string text = line;
    std::free(line);
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (pending.empty() && (text == ".quit" || text == ".exit")) break;
    add_history(text.c_str());
    pending += text + "\n";
    if (sqlite3_complete(pending.c_str()) == 0) continue;
    Status s = sql::RunSql(ws, pending, options, sink);
    if (!s.ok()) std::cerr << "error: " << s.message() << "\n";
    pending.clear();
  }
  if (!history.empty()) write_history(history.c_str());
  std::cout << "\n";
  return Status::OK();
}

Status Sql(const Context& ctx, const SqlFlags& f) {
  ASSIGN_OR_RETURN(RowFormat format, ParseRowFormat(ctx.json ? "jsonl" : f.format));
  if (!f.query.empty() && !f.file.empty()) {
    return Status::InvalidArgument("sql takes a statement or --file, not both");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  sql::SqlOptions options;
  options.at.branch = f.branch;
  if (f.version >= 0) options.at.version = static_cast<uint64_t>(f.version);
  options.time_budget_millis = f.time_budget_millis;
  options.max_rows = f.max_rows;
  PrintingSink sink(std::cout, format);
  if (f.query.empty() && f.file.empty() && ::isatty(STDIN_FILENO) && ::isatty(STDOUT_FILENO)) {
    return Prompt(*ws, options, sink);
  }
  std::string script = f.query;
  if (script.empty()) {
    ASSIGN_OR_RETURN(script, ReadScript(f));
  }
  return sql::RunSql(*ws, script, options, sink);
}

}  // namespace

void AddSqlCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto f = std::make_shared<SqlFlags>();
  auto* cmd =
      app.add_subcommand("sql",
                         "SQL statements over the tables at one state (docs/sql.md); no STATEMENT: "
                         "--file, standard input, or a prompt on a terminal");
  cmd->add_option("STATEMENT", f->query, "one or more statements separated by ';'");
  cmd->add_option("--file", f->file, "read the statements from FILE ('-': standard input)");
  cmd->add_option("--branch", f->branch, "branch (default main)");
  cmd->add_option("--version", f->version,
                  "read every table as of this manifest version (time travel; see 'loam log')");
  cmd->add_option("--format", f->format, "table | csv | jsonl");
  cmd->add_option("--time-budget-ms", f->time_budget_millis,
                  "end a script that runs longer (limit_exceeded); 0: no budget")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-rows", f->max_rows, "print at most this many rows per statement")
      ->check(CLI::NonNegativeNumber);
  cmd->callback([&ctx, f, run] { run(Sql(ctx, *f)); });
}

}  // namespace loam::cli
