// What `loam --version` prints: the release, the commit it was built from
// and the formats it reads and writes.
#pragma once

#include <string>

namespace loam::cli {

std::string VersionText();

}  // namespace loam::cli
