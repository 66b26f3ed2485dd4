// Merging a branch into the branch it was created from (Workspace::Merge,
// docs/branches.md): every table the branch changed since it was created or
// last merged takes the branch's content in one commit, or nothing does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loam {

// A check a merge carries, evaluated on the branch's pinned state before
// anything is written: the table's live row count within bounds, and no two
// live rows sharing the values of `unique_columns`. A failed check refuses
// the merge with merge_check_failed, naming the check (detail "check").
struct MergeCheck {
  std::string name;
  std::string table;
  std::optional<int64_t> min_rows;
  std::optional<int64_t> max_rows;
  std::vector<std::string> unique_columns;
};

struct MergedTable {
  std::string name;
  std::string change;         // "updated", "created", "dropped"
  int64_t table_version = 0;  // on the target, after the merge
  std::optional<int64_t> row_count;
};

struct MergeResult {
  std::string merge_id;
  uint64_t manifest_version = 0;  // the target's merge commit (0: nothing to merge)
  std::string commit_id;
  uint64_t source_version = 0;  // the branch's version merged
  std::vector<MergedTable> tables;
  bool already_merged = false;  // answered from an earlier commit of the same merge id
  uint64_t copied_bytes = 0;    // the branch's own files copied to the target's tables
};

// A merge undone as one unit (Workspace::RevertMerge): every table it
// changed back to its content, name and schema before the merge, and every
// table it created dropped, in one commit.
struct MergeRevertResult {
  std::string merge_id;
  uint64_t manifest_version = 0;  // the revert's commit
  std::string commit_id;
  std::vector<MergedTable> tables;  // change "restored" or "dropped"
  bool already_reverted = false;    // answered from the earlier revert of the same merge
};

}  // namespace loam
