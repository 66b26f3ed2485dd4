// load, runs list, runs show.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "cli/heap.h"
#include "cli/output.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "ingest/csv_reader.h"
#include "ingest/loader.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;
using namespace loam::ingest;

struct LoadFlags {
  std::string table;
  std::vector<std::string> files;
  std::string mode = "append";
  std::vector<std::string> keys;
  std::string format;
  std::vector<std::string> coerce;
  std::string schema_policy;
  std::string error_policy = "failRun";
  std::string idempotency_key;
  std::string branch = "main";
  std::string delimiter = ",";
  RunRequest limits;  // only the limit fields are read
  int64_t key_memory_mib = StagerOptions::kDefaultKeyMemoryBytes >> 20;
};

json RecordJson(const RunRecord& r) { return json::parse(r.ToJson()); }

void PrintRecord(const RunRecord& r, std::ostream& out) {
  const auto& c = r.counters;
  out << "run " << r.id << ": " << RunStateName(r.state)
      << (r.validation_only ? " (validation only: nothing written)" : "") << "\n  table " << r.table
      << ", " << c.rows_read << " rows read (" << c.bytes_read << " bytes)\n"
      << "  " << (r.validation_only ? "would insert " : "inserted ") << c.inserted << ", updated "
      << c.updated << ", unchanged " << c.unchanged << ", deleted " << c.deleted << ", rejected "
      << c.rejected << "\n";
  if (!r.commit_id.empty()) {
    out << "  commit " << r.commit_id << " at manifest version " << r.manifest_version
        << ", table version " << r.table_version << "\n";
  }
  if (r.finished_micros > 0 && r.started_micros > 0) {
    out << "  took " << (r.finished_micros - r.started_micros) / 1000 << " ms\n";
  }
  if (!r.error.empty()) out << "  error (" << r.error_code << "): " << r.error << "\n";
  if (r.state == RunState::kPartial) {
    for (const RunError& e : r.errors) out << "  rejected: " << e.reason << "\n";
    if (r.counters.rejected > static_cast<int64_t>(r.errors.size())) {
      out << "  (" << r.counters.rejected - static_cast<int64_t>(r.errors.size()) << " more)\n";
    }
  }
}

// A one-line progress bar on a terminal's stderr, redrawn at most 5 times a second.
class Progress {
 public:
  explicit Progress(uint64_t total_bytes) : total_(total_bytes), tty_(isatty(2) == 1) {}
  void Update(const RunRecord& r) {
    if (!tty_) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(200)) return;
    last_ = now;
    const double secs = std::chrono::duration<double>(now - start_).count();
    if (secs < 1.0) return;  // short loads show no bar
    const double rate = static_cast<double>(r.counters.rows_read) / secs;
    const double done =
        total_ ? static_cast<double>(r.counters.bytes_read) / static_cast<double>(total_) : 0;
    std::fprintf(stderr, "\r%s: %.1f MB, %lld rows, %.0f rows/s",
                 std::string(RunStateName(r.state)).c_str(),
                 static_cast<double>(r.counters.bytes_read) / 1e6,
                 static_cast<long long>(r.counters.rows_read), rate);
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

Result<RunRequest> BuildRequest(const Context& ctx, const LoadFlags& f) {
  RunRequest r = f.limits;
  r.table = f.table;
  r.branch = f.branch == "main" ? "" : f.branch;
  ASSIGN_OR_RETURN(r.mode, ParseLoadMode(f.mode));
  r.keys = f.keys;
  if (!f.format.empty()) {
    ASSIGN_OR_RETURN(r.format, ParseInputFormat(f.format));
  }
  for (const std::string& file : f.files) {
    std::error_code ec;
    r.files.push_back(std::filesystem::absolute(file, ec).lexically_normal().string());
  }
  if (!f.schema_policy.empty()) {
    std::ifstream in(f.schema_policy);
    if (!in) return Status::NotFound("cannot read schema policy '" + f.schema_policy + "'");
    std::stringstream text;
    text << in.rdbuf();
    ASSIGN_OR_RETURN(r.policy, SchemaPolicy::FromJson(text.str()));
  }
  for (const std::string& c : f.coerce) RETURN_NOT_OK(r.policy.AddFlag(c));
  ASSIGN_OR_RETURN(r.error_policy, ParseErrorPolicy(f.error_policy));
  r.idempotency_key = f.idempotency_key;
  r.principal = ctx.principal;
  const std::string delimiter = f.delimiter == "\\t" ? std::string("\t") : f.delimiter;
  RETURN_NOT_OK(CheckCsvDelimiter(delimiter, "--delimiter (\\t for a tab)"));
  r.limits.csv_delimiter = delimiter[0];
  return r;
}

int Load(const Context& ctx, const LoadFlags& flags) {
  // LOAM_HEAP_TUNING (docs/cli.md): "off", "noprefault", or on by default.
  const char* tuning_env = std::getenv("LOAM_HEAP_TUNING");
  const std::string tuning = tuning_env != nullptr ? tuning_env : "";
  if (tuning != "off") TuneHeap();  // before the load's threads start
  Result<RunRequest> req = BuildRequest(ctx, flags);
  if (!req.ok()) return Report(ctx, req.status());
  Result<std::shared_ptr<WorkspaceEngine>> ws = ctx.Open();
  if (!ws.ok()) return Report(ctx, ws.status());
  uint64_t total = 0;
  for (const std::string& f : req->files) {
    std::error_code ec;
    total += std::filesystem::file_size(f, ec);
  }
  const bool prefault_heap = tuning != "off" && tuning != "noprefault";
  HeapPrefault prefault(
      prefault_heap ? LoadWorkingSet(req->mode == ingest::LoadMode::kUpsert, total) : 0);
  Progress progress(total);
  LoaderOptions opts;
  opts.lease_micros = EnvInt("LOAM_RUN_LEASE_MILLIS", 30'000) * 1000;
  opts.skip_rows_enabled = std::getenv("LOAM_FEATURE_SKIP_ROWS") != nullptr &&
                           std::string(std::getenv("LOAM_FEATURE_SKIP_ROWS")) == "true";
  opts.on_progress = [&](const RunRecord& r) { progress.Update(r); };
  opts.key_memory_bytes = static_cast<size_t>(flags.key_memory_mib) << 20;
  opts.failpoint = Context::CrashHook();
  Loader loader(*ws, opts);
  bool reused = false;
  Result<RunRecord> rec = loader.Run(*req, &reused);
  if (!rec.ok()) return Report(ctx, rec.status());
  if (ctx.json) {
    json out = RecordJson(*rec);
    out["reused"] = reused;
    std::cout << out.dump() << "\n";
  } else {
    if (reused) std::cout << "idempotency key matched a finished run; nothing was done again\n";
    PrintRecord(*rec, std::cout);
  }
  if (rec->state == RunState::kSucceeded) return kExitOk;
  if (rec->state == RunState::kPartial) return kExitPartial;
  return ExitCodeFor(ErrorCodeFromName(rec->error_code));
}

Status RunsList(const Context& ctx, const std::string& table) {
  ASSIGN_OR_RETURN(auto ws, ctx.Open());
  RunStore runs(ws->store(), ws->root());
  ASSIGN_OR_RETURN(std::vector<RunRecord> all, runs.List());
  json out = json::array();
  TextTable t({"run", "state", "table", "mode", "rows", "inserted", "updated", "unchanged",
               "deleted", "error"});
  for (const RunRecord& r : all) {
    if (!table.empty() && r.table != table) continue;
    const json req = json::parse(r.request);
    out.push_back(RecordJson(r));
    t.Add({r.id, std::string(RunStateName(r.state)) + (r.validation_only ? " (dry)" : ""), r.table,
           StringAt(req, "mode"), std::to_string(r.counters.rows_read),
           std::to_string(r.counters.inserted), std::to_string(r.counters.updated),
           std::to_string(r.counters.unchanged), std::to_string(r.counters.deleted), r.error_code});
  }
  if (ctx.json) {
    std::cout << out.dump() << "\n";
  } else {
    t.Print(std::cout);
  }
  return Status::OK();
}

Status RunsShow(const Context& ctx, const std::string& id) {
  ASSIGN_OR_RETURN(auto ws, ctx.Open());
  RunStore runs(ws->store(), ws->root());
  ASSIGN_OR_RETURN(RunRecord r, runs.Get(id));
  if (ctx.json) {
    std::cout << r.ToJson() << "\n";
    return Status::OK();
  }
  PrintRecord(r, std::cout);
  std::cout << "  request " << r.request << "\n";
  if (r.state != RunState::kPartial) {
    for (const RunError& e : r.errors) std::cout << "  rejected: " << e.reason << "\n";
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
  load->add_option("--schema-policy", flags->schema_policy,
                   "JSON file with the strict policy's coercions");
  load->add_option("--error-policy", flags->error_policy, "failRun | validationOnly | skipRows");
  load->add_option("--idempotency-key", flags->idempotency_key,
                   "repeat-safe key: same key + same request = same run");
  load->add_option("--branch", flags->branch, "branch to load into");
  load->add_option("--delimiter", flags->delimiter, "CSV delimiter (one character; \\t for tab)");
  load->add_option("--max-rows", flags->limits.max_rows, "rows per run");
  load->add_option("--max-columns", flags->limits.limits.max_columns, "columns per row");
  load->add_option("--max-field-bytes", flags->limits.limits.max_field_bytes, "bytes per value");
  load->add_option("--max-json-depth", flags->limits.limits.max_json_depth,
                   "nesting of json values");
  load->add_option("--max-decoded-bytes", flags->limits.limits.decode.max_decoded_bytes,
                   "decoded bytes per file");
  load->add_option("--max-expansion-ratio", flags->limits.limits.decode.max_expansion_ratio,
                   "decoded / compressed bytes (zip-bomb guard)");
  load->add_option("--time-budget-ms", flags->limits.time_budget_ms,
                   "parse and validate within this time");
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
}

}  // namespace loam::cli
