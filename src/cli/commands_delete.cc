// delete: rows removed by filter or by a keys file, as a run (docs/cli.md).
#include <iostream>

#include "cli/commands.h"
#include "common/csv_delimiter.h"
#include "common/status_macros.h"
#include "loam/load.h"

namespace loam::cli {
namespace {

struct DeleteFlags {
  std::string table;
  std::vector<std::string> where;
  std::vector<std::string> keys;
  std::vector<std::string> key_columns;
  std::string format;
  std::string delimiter = ",";
  std::string error_policy = "failRun";
  std::string idempotency_key;
  std::string branch = "main";
  CLI::Option* expect_version = nullptr;
  int64_t expected_version = 0;
  CLI::Option* max_keys_given = nullptr;
  int64_t max_keys = 0;
  int64_t max_errors = 1000;
};

Result<DeleteRequest> BuildDelete(const DeleteFlags& f) {
  DeleteRequest d;
  d.table = f.table;
  d.branch = f.branch;
  d.where = f.where;
  d.key_files = f.keys;
  d.key_columns = f.key_columns;
  if (d.where.empty() == d.key_files.empty()) {
    return Status::InvalidArgument(
        "name the rows by --where filters or by --keys files (one of "
        "the two)");
  }
  if (!f.key_columns.empty() && f.keys.empty()) {
    return Status::InvalidArgument("--key-columns goes with --keys");
  }
  if (!f.format.empty()) {
    ASSIGN_OR_RETURN(d.format, ParseLoadFormat(f.format));
  }
  const std::string delimiter = f.delimiter == "\\t" ? std::string("\t") : f.delimiter;
  RETURN_NOT_OK(CheckCsvDelimiter(delimiter, "--delimiter (\\t for a tab)"));
  d.csv_delimiter = delimiter[0];
  ASSIGN_OR_RETURN(BadRows policy, ParseBadRows(f.error_policy));
  if (policy == BadRows::kSkipRows) {
    return Status::InvalidArgument(
        "a delete is all or nothing: --error-policy is failRun or "
        "validationOnly");
  }
  d.validation_only = policy == BadRows::kValidationOnly;
  if (f.max_keys_given->count() > 0) d.max_keys = f.max_keys;
  d.max_errors = f.max_errors;
  d.idempotency_key = f.idempotency_key;
  if (f.expect_version->count() > 0) d.expected_table_version = f.expected_version;
  return d;
}

int Delete(const Context& ctx, const DeleteFlags& flags) {
  Result<DeleteRequest> req = BuildDelete(flags);
  if (!req.ok()) return Report(ctx, req.status());
  Result<std::unique_ptr<Workspace>> ws = ctx.OpenPublic();
  if (!ws.ok()) return Report(ctx, ws.status());
  Result<LoadResult> done = internal::DeleteWith(**ws, *req, Tuning(), {});
  if (!done.ok()) return Report(ctx, done.status());
  return ReportRun(ctx, *done);
}

}  // namespace

void AddDeleteCommands(CLI::App& app, Context& ctx, int* exit) {
  auto flags = std::make_shared<DeleteFlags>();
  auto* del = app.add_subcommand(
      "delete", "delete the rows matching filters, or holding the keys of a file, as one run");
  del->add_option("TABLE", flags->table, "table to delete from")->required();
  del->add_option("--where", flags->where,
                  "COL OP VALUE filter (= < <= > >=, or COL is null); "
                  "several are ANDed");
  del->add_option("--keys", flags->keys, "file of keys (CSV with a header, or JSON Lines)");
  del->add_option("--key-columns", flags->key_columns,
                  "the columns the keys file holds (default: the table's keys)")
      ->delimiter(',');
  del->add_option("--format", flags->format, "csv | jsonl (default: by file name)");
  del->add_option("--delimiter", flags->delimiter, "CSV delimiter (one character; \\t for tab)");
  del->add_option("--error-policy", flags->error_policy,
                  "failRun | validationOnly (count the rows, delete none)");
  del->add_option("--idempotency-key", flags->idempotency_key,
                  "repeat-safe key: same key + same request = same run");
  del->add_option("--branch", flags->branch, "branch to delete on");
  flags->expect_version = del->add_option("--expect-version", flags->expected_version,
                                          "refuse unless the table is at this version");
  flags->max_keys_given = del->add_option("--max-keys", flags->max_keys,
                                          "keys one run reads (at most and by default 1000000)");
  del->add_option("--max-errors", flags->max_errors, "invalid key rows listed")
      ->check(CLI::Range(int64_t{1}, int64_t{100'000}));
  del->callback([&ctx, flags, exit] { *exit = Delete(ctx, *flags); });
}

}  // namespace loam::cli
