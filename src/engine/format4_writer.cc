#include "engine/format4_writer.h"

#include <map>
#include <set>
#include <vector>

#include "common/status_macros.h"
#include "engine/format_stamp.h"
#include "manifest/manifest.h"

namespace loam::testing {
namespace {

std::string Under(const std::string& root, const std::string& rel) {
  return root.empty() ? rel : root + "/" + rel;
}

// Size tier of a journal fragment, as the manifest's own merges count it.
int TierOf(size_t rows) {
  int tier = 0;
  for (size_t limit = 64; rows >= limit && tier < 12; limit *= 16) ++tier;
  return tier;
}

// One branch of the twin being written: its dataset snapshot and the rows
// of the journal fragments written on it (a merge rewrites only those).
class BranchReplay {
 public:
  BranchReplay(Dataset ds, Format4Stats* stats) : ds_(std::move(ds)), stats_(stats) {}

  // The next version, holding exactly `rows` (journal rows), or a merge.
  Status Commit(std::vector<ManifestRow> rows) {
    if (rows.empty()) return MergeOrEmpty();
    stats_->journal_rows += static_cast<int>(rows.size());
    return Write(std::move(rows), {});
  }

 private:
  // The head directory of a journal-only version: no partition, no file.
  static std::string NoHeads() { return EncodeHeadDirectory(HeadDirectory{}); }

  Status Write(std::vector<ManifestRow> rows, std::vector<uint64_t> removed) {
    std::vector<Fragment> added;
    if (!rows.empty()) {
      ASSIGN_OR_RETURN(Fragment f, ds_.WriteFragment(RowsToBatch(rows), /*allow_inline=*/true));
      added.push_back(std::move(f));
    }
    std::set<uint64_t> before;
    for (const Fragment& f : ds_.state().fragments) before.insert(f.id);
    ASSIGN_OR_RETURN(ds_, ds_.CommitRewrite(std::move(added), removed, NoHeads()));
    stats_->versions_written++;
    for (uint64_t id : removed) written_.erase(id);
    for (const Fragment& f : ds_.state().fragments) {
      if (!before.count(f.id)) written_[f.id] = rows;
    }
    return Status::OK();
  }

  // The lowest size tier holding two or more of this branch's fragments is
  // merged into one; with none, the version changes nothing.
  Status MergeOrEmpty() {
    std::map<int, std::vector<uint64_t>> tiers;
    for (const auto& [id, rows] : written_) tiers[TierOf(rows.size())].push_back(id);
    for (const auto& [tier, ids] : tiers) {
      if (ids.size() < 2) continue;
      std::vector<ManifestRow> merged;
      for (uint64_t id : ids) {
        merged.insert(merged.end(), written_[id].begin(), written_[id].end());
      }
      return Write(std::move(merged), ids);
    }
    return Write({}, {});
  }

  Dataset ds_;
  Format4Stats* stats_;
  std::map<uint64_t, std::vector<ManifestRow>> written_;
};

// Every object of the workspace but its manifest, its stamp and any
// migration's records; the manifest's refs are copied as they are (the same
// branch ids).
Status CopyObjects(ObjectStore& from, const std::string& from_root, ObjectStore& to,
                   const std::string& to_root, Format4Stats* stats) {
  const std::string prefix = from_root.empty() ? "" : from_root + "/";
  const std::string manifest = prefix + "__manifest/";
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> all, from.ListAll(prefix));
  for (const ObjectInfo& o : all) {
    const std::string rel = o.key.substr(prefix.size());
    const bool ref = o.key.starts_with(manifest + "_refs/");
    if ((o.key.starts_with(manifest) && !ref) || o.key == FormatStampKey(from_root) ||
        o.key.starts_with(MigrationPrefix(from_root))) {
      continue;
    }
    ASSIGN_OR_RETURN(std::string bytes, from.Get(o.key));
    RETURN_NOT_OK(to.Put(Under(to_root, rel), bytes).status());
    stats->objects_copied++;
  }
  return Status::OK();
}

// Branches with their parents first.
Result<std::vector<BranchInfo>> ParentsFirst(const Manifest& manifest) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, manifest.ListBranches());
  std::vector<BranchInfo> pending, ordered;
  for (const std::string& n : names) {
    ASSIGN_OR_RETURN(BranchInfo b, manifest.BranchParent(n));
    b.name = n;
    pending.push_back(std::move(b));
  }
  std::set<std::string> done{""};
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(),
                              [&](const BranchInfo& b) { return done.count(b.parent) > 0; });
    if (ready == pending.end()) {
      return Status::FailedPrecondition("branch '" + pending.front().name +
                                        "' forks from a branch that no longer exists");
    }
    done.insert(ready->name);
    ordered.push_back(*ready);
    pending.erase(ready);
  }
  return ordered;
}

// The branch's own versions (after `fork`), each with the journal rows the
// source published at it.
Status ReplayBranch(const Manifest& source, const std::string& branch, uint64_t fork, Dataset twin,
                    Format4Stats* stats) {
  ASSIGN_OR_RETURN(ManifestVersion tip, source.Current(branch));
  ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, source.Journal(branch, tip.version));
  std::map<uint64_t, std::vector<ManifestRow>> by_version;
  for (ManifestRow& r : journal) {
    const uint64_t v = ManifestVersionOf(r);
    if (v == 0) return Status::DataLoss("journal row '" + r.object_id + "' names no version");
    if (v > fork) by_version[v].push_back(std::move(r));  // older ones: the parent's
  }
  BranchReplay replay(std::move(twin), stats);
  for (uint64_t v = fork + 1; v <= tip.version; ++v) {
    RETURN_NOT_OK(replay.Commit(std::move(by_version[v])));
  }
  return Status::OK();
}

}  // namespace

Result<Format4Stats> WriteFormat4(ObjectStore& from, const std::string& from_root,
                                  std::shared_ptr<ObjectStore> to, const std::string& to_root,
                                  const DatasetOptions& options) {
  Format4Stats stats;
  // The source is read as it is, whatever its stamp says.
  std::shared_ptr<ObjectStore> source_store(&from, [](ObjectStore*) {});
  ManifestOptions mo;
  mo.dataset = options;
  ASSIGN_OR_RETURN(auto source, Manifest::Open(source_store, from_root, mo));
  const std::string twin_root = Under(to_root, "__manifest");
  ASSIGN_OR_RETURN(Dataset main, Dataset::Create(to, twin_root, ManifestSchema(), options));
  RETURN_NOT_OK(CopyObjects(from, from_root, *to, to_root, &stats));
  RETURN_NOT_OK(ReplayBranch(*source, "", 1, std::move(main), &stats));
  ASSIGN_OR_RETURN(std::vector<BranchInfo> branches, ParentsFirst(*source));
  for (const BranchInfo& b : branches) {
    OpenSpec spec;
    spec.branch = b.name;
    ASSIGN_OR_RETURN(Dataset twin, Dataset::Open(to, twin_root, spec, options));
    RETURN_NOT_OK(ReplayBranch(*source, b.name, b.parent_version, std::move(twin), &stats));
  }
  return stats;
}

}  // namespace loam::testing
