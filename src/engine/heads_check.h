// The catalog checks `heads verify`, `heads repair` and `loam migrate` share.
#pragma once

#include <string>
#include <vector>

#include "catalog/table_def.h"
#include "manifest/fold.h"

namespace loam {

// The catalog set against the folded heads: findings, and (when `plan` is
// given) the rows that fix them (a definition rebuilt from the journal for a
// live head without a matching one; a stale definition and its grants removed).
void CheckCatalog(const HeadsInspection& in, std::vector<std::string>* problems, PublishPlan* plan);

// The definition the journal gives a live head: its latest schema row, its
// renames, its current name.
Result<TableDef> DefFromJournal(const std::vector<ManifestRow>& journal, const TableHead& h);

// Grant rows for a branch without a catalog (workspace format 4): its
// table_grant journal rows replayed in order onto the live identities (a
// later row for a principal replaces an earlier one; a row without a role
// revokes).
std::vector<ManifestRow> GrantsFromJournal(const std::vector<ManifestRow>& journal,
                                           const FoldedHeads& folded);

}  // namespace loam
