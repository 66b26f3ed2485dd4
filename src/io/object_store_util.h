// Small helpers shared by ObjectStore backends.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loam/status.h"

namespace loam {

// InvalidArgument for a range read starting beyond the end of an object
// (starting exactly at the end reads nothing and is fine).
inline Status CheckRangeStart(std::string_view key, uint64_t offset, uint64_t size) {
  if (offset <= size) return Status::OK();
  return Status::InvalidArgument("range offset " + std::to_string(offset) +
                                 " is beyond the end of '" + std::string(key) + "' (size " +
                                 std::to_string(size) + ")");
}

inline Status NoSuchObject(std::string_view key) {
  return Status::NotFound("no object '" + std::string(key) + "'");
}

}  // namespace loam
