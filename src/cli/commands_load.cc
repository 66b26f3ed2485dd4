// load, runs list, runs show.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/workspace_access.h"
#include "cli/commands.h"
#include "cli/heap.h"
#include "cli/output.h"
#include "common/csv_delimiter.h"
#include "common/error_codes.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "loam/load.h"
#include "service/run_view.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

struct LoadFlags {
  std::string table;
  std::vector<std::string> files;
  std::string mode = "append";
  std::vector<std::string> keys;
  std::string format;
  std::vector<std::string> coerce;
  std::vector<std::string> map;
  std::string schema_policy;
  std::string error_policy = "failRun";
  std::string idempotency_key;
  std::string branch = "main";
  std::string delimiter = ",";
  std::string quote = "\"";
  bool no_header = false;
  std::vector<std::string> columns;
  std::string null_marker, comment_prefix;
  int64_t skip_lines = 0;
  // The limits, set from the flags given (loam/load.h's defaults otherwise).
  int64_t max_rows = 0, max_columns = 0, max_field_bytes = 0, max_json_depth = 0;
  int64_t max_decoded_bytes = 0, time_budget_ms = 0;
  double max_expansion_ratio = 0;
  std::map<std::string, CLI::Option*> given;
  int64_t key_memory_mib = 512;
  int64_t max_errors = 1000;
};

// A run's record as stored (docs/format/control.md), as `load` and `runs`
// print it.
void PrintRecord(const json& r, std::ostream& out) {
  const json& c = r["counters"];
  const bool dry = r.value("validationOnly", false);
  out << "run " << StringAt(r, "id") << ": " << StringAt(r, "state")
      << (dry ? " (validation only: nothing written)" : "") << "\n  table " << StringAt(r, "table");
  const json request = r.value("request", json::object());
  if (request.is_object() && StringAt(request, "mode") == "delete") {
    const bool by_keys = !request.contains("where");
    out << (by_keys ? ", " + std::to_string(c.value("rowsRead", int64_t{0})) + " keys read" : "")
        << "\n  " << (dry ? "would delete " : "deleted ") << c.value("deleted", int64_t{0})
        << " rows\n";
  } else {
    out << ", " << c.value("rowsRead", int64_t{0}) << " rows read ("
        << c.value("bytesRead", uint64_t{0}) << " bytes)\n"
        << "  " << (dry ? "would insert " : "inserted ") << c.value("inserted", int64_t{0})
        << ", updated " << c.value("updated", int64_t{0}) << ", unchanged "
        << c.value("unchanged", int64_t{0}) << ", deleted " << c.value("deleted", int64_t{0})
        << ", rejected " << c.value("rejected", int64_t{0}) << "\n";
  }
  const json& commit = r["commit"];
  if (!StringAt(commit, "commitId").empty()) {
    out << "  commit " << StringAt(commit, "commitId") << " at manifest version "
        << commit.value("manifestVersion", uint64_t{0}) << ", table version "
        << commit.value("tableVersion", int64_t{0}) << "\n";
  }
  const int64_t started = r["timings"].value("startedMicros", int64_t{0});
  const int64_t finished = r["timings"].value("finishedMicros", int64_t{0});
  if (finished > 0 && started > 0) out << "  took " << (finished - started) / 1000 << " ms\n";
  if (!StringAt(r, "error").empty()) {
    out << "  error (" << StringAt(r, "errorCode") << "): " << StringAt(r, "error") << "\n";
  }
  // A partial run's rows left out; a failed run's invalid rows when there
  // are several (the error names the first).
  const json& errors = r["errors"];
  const bool partial = StringAt(r, "state") == "partial";
  const int64_t kept = r.value("errorCount", static_cast<int64_t>(errors.size()));
  if (!partial && kept < 2) return;
  for (const json& e : errors) {
    out << (partial ? "  rejected: " : "  invalid: ") << StringAt(e, "reason") << "\n";
  }
  const int64_t more =
      (partial ? c.value("rejected", int64_t{0}) : kept) - static_cast<int64_t>(errors.size());
  if (more > 0) {
    out << "  (" << more << " more; `loam runs errors " << StringAt(r, "id") << "` lists "
        << (partial && c.value("rejected", int64_t{0}) > kept ? "the first " + std::to_string(kept)
                                                              : std::string("each"))
        << ")\n";
  }
}

// A one-line progress bar on a terminal's stderr, redrawn at most 5 times a second.
class Progress {
 public:
  explicit Progress(uint64_t total_bytes) : total_(total_bytes), tty_(isatty(2) == 1) {}
  void Update(const LoadProgress& p) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (secs < 1.0) return;  // short loads show no bar
    const double rate = static_cast<double>(p.rows_read) / secs;
    const double done =
        total_ ? static_cast<double>(p.bytes_read) / static_cast<double>(total_) : 0;
    std::fprintf(stderr, "\r%s: %.1f MB, %lld rows, %.0f rows/s", p.state.c_str(),
                 static_cast<double>(p.bytes_read) / 1e6, static_cast<long long>(p.rows_read),
                 rate);
    if (done > 0 && done <= 1)
      std::fprintf(stderr, ", %3.0f%%, ETA %.0f s   ", done * 100, secs / done - secs);
    shown_ = true;
  }
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\n");
  }

 private:
  uint64_t total_;
  bool tty_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_{};
};

Result<std::string> ReadSchemaPolicy(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read schema policy '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

LoadLimits LimitsOf(const LoadFlags& f) {
  const auto given = [&f](const char* flag) { return f.given.at(flag)->count() > 0; };
  LoadLimits l;
  if (given("--max-rows")) l.max_rows = f.max_rows;
  if (given("--max-columns")) l.max_columns = f.max_columns;
  if (given("--max-field-bytes")) l.max_field_bytes = f.max_field_bytes;
  if (given("--max-json-depth")) l.max_json_depth = f.max_json_depth;
  if (given("--max-decoded-bytes")) l.max_decoded_bytes = f.max_decoded_bytes;
  if (given("--max-expansion-ratio")) l.max_expansion_ratio = f.max_expansion_ratio;
  if (given("--time-budget-ms")) l.time_budget_ms = f.time_budget_ms;
  return l;
}

Result<LoadRequest> BuildRequest(const LoadFlags& f) {
  LoadRequest r;
  r.table = f.table;
  r.branch = f.branch;
  r.mode = f.mode == "upsert"    ? LoadMode::kUpsert
           : f.mode == "replace" ? LoadMode::kReplace
                                 : LoadMode::kAppend;
  r.keys = f.keys;
  if (!f.format.empty()) {
    ASSIGN_OR_RETURN(r.format, ParseLoadFormat(f.format));
  }
  r.files = f.files;
  if (!f.schema_policy.empty()) {
    ASSIGN_OR_RETURN(r.schema_policy_json, ReadSchemaPolicy(f.schema_policy));
  }
  r.coercions = f.coerce;
  r.column_map = f.map;
  ASSIGN_OR_RETURN(r.bad_rows, ParseBadRows(f.error_policy));
  r.idempotency_key = f.idempotency_key;
  const std::string delimiter = f.delimiter == "\\t" ? std::string("\t") : f.delimiter;
  RETURN_NOT_OK(CheckCsvDelimiter(delimiter, "--delimiter (\\t for a tab)"));
  r.csv_delimiter = delimiter[0];
  if (f.quote.size() != 1) return Status::InvalidArgument("--quote must be one character");
  r.csv.quote = f.quote[0];
  r.csv.header = !f.no_header;
  r.csv.columns = f.columns;
  r.csv.null_marker = f.null_marker;
  r.csv.skip_lines = f.skip_lines;
  r.csv.comment_prefix = f.comment_prefix;
  r.limits = LimitsOf(f);
  r.key_memory_bytes = static_cast<uint64_t>(f.key_memory_mib) << 20;
  r.max_errors = f.max_errors;
  return r;
}

}  // namespace

// The command's own knobs (docs/cli.md): the run lease of its tests, the
// skipRows feature flag, crash failpoints.
internal::LoadTuning Tuning() {
  internal::LoadTuning t;
  t.lease_micros = EnvInt("LOAM_RUN_LEASE_MILLIS", 30'000) * 1000;
  const char* skip = std::getenv("LOAM_FEATURE_SKIP_ROWS");
  t.skip_rows_enabled = skip != nullptr && std::string(skip) == "true";
  t.failpoint = Context::CrashHook();
  return t;
}

int ReportRun(const Context& ctx, const LoadResult& done) {
  const json record = json::parse(done.record_json);
  if (ctx.json) {
    json out = record;
    out["reused"] = done.reused;
    std::cout << out.dump() << "\n";
  } else {
    if (done.reused)
      std::cout << "idempotency key matched a finished run; nothing was done again\n";
    PrintRecord(record, std::cout);
  }
  if (done.state == "succeeded") return kExitOk;
  if (done.state == "partial") return kExitPartial;
  if (done.state == "cancelled") return kExitRunFailed;
  return ExitCodeFor(ErrorCodeFromName(done.error_code));
}

namespace {

int Load(const Context& ctx, const LoadFlags& flags) {
  // LOAM_HEAP_TUNING (docs/cli.md): "off", "noprefault", or on by default.
  const char* tuning_env = std::getenv("LOAM_HEAP_TUNING");
  const std::string tuning = tuning_env != nullptr ? tuning_env : "";
  if (tuning != "off") TuneHeap();  // before the load's threads start
  Result<LoadRequest> req = BuildRequest(flags);
  if (!req.ok()) return Report(ctx, req.status());
  Result<std::unique_ptr<Workspace>> ws = ctx.OpenPublic();
  if (!ws.ok()) return Report(ctx, ws.status());
  uint64_t total = 0;
  for (const std::string& f : req->files) {
    std::error_code ec;
    total += std::filesystem::file_size(f, ec);
  }
  const bool prefault_heap = tuning != "off" && tuning != "noprefault";
  HeapPrefault prefault(prefault_heap ? LoadWorkingSet(req->mode == LoadMode::kUpsert, total) : 0);
  Progress progress(total);
  Result<LoadResult> done = internal::LoadWith(
      **ws, *req, Tuning(), [&progress](const LoadProgress& p) { progress.Update(p); });
  if (!done.ok()) return Report(ctx, done.status());
  return ReportRun(ctx, *done);
}

Status RunsList(const Context& ctx, const std::string& table) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<LoadResult> all, ListRuns(*ws));
  json out = json::array();
  TextTable t({"run", "state", "table", "mode", "rows", "inserted", "updated", "unchanged",
               "deleted", "error"});
  for (const LoadResult& r : all) {
    if (!table.empty() && r.table != table) continue;
    out.push_back(json::parse(r.record_json));
    t.Add({r.run_id, r.state + (r.validation_only ? " (dry)" : ""), r.table, r.mode,
           std::to_string(r.rows_read), std::to_string(r.inserted), std::to_string(r.updated),
           std::to_string(r.unchanged), std::to_string(r.deleted), r.error_code});
  }
  if (ctx.json) {
    std::cout << out.dump() << "\n";
  } else {
    t.Print(std::cout);
  }
  return Status::OK();
}

Status RunsShow(const Context& ctx, const std::string& id) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(LoadResult r, GetRun(*ws, id));
  if (ctx.json) {
    std::cout << r.record_json << "\n";
    return Status::OK();
  }
  const json record = json::parse(r.record_json);
  PrintRecord(record, std::cout);
  std::cout << "  request " << record["request"].dump() << "\n";
  return Status::OK();
}

// Every error a run kept: JSON Lines with --json, else one line each.
Status RunsErrors(const Context& ctx, const std::string& id) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<RunInfo::Error> errors, GetRunErrors(*ws, id));
  TextTable t({"file", "line", "offset", "column", "code", "reason"});
  for (const RunInfo::Error& e : errors) {
    if (ctx.json) {
      std::cout << service::RunErrorJson(e).dump(-1, ' ', false, json::error_handler_t::replace)
                << "\n";
      continue;
    }
    t.Add({e.file, e.line > 0 ? std::to_string(e.line) : "",
           e.offset >= 0 ? std::to_string(e.offset) : "", e.column, e.code, e.reason});
  }
  if (!ctx.json) t.Print(std::cout);
  return Status::OK();
}

// Asks the process holding a run to stop it.
Status RunsCancel(const Context& ctx, const std::string& id) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(LoadResult r, CancelRun(*ws, id));
  if (ctx.json) {
    std::cout << r.record_json << "\n";
  } else {
    std::cout << "run " << r.run_id << " (" << r.state
              << ") asked to stop: the process that holds it ends it cancelled before its commit, "
                 "or, if it already asked for the commit, the run ends as that commit does\n";
  }
  return Status::OK();
}

}  // namespace

void AddLoadCommands(CLI::App& app, Context& ctx, int* exit) {
  auto flags = std::make_shared<LoadFlags>();
  auto* load = app.add_subcommand(
      "load", "load CSV / JSON Lines files into a table as one all-or-nothing run");
  load->add_option("TABLE", flags->table, "target table")->required();
  load->add_option("FILE", flags->files, "input files (gzip / zstd detected)")->required();
  load->add_option("--mode", flags->mode, "append | upsert | replace")
      ->check(CLI::IsMember({"append", "upsert", "replace"}));
  load->add_option("--key", flags->keys, "upsert key column (default: the table's keys)");
  load->add_option("--format", flags->format, "csv | jsonl (default: by file name)");
  load->add_option("--coerce", flags->coerce, "COLUMN:KIND, e.g. at:iso8601ToTimestamp");
  load->add_option("--map", flags->map,
                   "SOURCE=TARGET: the input's column SOURCE loads the table's TARGET");
  load->add_option("--schema-policy", flags->schema_policy,
                   "JSON file with the strict policy's coercions");
  load->add_option("--error-policy", flags->error_policy, "failRun | validationOnly | skipRows");
  load->add_option("--idempotency-key", flags->idempotency_key,
                   "repeat-safe key: same key + same request = same run");
  load->add_option("--branch", flags->branch, "branch to load into");
  load->add_option("--delimiter", flags->delimiter, "CSV delimiter (one character; \\t for tab)");
  load->add_option("--quote", flags->quote, "CSV quote character (default \")");
  load->add_flag("--no-header", flags->no_header, "the CSV input has no header row (--columns)");
  load->add_option("--columns", flags->columns, "no header: the fields' column names, in order")
      ->delimiter(',');
  load->add_option("--null-marker", flags->null_marker,
                   "an unquoted CSV field equal to it is a missing value (e.g. NA)");
  load->add_option("--skip-lines", flags->skip_lines, "lines before the CSV header to skip");
  load->add_option("--comment-prefix", flags->comment_prefix,
                   "CSV lines starting with it are skipped (e.g. #)");
  const auto limit = [&](const char* flag, auto* value, const char* what) {
    flags->given[flag] = load->add_option(flag, *value, what);
  };
  limit("--max-rows", &flags->max_rows, "rows per run");
  limit("--max-columns", &flags->max_columns, "columns per row");
  limit("--max-field-bytes", &flags->max_field_bytes, "bytes per value");
  limit("--max-json-depth", &flags->max_json_depth, "nesting of json values");
  limit("--max-decoded-bytes", &flags->max_decoded_bytes, "decoded bytes per file");
  limit("--max-expansion-ratio", &flags->max_expansion_ratio,
        "decoded / compressed bytes (zip-bomb guard)");
  limit("--time-budget-ms", &flags->time_budget_ms, "parse and validate within this time");
  load->add_option("--max-errors", flags->max_errors,
                   "invalid rows listed before validation stops (skipRows: positions kept)")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000}));
  load->add_option("--key-memory-mib", flags->key_memory_mib,
                   "memory for a keyed run's key checks; past it they spill to TMPDIR")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  load->callback([&ctx, flags, exit] { *exit = Load(ctx, *flags); });

  auto run = ctx.Runner(exit);
  auto* runs = app.add_subcommand("runs", "past and current runs");
  runs->require_subcommand(1);
  auto* list = runs->add_subcommand("list", "runs, newest first");
  auto* table = list->add_option("--table", "only runs into this table");
  list->callback(
      [&ctx, table, run] { run(RunsList(ctx, table->count() ? table->as<std::string>() : "")); });
  auto* show = runs->add_subcommand("show", "one run's record");
  auto* id = show->add_option("RUN_ID", "run id")->required();
  show->callback([&ctx, id, run] { run(RunsShow(ctx, id->as<std::string>())); });
  auto* errors = runs->add_subcommand("errors", "every error a run kept, in input order");
  auto* errors_id = errors->add_option("RUN_ID", "run id")->required();
  errors->callback([&ctx, errors_id, run] { run(RunsErrors(ctx, errors_id->as<std::string>())); });
  auto* cancel = runs->add_subcommand("cancel", "ask the process holding a run to stop it");
  auto* cancel_id = cancel->add_option("RUN_ID", "run id")->required();
  cancel->callback([&ctx, cancel_id, run] { run(RunsCancel(ctx, cancel_id->as<std::string>())); });
}

}  // namespace loam::cli
