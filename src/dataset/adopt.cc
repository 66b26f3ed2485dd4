// Dataset::Adopt: another branch's version made this branch's next one (a
// workspace merge). Committed as a rewrite (removed and added fragments, and
// the source's schema), so only against an expected version.
#include <set>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"
#include "dataset/refs.h"

namespace loam {
namespace {

// The directory prefixes of `branch` and every branch above it: files there
// stay readable for as long as `branch` exists (a branch with children or
// tags cannot be deleted).
Result<std::vector<std::string>> ChainDirs(ObjectStore& store, const std::string& root_prefix,
                                           const BranchInfo& branch) {
  std::vector<std::string> dirs;
  BranchInfo b = branch;
  for (int depth = 0; !b.name.empty(); ++depth) {
    RETURN_NOT_OK(CheckBranchDepth(branch.name, depth));
    dirs.push_back(Dataset::BranchDir(b.name));
    if (b.parent.empty()) break;
    ASSIGN_OR_RETURN(std::string ref, store.Get(BranchRefKey(root_prefix, b.parent)));
    ASSIGN_OR_RETURN(b, DecodeBranchRef(ref, b.parent));
  }
  return dirs;
}

// Whether `path` (dataset-relative) lives where `dirs` (a chain's) or main's
// own directory does.
bool InChain(const std::string& path, const std::vector<std::string>& dirs) {
  if (!path.starts_with("tree/")) return true;  // main's files: every branch reads them
  for (const std::string& d : dirs) {
    if (path.starts_with(d)) return true;
  }
  return false;
}

}  // namespace

Result<Dataset> Dataset::Adopt(const Dataset& source, const CommitOptions& opts,
                               uint64_t* copied_bytes) const {
  if (!opts.expected_version) {
    return Status::InvalidArgument("adopting a version needs an expected version");
  }
  if (source.root_ != root_) {
    return Status::InvalidArgument("adopting a version of another dataset (" + source.root_ + ")");
  }
  BranchInfo self = state_->branch;
  self.name = branch_;
  ASSIGN_OR_RETURN(std::vector<std::string> dirs, ChainDirs(*store_, Key(""), self));
  uint64_t copied = 0;
  // The bytes of a part: at offset 0 the whole object (a deletion file's
  // size may be unrecorded there); past it, the range of a version file.
  auto read = [&](const std::string& path, uint64_t offset, uint64_t size) {
    return offset == 0 ? store_->Get(source.Key(path))
                       : store_->GetRange(source.Key(path), offset, size);
  };
  // A copy in this branch's directory under a fresh name.
  auto put = [&](std::string bytes, const std::string& dir,
                 const std::string& suffix) -> Result<std::string> {
    const std::string rel = BranchDir(branch_) + dir + NewUlidString() + suffix;
    copied += bytes.size();
    RETURN_NOT_OK(store_->PutIfAbsent(Key(rel), std::move(bytes)).status());
    return rel;
  };
  uint64_t budget = MayInline() ? options_->max_inline_bytes_per_version : 0;
  const DatasetVersion& from = source.state();
  auto build = [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
    Transaction t;
    t.op = OpType::kRewrite;
    if (!(base.schema == from.schema)) t.schema = from.schema;
    std::set<uint64_t> kept;
    for (const Fragment& f : from.fragments) {
      const Fragment* mine = base.FindFragment(f.id);
      if (mine != nullptr && *mine == f) {
        kept.insert(f.id);
        continue;
      }
      Fragment g = f;
      // An added fragment's inline part must sit in the new version file
      // (where it can) or become a file of its own; a file outside the
      // chain is copied.
      if (f.data_offset > 0 || !InChain(f.data_path, dirs)) {
        ASSIGN_OR_RETURN(std::string bytes, read(f.data_path, f.data_offset, f.data_size));
        g.data_offset = 0;
        if (f.data_offset > 0 && bytes.size() <= options_->max_inline_fragment_bytes &&
            bytes.size() <= budget) {
          budget -= bytes.size();
          g.data_path.clear();
          g.inline_bytes = std::make_shared<const std::string>(std::move(bytes));
        } else {
          ASSIGN_OR_RETURN(g.data_path, put(std::move(bytes), "data/", ".lfrag"));
        }
      }
      if (!f.deletion_path.empty() && !InChain(f.deletion_path, dirs)) {
        ASSIGN_OR_RETURN(std::string bytes,
                         read(f.deletion_path, f.deletion_offset, f.deletion_size));
        g.deletion_offset = 0;
        ASSIGN_OR_RETURN(g.deletion_path, put(std::move(bytes), "_deletions/", ".ldel"));
      }
      t.added.push_back(std::move(g));
    }
    for (const Fragment& f : base.fragments) {
      if (!kept.count(f.id)) t.removed.push_back(f.id);
    }
    return std::optional<Transaction>(std::move(t));
  };
  Result<Dataset> out = RunOperation(build, opts);
  if (copied_bytes != nullptr) *copied_bytes = copied;
  return out;
}

}  // namespace loam
