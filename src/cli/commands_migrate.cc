// migrate: the offline conversion of a workspace in an earlier format
// (engine/migration.h; docs/operations.md, "Migrating a workspace").
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "common/status_macros.h"
#include "engine/migration.h"

namespace loam::cli {
namespace {

using json = nlohmann::json;

json BranchJson(const BranchMigration& b) {
  return json{
      {"branch", b.branch.empty() ? "main" : b.branch},
      {"incarnation", b.incarnation},
      {"sourceVersion", b.source_version},
      {"producedVersion", b.produced_version},
      {"heads", b.heads},
      {"baselineDigest", b.baseline_digest},
      {"headDigest", b.head_digest},
      {"alreadyDone", b.already_done},
      {"withdrawnVersion", b.withdrawn_version ? json(*b.withdrawn_version) : json(nullptr)}};
}

void PrintText(const MigrationReport& r) {
  if (r.already_current) {
    std::cout << "the workspace is already in format " << kWorkspaceFormat
              << "; nothing to migrate\n";
    return;
  }
  std::cout << "migrated from " << r.from << " to workspace format " << kWorkspaceFormat
            << " (migration " << r.token << (r.took_over ? ", taken over" : "") << ")\n";
  if (r.took_over) {
    std::cout << "taken over after classifying: " << r.ledger_done << " branches done, "
              << r.ledger_pending << " not done, " << r.sidecars_found << " write sidecars\n";
  }
  const RecoveryReport& rec = r.recovery;
  std::cout << "write sidecars settled: " << rec.rolled_forward << " rolled forward, "
            << rec.rolled_back << " rolled back, " << rec.already_published + rec.without_effect
            << " without effect\n";
  for (const BranchMigration& b : r.branches) {
    std::cout << "  " << (b.branch.empty() ? "main" : b.branch) << ": " << b.heads
              << " table heads, manifest version " << b.source_version << " -> "
              << b.produced_version << (b.already_done ? " (done earlier)" : "") << "\n";
    if (b.withdrawn_version) {
      std::cout << "    withdrew manifest version " << *b.withdrawn_version
                << ": this migration's commit of an earlier branch of that name\n";
    }
  }
  for (const auto& [name, v] : r.withdrawn_in_deleted_branches) {
    std::cout << "withdrew manifest version " << v << " from the directory of deleted branch '"
              << name << "': this migration's commit of it\n";
  }
  if (r.identity_counter_was) {
    std::cout << "identity counter advanced past the ids in use (it was at "
              << *r.identity_counter_was << ")\n";
  }
}

Status Migrate(const Context& ctx, const MigrateOptions& m) {
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, ctx.Store());
  ASSIGN_OR_RETURN(WorkspaceOptions options, ctx.Options());
  ASSIGN_OR_RETURN(MigrationReport r, MigrateWorkspace(store, "", options, m));
  if (!ctx.json) {
    PrintText(r);
    return Status::OK();
  }
  json branches = json::array();
  for (const BranchMigration& b : r.branches) branches.push_back(BranchJson(b));
  std::cout << json{{"alreadyCurrent", r.already_current},
                    {"from", r.from},
                    {"format", kWorkspaceFormat},
                    {"migration", r.token},
                    {"tookOver", r.took_over},
                    {"ledgerDone", r.ledger_done},
                    {"ledgerPending", r.ledger_pending},
                    {"sidecarsFound", r.sidecars_found},
                    {"rolledForward", r.recovery.rolled_forward},
                    {"rolledBack", r.recovery.rolled_back},
                    {"identityCounterWas",
                     r.identity_counter_was ? json(*r.identity_counter_was) : json(nullptr)},
                    {"withdrawnInDeletedBranches", r.withdrawn_in_deleted_branches},
                    {"branches", branches}}
                   .dump()
            << "\n";
  return Status::OK();
}

}  // namespace

void AddMigrateCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto* migrate = app.add_subcommand(
      "migrate", "offline: convert a workspace of an earlier format, every branch, stamp last");
  auto m = std::make_shared<MigrateOptions>();
  migrate->add_option("--take-over", m->take_over,
                      "resume the claimed migration with this token (its process is gone)");
  migrate->add_flag("--repin-branches", m->repin_branches,
                    "with --take-over: record the branch set as it is now");
  migrate->callback([&ctx, m, run] { run(Migrate(ctx, *m)); });
}

}  // namespace loam::cli
