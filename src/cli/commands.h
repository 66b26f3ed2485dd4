// The `loam` subcommands, grouped by what they touch. Each Add* registers its
// subcommands on `app`; a command's callback stores its exit code in *exit.
#pragma once

#include <CLI/CLI.hpp>

#include "api/workspace_access.h"
#include "cli/context.h"

namespace loam::cli {

void AddWorkspaceCommands(CLI::App& app, Context& ctx,
                          int* exit);  // init, log, history, branch, compact, gc, heads
void AddTableCommands(CLI::App& app, Context& ctx, int* exit);     // table ...
void AddLoadCommands(CLI::App& app, Context& ctx, int* exit);      // load, runs ...
void AddReadCommands(CLI::App& app, Context& ctx, int* exit);      // scan, get, count, export
void AddServeCommands(CLI::App& app, Context& ctx, int* exit);     // serve, token
void AddSubmitCommands(CLI::App& app, Context& ctx, int* exit);    // submit
void AddMigrateCommands(CLI::App& app, Context& ctx, int* exit);   // migrate
void AddMaintainCommands(CLI::App& app, Context& ctx, int* exit);  // maintain
void AddSqlCommands(CLI::App& app, Context& ctx, int* exit);       // sql
void AddDeleteCommands(CLI::App& app, Context& ctx, int* exit);    // delete
// branch merge and protect, on the `branch` command AddWorkspaceCommands makes.
void AddBranchPublishCommands(CLI::App& branch, Context& ctx, int* exit);

// Shared by the commands that run loads and deletes (commands_load.cc): the
// loader's knobs from the environment, and a finished run printed (--json:
// its record) with the exit code its state and error code call for.
internal::LoadTuning Tuning();
int ReportRun(const Context& ctx, const LoadResult& done);

}  // namespace loam::cli
