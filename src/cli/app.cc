// The `loam` command line as a function: the `loam` binary is this, and
// test binaries run it with test hooks set (context.h, TestHooks).
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/context.h"
#include "cli/version.h"
#include "common/quarantine.h"

namespace {

std::string EnvOr(const char* name, std::string fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : std::move(fallback);
}

}  // namespace

namespace loam::cli {

int RunCli(int argc, char** argv) {
  if (Status q = CheckQuarantineSwitch(); !q.ok()) {
    std::cerr << "error: " << q.message() << "\n";
    return ExitCodeFor(q);
  }
  Context ctx;
  ctx.root = EnvOr("LOAM_ROOT", "./loam-data");
  const char* login = getlogin();
  ctx.principal = EnvOr("LOAM_PRINCIPAL", EnvOr("USER", login != nullptr ? login : "local"));

  CLI::App app{"loam: versioned tables with atomic, exactly-once loads"};
  app.require_subcommand(1);
  app.fallthrough();  // --root and --json also after the subcommand
  app.option_defaults()->always_capture_default();
  app.add_option("--root", ctx.root,
                 "workspace root: a directory or s3://bucket/prefix (env LOAM_ROOT)");
  app.add_flag("--json", ctx.json, "print one JSON document instead of text");
  app.set_version_flag("--version", VersionText(), "print the version, its commit and formats");
  int exit = kExitOk;
  AddWorkspaceCommands(app, ctx, &exit);
  AddTableCommands(app, ctx, &exit);
  AddLoadCommands(app, ctx, &exit);
  AddDeleteCommands(app, ctx, &exit);
  AddReadCommands(app, ctx, &exit);
  AddServeCommands(app, ctx, &exit);
  AddSubmitCommands(app, ctx, &exit);
  AddMigrateCommands(app, ctx, &exit);
  AddMaintainCommands(app, ctx, &exit);
  AddSqlCommands(app, ctx, &exit);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  return exit;
}

}  // namespace loam::cli
