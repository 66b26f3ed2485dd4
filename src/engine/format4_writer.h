// Test code only: writes workspace format 4, the journal-only manifest that
// `loam migrate` converts (docs/format/manifest.md, "Workspace format").
// No Loam binary writes format 4; tests, the committed fixtures
// (testdata/workspace_v4*) and the migration benchmark get one from here.
#pragma once

#include <memory>
#include <string>

#include "dataset/dataset.h"
#include "loam/object_store.h"

namespace loam::testing {

struct Format4Stats {
  int objects_copied = 0;
  int versions_written = 0;  // over every branch
  int journal_rows = 0;
};

// Writes at (`to`, `to_root`) the format-4 twin of the format-5 workspace at
// (`from`, `from_root`): the same table datasets, sidecars and control facts
// (copied as they are), no stamp, and a `__manifest` that holds the same
// branches (the same refs and ids, forked at the same versions) and, at each
// version number, exactly the journal rows the source published at it, under
// a head directory without files. A source version that published no journal
// row (a merge, an index fold) becomes a merge of the twin's own small journal
// fragments, or an empty rewrite, so version numbers stay aligned.
Result<Format4Stats> WriteFormat4(ObjectStore& from, const std::string& from_root,
                                  std::shared_ptr<ObjectStore> to, const std::string& to_root,
                                  const DatasetOptions& options = {});

}  // namespace loam::testing
