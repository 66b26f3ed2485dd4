// The `loam` subcommands, grouped by what they touch. Each Add* registers its
// subcommands on `app`; a command's callback stores its exit code in *exit.
#pragma once

#include <CLI/CLI.hpp>

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

}  // namespace loam::cli
