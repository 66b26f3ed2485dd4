// The catalog checks `heads verify`, `heads repair` and `loam migrate` share.
#pragma once

#include <string>
#include <vector>

#include "manifest/fold.h"

namespace loam {

// The catalog set against the folded heads: findings, and (when `plan` is
// given) the rows that fix them (a definition rebuilt from the journal for a
// live head without a matching one; a stale definition and its grants removed).
void CheckCatalog(const HeadsInspection& in, std::vector<std::string>* problems, PublishPlan* plan);

}  // namespace loam
