// The rule for a CSV delimiter, shared by every place one is given (a
// pipeline's csvDelimiter, `loam load --delimiter`, a run request, the API).
#pragma once

#include <string>
#include <string_view>

#include "loam/status.h"

namespace loam {

// One printable ASCII character other than '"', or a tab. `what` names where
// it came from (csvDelimiter, --delimiter).
inline Status CheckCsvDelimiter(std::string_view delimiter, std::string_view what) {
  const bool ok = delimiter.size() == 1 && delimiter[0] != '"' &&
                  ((delimiter[0] >= 0x20 && delimiter[0] < 0x7f) || delimiter[0] == '\t');
  if (ok) return Status::OK();
  return Status::InvalidArgument(std::string(what) +
                                 " must be one printable ASCII character other than a quote, or a "
                                 "tab");
}

}  // namespace loam
