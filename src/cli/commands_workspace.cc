// init, log, history, branch, compact, gc, heads verify and repair.
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/output.h"
#include "common/clock.h"
#include "common/status_macros.h"
#include "loam/maintenance.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

std::string Time(int64_t micros) { return FormatUtcSeconds(micros); }

Status Init(const Context& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.InitPublic());
  if (ctx.json) {
    std::cout << json{{"root", ctx.root}, {"owner", ws->owner()}, {"workspaceId", ws->id()}}.dump()
              << "\n";
  } else {
    std::cout << "created workspace " << ctx.root << " (owner " << ws->owner() << ", id "
              << ws->id() << ")\n";
  }
  return Status::OK();
}

Status Info(const Context& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(WorkspaceInfo info, ws->Info());
  if (ctx.json) {
    std::cout << json{{"root", ctx.root},
                      {"workspaceId", info.id},
                      {"owner", info.owner},
                      {"manifestFormat", info.manifest_format},
                      {"manifestVersion", info.version},
                      {"branchCount", info.branches.size()}}
                     .dump()
              << "\n";
    return Status::OK();
  }
  std::cout << "root            " << ctx.root << "\n"
            << "workspace id    " << (info.id.empty() ? "(none: made before ids)" : info.id) << "\n"
            << "owner           " << (info.owner.empty() ? "(none)" : info.owner) << "\n"
            << "manifest format " << info.manifest_format << " (version " << info.version << ")\n"
            << "branches        " << info.branches.size() << " (main and "
            << info.branches.size() - 1 << " more)\n";
  return Status::OK();
}

// The first run a commit records ("" for none).
std::string FirstRun(const LogEntry& c) { return c.run_ids.empty() ? "" : c.run_ids.front(); }

Status Log(const Context& ctx, const std::string& branch) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<LogEntry> commits, ws->Log(branch));
  if (ctx.json) {
    json out = json::array();
    for (const LogEntry& c : commits) {
      out.push_back({{"manifestVersion", c.workspace_version},
                     {"commit", c.commit_id},
                     {"parents", c.parents},
                     {"branch", c.branch},
                     {"actor", c.actor},
                     {"runId", FirstRun(c)},
                     {"runIds", c.run_ids},
                     {"createdMicros", c.created_micros}});
    }
    std::cout << out.dump() << "\n";
    return Status::OK();
  }
  TextTable t({"version", "commit", "time", "actor", "run", "parents"});
  for (const LogEntry& c : commits) {
    std::string parents;
    for (const auto& p : c.parents) parents += (parents.empty() ? "" : " ") + p;
    const std::string runs =
        FirstRun(c) + (c.run_ids.size() > 1 ? " +" + std::to_string(c.run_ids.size() - 1) : "");
    t.Add({std::to_string(c.workspace_version), c.commit_id, Time(c.created_micros), c.actor, runs,
           parents});
  }
  t.Print(std::cout);
  return Status::OK();
}

Status History(const Context& ctx, const std::string& table, const std::string& branch) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<TableEvent> entries, ws->History(table, branch));
  if (ctx.json) {
    json out = json::array();
    for (const TableEvent& e : entries) {
      out.push_back({{"event", e.event},
                     {"name", e.name},
                     {"tableVersion", e.table_version},
                     {"branch", e.branch},
                     {"rowCount", e.row_count ? json(*e.row_count) : json(nullptr)},
                     {"commit", e.commit_id},
                     {"actor", e.actor},
                     {"createdMicros", e.created_micros},
                     {"detail", e.detail}});
    }
    std::cout << out.dump() << "\n";
    return Status::OK();
  }
  TextTable t({"event", "name", "table version", "branch", "rows", "by", "detail", "commit"});
  for (const TableEvent& e : entries) {
    t.Add({e.event, e.name, std::to_string(e.table_version), e.branch,
           e.row_count ? std::to_string(*e.row_count) : "", e.actor, e.detail, e.commit_id});
  }
  t.Print(std::cout);
  return Status::OK();
}

Status BranchCreate(const Context& ctx, const std::string& name, const std::string& from) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ReadOptions base;
  base.branch = from;
  if (const size_t at = from.find('@'); at != std::string::npos) {
    base.branch = from.substr(0, at);
    try {
      base.version = std::stoull(from.substr(at + 1));
    } catch (const std::exception&) {
      return Status::InvalidArgument("--from takes BRANCH[@VERSION] with a numeric version");
    }
  }
  RETURN_NOT_OK(ws->CreateBranch(name, base));
  if (!ctx.json) std::cout << "created branch " << name << " from " << from << "\n";
  if (ctx.json) std::cout << json{{"branch", name}, {"from", from}}.dump() << "\n";
  return Status::OK();
}

Status BranchList(const Context& ctx) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<std::string> branches, ws->ListBranches());
  if (ctx.json) {
    // The branches besides main (main is implied).
    std::cout << json(std::vector<std::string>(branches.begin() + 1, branches.end())).dump()
              << "\n";
  } else {
    for (const auto& b : branches) {
      ASSIGN_OR_RETURN(bool on, ws->BranchProtected(b));
      std::cout << b << (on ? " (protected)" : "") << "\n";
    }
  }
  return Status::OK();
}

Status Compact(const Context& ctx, const std::string& only) {
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
  ASSIGN_OR_RETURN(std::vector<TableCompaction> done, CompactTables(*ws, only));
  json out = json::array();
  for (const TableCompaction& c : done) {
    out.push_back(
        {{"table", c.table}, {"compacted", c.compacted}, {"tableVersion", c.table_version}});
    if (!ctx.json) {
      std::cout << c.table << ": "
                << (c.compacted ? "compacted to version " + std::to_string(c.table_version)
                                : std::string("nothing to compact"))
                << "\n";
    }
  }
  if (ctx.json) std::cout << out.dump() << "\n";
  return Status::OK();
}

Status HeadsVerify(const Context& ctx, const std::string& branch) {
  // Read-only: no recovery on open, nothing published.
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic(/*recover=*/false));
  ASSIGN_OR_RETURN(HeadsCheck r, VerifyHeads(*ws, branch));
  if (ctx.json) {
    std::cout << json{{"manifestVersion", r.workspace_version},
                      {"tablesChecked", r.tables_checked},
                      {"problems", r.problems},
                      {"pendingSidecars", r.pending_sidecars},
                      {"unindexedJournalFragments", r.unindexed_journal_fragments}}
                     .dump()
              << "\n";
  } else {
    std::cout << "checked " << r.tables_checked
              << " table heads and the catalog at manifest version " << r.workspace_version << ": "
              << (r.problems.empty() ? "all match the journal" : "PROBLEMS") << "\n";
    for (const auto& p : r.problems) std::cout << "  " << p << "\n";
    std::cout << "pending write sidecars: " << r.pending_sidecars
              << (r.pending_sidecars ? " (recovered by the next write or open)" : "") << "\n"
              << "journal fragments outside the index: " << r.unindexed_journal_fragments << "\n";
  }
  if (!r.problems.empty()) {
    return Status::DataLoss(std::to_string(r.problems.size()) +
                            " problems: heads or catalog differ from the journal; stop every "
                            "writer, then 'loam heads repair --offline' rewrites them");
  }
  return Status::OK();
}

Status HeadsRepair(const Context& ctx, const std::string& branch, bool offline, bool force) {
  if (!offline) {
    return Status::FailedPrecondition(
        "heads repair rewrites every head of the branch and races any writer: stop every "
        "writer first (loam serve processes, loads, compact and gc), then run it with "
        "--offline");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic(/*recover=*/false));
  ASSIGN_OR_RETURN(HeadsCheck r, RepairHeads(*ws, branch, force));
  if (ctx.json) {
    std::cout << json{{"manifestVersion", r.workspace_version},
                      {"tablesChecked", r.tables_checked},
                      {"repaired", r.repaired}}
                     .dump()
              << "\n";
  } else if (r.repaired.empty()) {
    std::cout << "nothing to repair: " << r.tables_checked
              << " table heads and the catalog match the journal\n";
  } else {
    std::cout << "repaired " << r.repaired.size() << " problems at manifest version "
              << r.workspace_version << " (commit by loam:repair):\n";
    for (const auto& c : r.repaired) std::cout << "  " << c << "\n";
  }
  return Status::OK();
}

}  // namespace

void AddWorkspaceCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);

  auto* init = app.add_subcommand("init", "create a workspace (default ./loam-data)");
  auto* root = init->add_option("ROOT", "where: a directory or s3://bucket/prefix");
  init->callback([&ctx, root, run] {
    if (root->count() > 0) ctx.root = root->as<std::string>();
    run(Init(ctx));
  });

  app.add_subcommand("info", "the workspace's id, owner, format and branch count")
      ->callback([&ctx, run] { run(Info(ctx)); });

  auto* log = app.add_subcommand("log", "the commit log of a branch, newest first");
  auto* log_branch = log->add_option("--branch", "branch (default main)")->default_str("main");
  log->callback([&ctx, log_branch, run] { run(Log(ctx, log_branch->as<std::string>())); });

  auto* history = app.add_subcommand("history", "a table's versions, renames and drops");
  auto* h_table = history->add_option("TABLE", "table name")->required();
  auto* h_branch = history->add_option("--branch", "branch (default main)")->default_str("main");
  history->callback([&ctx, h_table, h_branch, run] {
    run(History(ctx, h_table->as<std::string>(), h_branch->as<std::string>()));
  });

  auto* branch = app.add_subcommand("branch", "create, list, merge and delete branches");
  branch->require_subcommand(1);
  auto* create = branch->add_subcommand("create", "a new branch; no data is copied");
  auto* b_name = create->add_option("NAME", "branch name")->required();
  auto* b_from =
      create->add_option("--from", "BRANCH[@VERSION] to start from")->default_str("main");
  create->callback([&ctx, b_name, b_from, run] {
    run(BranchCreate(ctx, b_name->as<std::string>(), b_from->as<std::string>()));
  });
  branch->add_subcommand("list", "branch names")->callback([&ctx, run] { run(BranchList(ctx)); });
  auto* del = branch->add_subcommand("delete", "delete a branch no other branch depends on");
  auto* d_name = del->add_option("NAME", "branch name")->required();
  del->callback([&ctx, d_name, run] {
    run([&]() -> Status {
      ASSIGN_OR_RETURN(std::unique_ptr<Workspace> ws, ctx.OpenPublic());
      RETURN_NOT_OK(ws->DeleteBranch(d_name->as<std::string>()));
      if (!ctx.json) std::cout << "deleted branch " << d_name->as<std::string>() << "\n";
      return Status::OK();
    }());
  });
  AddBranchPublishCommands(*branch, ctx, exit);

  auto* compact = app.add_subcommand(
      "compact", "rewrite small fragments of a table (or all tables and the manifest)");
  auto* c_table = compact->add_option("TABLE", "only this table");
  compact->callback([&ctx, c_table, run] {
    run(Compact(ctx, c_table->count() ? c_table->as<std::string>() : ""));
  });

  auto* heads = app.add_subcommand("heads", "check the durable table heads");
  heads->require_subcommand(1);
  auto* verify = heads->add_subcommand("verify", "recompute heads from the journal and compare");
  auto* v_branch = verify->add_option("--branch", "branch (default main)")->default_str("main");
  verify->callback([&ctx, v_branch, run] { run(HeadsVerify(ctx, v_branch->as<std::string>())); });
  auto* repair = heads->add_subcommand(
      "repair", "offline: rewrite heads and catalog from the journal, as loam:repair");
  auto* r_branch = repair->add_option("--branch", "branch (default main)")->default_str("main");
  auto offline = std::make_shared<bool>(false);
  repair->add_flag("--offline", *offline,
                   "every writer is stopped (required: repair races writers)");
  auto force = std::make_shared<bool>(false);
  repair->add_flag("--force", *force,
                   "repair although recent sidecars or live run leases suggest a writer");
  repair->callback([&ctx, r_branch, offline, force, run] {
    run(HeadsRepair(ctx, r_branch->as<std::string>(), *offline, *force));
  });
}

}  // namespace loam::cli
