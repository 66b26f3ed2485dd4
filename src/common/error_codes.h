// The one table of Loam's stable error codes: for each ErrorCode its name,
// the HTTP status `loam serve` answers with and the exit code of the `loam`
// command. docs/errors.md shows the same table; error_codes_test checks it
// row by row, so the three can never disagree.
#pragma once

#include <string_view>

#include "loam/status.h"

namespace loam {

struct ErrorCodeInfo {
  ErrorCode code;
  std::string_view name;  // a contract: never renamed
  int http_status;
  int exit_code;  // the `loam` command's (docs/cli.md, "Exit codes")
};

// The row of `code` (kInternal's for a value outside the enum).
const ErrorCodeInfo& InfoOf(ErrorCode code);

}  // namespace loam
