// The validation half of a delete run: the rows it removes, found at the
// table's head. A run names them by filters (every row matching all of its
// `where` filters, in the scan filter grammar) or by keys (every row whose key
// columns hold a key of its files: the table's declared keys, or the columns
// the request names). Every key row is parsed and checked first; invalid
// ones are all listed (up to the request's max_errors) and the run fails
// before anything is looked up. Memory holds the keys (at most
// kMaxDeleteKeys) and the addresses of the rows found.
#pragma once

#include "ingest/stager.h"

namespace loam::ingest {

// Keys one delete run may name, whatever its max_rows.
inline constexpr int64_t kMaxDeleteKeys = 1'000'000;

// The columns a keys file names rows by: the request's keys, else the
// table's declared ones (InvalidArgument when it has none).
Result<std::vector<std::string>> DeleteKeyColumns(const RunRequest& request, const TableDef& def);

// Checks the request's filters against `schema` (InvalidArgument naming the
// filter) and returns them.
Result<std::vector<Predicate>> DeleteFilters(const RunRequest& request, const Schema& schema);

// The rows `request` (mode kDelete) removes from `data` (the table at
// `table`'s head): by filter, `delete_where` and the count; by keys, their
// addresses in `delete_rows`. counters.rows_read counts key rows read (by
// filter: the rows matched), counters.deleted the rows found. On failure the
// error names the file, line and column and *failure lists the invalid rows.
Result<StagedInput> PlanDeletes(const RunRequest& request, const TableState& table,
                                const Dataset& data, const StagerOptions& options,
                                StageFailure* failure);

}  // namespace loam::ingest
