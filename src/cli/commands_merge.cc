// branch merge, revert-merge and protect: a branch's changes published on the
// branch it was created from, with the checks that must hold first, and
// undone as one unit; a branch that takes merges only (docs/branches.md).
#include <charconv>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/status_macros.h"
#include "server/merge_json.h"
#include "sql/sql.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

struct MergeFlags {
  std::string branch;
  std::string into = "main";
  std::string id;
  std::vector<std::string> expect_rows;    // TABLE=MIN..MAX
  std::vector<std::string> expect_unique;  // TABLE=COL[,COL...]
  std::vector<std::string> expect_empty;   // SQL that must return no row
};

Result<std::optional<int64_t>> Bound(std::string_view text, const std::string& flag) {
  if (text.empty()) return std::optional<int64_t>();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) {
    return Status::InvalidArgument(flag + ": '" + std::string(text) +
                                   "' is not a row count (0 or more)");
  }
  return std::optional<int64_t>(v);
}

// "TABLE=MIN..MAX" (either bound may be left out) or "TABLE=N" (exactly).
Result<MergeCheck> RowsCheck(const std::string& spec) {
  const std::string flag = "--expect-rows " + spec;
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0) {
    return Status::InvalidArgument(flag +
                                   ": expected TABLE=MIN..MAX, TABLE=MIN.., "
                                   "TABLE=..MAX or TABLE=N");
  }
  MergeCheck c;
  c.table = spec.substr(0, eq);
  c.name = "rows of " + c.table;
  const std::string range = spec.substr(eq + 1);
  const size_t dots = range.find("..");
  ASSIGN_OR_RETURN(c.min_rows, Bound(range.substr(0, dots), flag));
  if (dots == std::string::npos) {
    if (!c.min_rows) return Status::InvalidArgument(flag + ": no row count");
    c.max_rows = c.min_rows;
  } else {
    ASSIGN_OR_RETURN(c.max_rows, Bound(std::string_view(range).substr(dots + 2), flag));
  }
  if (c.min_rows && c.max_rows && *c.min_rows > *c.max_rows) {
    return Status::InvalidArgument(flag + ": the minimum is above the maximum");
  }
  return c;
}

// "TABLE=COL[,COL...]".
Result<MergeCheck> UniqueCheck(const std::string& spec) {
  const size_t eq = spec.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return Status::InvalidArgument("--expect-unique " + spec + ": expected TABLE=COL[,COL...]");
  }
  MergeCheck c;
  c.table = spec.substr(0, eq);
  std::string cols = spec.substr(eq + 1);
  for (size_t at = 0; at <= cols.size();) {
    const size_t comma = std::min(cols.find(',', at), cols.size());
    c.unique_columns.push_back(cols.substr(at, comma - at));
    at = comma + 1;
  }
  c.name = "unique (" + cols + ") in " + c.table;
  return c;
}

void PrintTables(const std::vector<MergedTable>& tables) {
  for (const MergedTable& t : tables) {
    std::cout << "  " << t.name << ": " << t.change;
    if (t.change != "dropped") {
      std::cout << ", table version " << t.table_version << ", " << t.row_count.value_or(0)
                << " rows";
    }
    std::cout << "\n";
  }
}

void Print(const Context& ctx, const MergeFlags& f, const MergeResult& r) {
  if (ctx.json) {
    std::cout << server::MergeJson(f.branch, f.into, r).dump() << "\n";
    return;
  }
  if (r.manifest_version == 0) {
    std::cout << "nothing to merge: branch " << f.branch << " changed no table since it was "
              << "created or last merged\n";
    return;
  }
  std::cout << (r.already_merged ? "already merged" : "merged") << " branch " << f.branch
            << " (version " << r.source_version << ") into " << f.into << " at version "
            << r.manifest_version << " (merge " << r.merge_id << ")\n";
  PrintTables(r.tables);
}

int Merge(const Context& ctx, const MergeFlags& f) {
  MergeOptions options;
  options.into = f.into;
  options.merge_id = f.id;
  for (const std::string& spec : f.expect_rows) {
    Result<MergeCheck> c = RowsCheck(spec);
    if (!c.ok()) return Report(ctx, c.status());
    options.checks.push_back(*std::move(c));
  }
  for (const std::string& spec : f.expect_unique) {
    Result<MergeCheck> c = UniqueCheck(spec);
    if (!c.ok()) return Report(ctx, c.status());
    options.checks.push_back(*std::move(c));
  }
  Result<std::unique_ptr<Workspace>> ws = ctx.OpenPublic();
  if (!ws.ok()) return Report(ctx, ws.status());
  if (!f.id.empty()) {  // a retry is answered before the checks run again
    Result<std::optional<MergeResult>> known = (*ws)->FindMerge(f.branch, f.id, f.into);
    if (!known.ok()) return Report(ctx, known.status());
    if (*known) {
      Print(ctx, f, **known);
      return 0;
    }
  }
  // The SQL checks and the merge see one state of the branch.
  Result<uint64_t> pinned = (*ws)->CurrentVersion(f.branch);
  if (!pinned.ok()) return Report(ctx, pinned.status());
  options.version = *pinned;
  for (size_t i = 0; i < f.expect_empty.size(); ++i) {
    sql::SqlOptions at;
    at.at.branch = f.branch;
    at.at.version = *pinned;
    at.principal = (*ws)->principal();
    Status s = sql::ExpectNoRows(**ws, "sql " + std::to_string(i + 1), f.expect_empty[i], at);
    if (!s.ok()) return Report(ctx, s);
  }
  Result<MergeResult> merged = (*ws)->Merge(f.branch, options);
  if (!merged.ok()) return Report(ctx, merged.status());
  Print(ctx, f, *merged);
  return 0;
}

// branch revert-merge ID [--into BRANCH]: the merge undone as one unit.
void AddRevertMergeCommand(CLI::App& branch, Context& ctx, int* exit) {
  auto* revert = branch.add_subcommand(
      "revert-merge", "undo a merge as one unit: its tables back as they were, in one commit");
  auto id = std::make_shared<std::string>();
  auto into = std::make_shared<std::string>("main");
  revert->add_option("ID", *id, "the merge id (loam branch merge prints it; loam log shows it)")
      ->required();
  revert->add_option("--into", *into, "the branch the merge went into (default main)");
  revert->callback([&ctx, id, into, exit] {
    const Status s = [&]() -> Status {
      ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
      ASSIGN_OR_RETURN(MergeRevertResult r, ws->RevertMerge(*id, *into));
      if (ctx.json) {
        std::cout << server::MergeRevertJson(*into, r).dump() << "\n";
        return Status::OK();
      }
      std::cout << (r.already_reverted ? "already reverted" : "reverted") << " merge " << *id
                << " on " << *into << " at version " << r.manifest_version << "\n";
      PrintTables(r.tables);
      return Status::OK();
    }();
    *exit = s.ok() ? 0 : Report(ctx, s);
  });
}

void AddProtectCommand(CLI::App& branch, Context& ctx, int* exit) {
  auto* protect = branch.add_subcommand(
      "protect", "on: only merges change the branch's tables (the workspace owner)");
  auto* p_name = protect->add_option("NAME", "branch name")->required();
  auto* p_on =
      protect->add_option("STATE", "on | off")->required()->check(CLI::IsMember({"on", "off"}));
  protect->callback([&ctx, p_name, p_on, exit] {
    const Status s = [&]() -> Status {
      ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
      const bool on = p_on->as<std::string>() == "on";
      RETURN_NOT_OK(ws->SetBranchProtected(p_name->as<std::string>(), on));
      if (ctx.json) {
        std::cout << json{{"branch", p_name->as<std::string>()}, {"protected", on}}.dump() << "\n";
      } else {
        std::cout << "branch " << p_name->as<std::string>()
                  << (on ? " is protected" : " is not protected") << "\n";
      }
      return Status::OK();
    }();
    *exit = s.ok() ? 0 : Report(ctx, s);
  });
}

}  // namespace

void AddBranchPublishCommands(CLI::App& branch, Context& ctx, int* exit) {
  AddProtectCommand(branch, ctx, exit);
  AddRevertMergeCommand(branch, ctx, exit);
  auto flags = std::make_shared<MergeFlags>();
  auto* merge = branch.add_subcommand(
      "merge", "publish a branch's changed tables on the branch it was created from, at once");
  merge->add_option("NAME", flags->branch, "the branch to merge")->required();
  merge->add_option("--into", flags->into, "the branch it was created from (default main)");
  merge->add_option("--id", flags->id, "merge id: the same id answers an earlier merge again");
  merge->add_option("--expect-rows", flags->expect_rows,
                    "TABLE=MIN..MAX: the branch's table must hold that many rows (either "
                    "bound optional; TABLE=N for exactly N)");
  merge->add_option("--expect-unique", flags->expect_unique,
                    "TABLE=COL[,COL...]: no two rows of the branch's table share these values");
  merge->add_option("--expect-empty", flags->expect_empty,
                    "SQL that must return no row on the branch (checks named sql 1, sql 2, ...)");
  merge->callback([&ctx, flags, exit] { *exit = Merge(ctx, *flags); });
}

}  // namespace loam::cli
