// loam: the command-line client of a Loam workspace (docs/cli.md).
#include "cli/context.h"

int main(int argc, char** argv) { return loam::cli::RunCli(argc, argv); }
