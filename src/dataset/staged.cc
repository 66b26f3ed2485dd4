// Staged fragments kept in memory (WriteFragment with allow_inline): where
// a commit puts them, and the joining of several runs' into fewer.
#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"
#include "format/fragment_writer.h"

namespace loam {

Result<std::vector<Fragment>> Dataset::PlaceStaged(std::vector<Fragment> staged) const {
  // What the version file may embed: on main only (MayInline), within its
  // budget. The rest is written as files now, once, before any attempt.
  uint64_t budget = MayInline() ? options_->max_inline_bytes_per_version : 0;
  for (Fragment& f : staged) {
    if (!f.inline_bytes || !f.data_path.empty()) continue;
    if (f.inline_bytes->size() <= budget) {
      budget -= f.inline_bytes->size();
      continue;
    }
    const std::string rel = BranchDir(branch_) + "data/" + NewUlidString() + ".lfrag";
    RETURN_NOT_OK(store_->PutIfAbsent(Key(rel), std::string(*f.inline_bytes)).status());
    f.data_path = rel;
    f.data_offset = 0;
    f.data_size = f.inline_bytes->size();
    f.inline_bytes = nullptr;
  }
  return staged;
}

Result<std::vector<Fragment>> Dataset::JoinStaged(
    const std::vector<std::vector<Fragment>>& runs) const {
  std::vector<Fragment> out;
  std::vector<Fragment> chunk;
  uint64_t chunk_bytes = 0;
  uint64_t chunk_rows = 0;
  // Of the version file: a chunk past it (or any, off main) becomes a file.
  uint64_t budget = MayInline() ? options_->max_inline_bytes_per_version : 0;
  auto flush = [&]() -> Status {
    if (chunk.empty()) return Status::OK();
    ASSIGN_OR_RETURN(std::vector<RecordBatch> rows, ReadStaged(chunk, {}));
    VectorBatchStream stream(&rows);
    ASSIGN_OR_RETURN(Fragment joined, EncodeSmallFragment(state_->schema, stream, &budget));
    out.push_back(std::move(joined));
    chunk.clear();
    chunk_bytes = 0;
    chunk_rows = 0;
    return Status::OK();
  };
  for (const std::vector<Fragment>& run : runs) {
    uint64_t bytes = 0;
    uint64_t rows = 0;
    for (const Fragment& f : run) {
      if (!f.inline_bytes || !f.data_path.empty()) {
        return Status::InvalidArgument("staged fragment '" + f.data_path +
                                       "' is a file: only fragments kept in memory are joined");
      }
      bytes += f.data_size;
      rows += f.physical_rows;
    }
    if (chunk_bytes + bytes > options_->max_inline_fragment_bytes ||
        chunk_rows + rows > options_->max_rows_per_fragment) {
      RETURN_NOT_OK(flush());
    }
    chunk.insert(chunk.end(), run.begin(), run.end());
    chunk_bytes += bytes;
    chunk_rows += rows;
  }
  RETURN_NOT_OK(flush());
  return out;
}

}  // namespace loam
