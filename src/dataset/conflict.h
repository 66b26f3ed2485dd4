// The conflict matrix: may `mine` (not yet committed, built on an older
// version) still commit after `theirs` was committed? See
// docs/format/dataset.md, "Commit protocol".
#pragma once

#include "dataset/version_file.h"

namespace loam {

enum class ConflictVerdict {
  kCompatible,  // rebase: re-apply `mine` on the newer version
  kRetry,       // re-run the operation on the newer version
  kAbort,       // give up: the caller's intent no longer holds
};

ConflictVerdict CheckConflict(const Transaction& mine, const Transaction& theirs);

}  // namespace loam
