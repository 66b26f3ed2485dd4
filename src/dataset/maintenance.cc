// Compaction and cleanup.
#include <algorithm>
#include <cstdint>
#include <map>
#include <set>

#include "common/status_macros.h"
#include "dataset/dataset.h"
#include "dataset/refs.h"

namespace loam {

namespace {

// The fragments to rewrite together, size-tiered. Within each run of
// consecutive fragments Compactable under `options`, from the newest back, a
// bin takes the next older fragment while that one holds no more live rows
// than the bin so far (and the bin stays within target_rows). So small
// fragments merge into each other and a merged one joins an older one only
// once it is as large: a pass costs about what arrived since the last, not
// the table, each row is rewritten about log2(rows / rows per pass) times,
// and the fragments left number about as many. A lone fragment with nothing
// deleted is left alone (a rewrite gains nothing). Bins and their fragments
// are oldest first.
std::vector<std::vector<const Fragment*>> CompactionBins(const DatasetVersion& base,
                                                         const CompactionOptions& options) {
  std::vector<std::vector<const Fragment*>> bins;
  std::vector<const Fragment*> run;  // consecutive compactable fragments
  auto close_run = [&] {
    std::vector<std::vector<const Fragment*>> tiers;  // newest first
    std::vector<const Fragment*> bin;                 // newest first
    uint64_t bin_rows = 0;
    auto close_bin = [&] {
      if (bin.size() > 1 || (bin.size() == 1 && bin[0]->deleted_rows > 0)) {
        tiers.emplace_back(bin.rbegin(), bin.rend());
      }
      bin.clear();
      bin_rows = 0;
    };
    for (auto it = run.rbegin(); it != run.rend(); ++it) {
      const uint64_t rows = (*it)->live_rows();
      if (!bin.empty() && (rows > bin_rows || bin_rows + rows > options.target_rows)) close_bin();
      bin.push_back(*it);
      bin_rows += rows;
    }
    close_bin();
    bins.insert(bins.end(), tiers.rbegin(), tiers.rend());
    run.clear();
  };
  for (const Fragment& f : base.fragments) {
    if (Compactable(f, options)) {
      run.push_back(&f);
    } else {
      close_run();
    }
  }
  close_run();
  return bins;
}

void CountCompaction(const Transaction& t, CompactionStats* stats) {
  if (stats == nullptr) return;
  stats->fragments_removed = static_cast<int>(t.removed.size());
  stats->fragments_added = static_cast<int>(t.added.size());
  stats->bytes_written = 0;
  for (const Fragment& f : t.added) stats->bytes_written += f.data_size;
}

// The commit of `plan`: its fragments out, its new ones in.
Transaction CompactionTxn(const CompactionPlan& plan, CompactionStats* stats) {
  Transaction t;
  t.op = OpType::kCompact;
  for (const Fragment& f : plan.removed) t.removed.push_back(f.id);
  t.added = plan.added;
  CountCompaction(t, stats);
  return t;
}

// Whether `f` is in `v` with the same rows deleted.
bool Unchanged(const DatasetVersion& v, const Fragment& f) {
  const Fragment* now = v.FindFragment(f.id);
  return now != nullptr && now->deleted_rows == f.deleted_rows &&
         now->deletion_path == f.deletion_path && now->deletion_offset == f.deletion_offset;
}

}  // namespace

Result<CompactionPlan> Dataset::PlanCompaction(const CompactionOptions& options) const {
  if (options.target_rows == 0) return Status::InvalidArgument("target_rows must be positive");
  CompactionPlan plan;
  plan.planned_on = state_->version;
  for (const auto& b : CompactionBins(*state_, options)) {
    DatasetVersion only = *state_;
    only.fragments.clear();
    for (const Fragment* f : b) {
      only.fragments.push_back(*f);
      plan.removed.push_back(*f);
    }
    ASSIGN_OR_RETURN(std::vector<RecordBatch> rows, ScanVersion(only, {}));
    ASSIGN_OR_RETURN(std::vector<Fragment> added, WriteFragments(state_->schema, rows));
    for (Fragment& f : added) plan.added.push_back(std::move(f));
  }
  return plan;
}

Result<Dataset> Dataset::CommitCompaction(const CompactionPlan& plan, CompactionStats* stats,
                                          const CommitOptions& opts) const {
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        if (plan.removed.empty()) return std::optional<Transaction>();
        for (const Fragment& f : plan.removed) {
          if (!Unchanged(base, f)) {
            return Status::FailedPrecondition(
                "fragment " + std::to_string(f.id) + " changed since version " +
                std::to_string(plan.planned_on) + ", where the compaction was planned");
          }
        }
        return std::optional<Transaction>(CompactionTxn(plan, stats));
      },
      opts);
}

Result<Dataset> Dataset::Compact(const CompactionOptions& options, CompactionStats* stats,
                                 const CommitOptions& opts) const {
  if (options.target_rows == 0) return Status::InvalidArgument("target_rows must be positive");
  // Planned again on each base the commit loop tries.
  return RunOperation(
      [&](const DatasetVersion& base) -> Result<std::optional<Transaction>> {
        ASSIGN_OR_RETURN(CompactionPlan plan, WithState(base).PlanCompaction(options));
        if (plan.empty()) return std::optional<Transaction>();
        return std::optional<Transaction>(CompactionTxn(plan, stats));
      },
      opts);
}

// What one Cleanup knows as it goes: the branches, the versions that must
// stay loadable, the files kept versions use, and the versions to remove.
struct Dataset::CleanupState {
  struct Branch {
    std::string name;
    BranchInfo info;  // parent and fork point (empty for main)
  };
  struct Doomed {
    std::string key;
    bool holds_inline = false;  // the file holds fragments or deletion files
    std::set<std::string> files;
  };
  const CleanupOptions& options;
  std::string root_prefix;
  std::vector<Branch> branches;                           // main first
  std::set<std::pair<std::string, uint64_t>> owned_pins;  // (owning branch, version)
  std::set<std::string> referenced;                       // root-relative paths kept versions use
  std::set<std::string> dereferenced;  // used by removed versions: never in flight
  std::vector<Doomed> doomed;
  CleanupStats stats;
};

namespace {

void FilesOf(const DatasetVersion& v, std::set<std::string>* out) {
  for (const Fragment& f : v.fragments) {
    out->insert(f.data_path);
    if (!f.deletion_path.empty()) out->insert(f.deletion_path);
  }
  for (const IndexMeta& m : v.indices) out->insert(m.path);
}

}  // namespace

Result<CleanupStats> Dataset::Cleanup(const CleanupOptions& options) const {
  CleanupState c{options, Key(""), {}, {}, {}, {}, {}, {}};
  RETURN_NOT_OK(PinForCleanup(c));
  for (size_t b = 0; b < c.branches.size(); ++b) RETURN_NOT_OK(SortVersionsForCleanup(c, b));
  // Version files go before the files only they reference, so a crash
  // part-way leaves orphans for the next run, never a dangling reference.
  // Files holding inline parts go last, after the re-read, like data, each
  // only once no other doomed version still references it.
  SpareHolders(c);
  RETURN_NOT_OK(RemoveDoomedVersions(c, /*holding_inline=*/false));
  RETURN_NOT_OK(ReferenceLatestVersions(c));
  SpareHolders(c);
  RETURN_NOT_OK(RemoveDoomedVersions(c, /*holding_inline=*/true));
  RETURN_NOT_OK(RemoveUnreferencedFiles(c));
  return c.stats;
}

// A version whose file holds inline fragments that a kept version uses
// stays, whole and loadable, and so does everything it references.
void Dataset::SpareHolders(CleanupState& c) {
  for (bool spared = true; spared;) {
    spared = false;
    for (auto it = c.doomed.begin(); it != c.doomed.end();) {
      if (c.referenced.count(it->key.substr(c.root_prefix.size()))) {
        if (c.options.keep_holders_loadable)
          c.referenced.insert(it->files.begin(), it->files.end());
        it = c.doomed.erase(it);
        spared = true;
      } else {
        ++it;
      }
    }
  }
}

Status Dataset::PinForCleanup(CleanupState& c) const {
  // Every branch: main and each ref.
  c.branches.push_back({"", {}});
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListBranches());
  for (const std::string& n : names) {
    ASSIGN_OR_RETURN(std::string text, store_->Get(BranchRefKey(Key(""), n)));
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(text, n));
    c.branches.push_back({n, info});
  }
  // Versions that must stay loadable: tags and fork points.
  std::set<std::pair<std::string, uint64_t>> pinned;
  ASSIGN_OR_RETURN(auto tags, store_->ListAll(Key("_refs/tags/")));
  for (const ObjectInfo& o : tags) {
    ASSIGN_OR_RETURN(std::string text, store_->Get(o.key));
    ASSIGN_OR_RETURN(TagRef t, DecodeTagRef(text, o.key));
    pinned.insert({t.branch, t.version});
  }
  std::map<std::string, BranchInfo> info_of;
  for (const CleanupState::Branch& b : c.branches) {
    if (!b.name.empty()) pinned.insert({b.info.parent, b.info.parent_version});
    info_of[b.name] = b.info;
  }
  // A version at or below a branch's fork point lives in an ancestor.
  for (auto [branch, version] : pinned) {
    for (int depth = 0;
         !branch.empty() && info_of.count(branch) && version <= info_of[branch].parent_version;
         ++depth) {
      RETURN_NOT_OK(CheckBranchDepth(branch, depth));
      branch = info_of[branch].parent;
    }
    c.owned_pins.insert({branch, version});
  }
  return Status::OK();
}

Status Dataset::SortVersionsForCleanup(CleanupState& c, size_t branch) const {
  const CleanupState::Branch& b = c.branches[branch];
  const CleanupOptions& options = c.options;
  const std::string prefix = Key(BranchDir(b.name) + "_versions/");
  ASSIGN_OR_RETURN(auto objects, store_->ListAll(prefix));
  uint64_t kept_newest = 0;
  int64_t successor_micros = INT64_MAX;
  // Versions go oldest first only: once one is old enough to go, every
  // older one may go too, so no removed version ever lies below a kept one
  // (a gap above the latest published version would let a writer that
  // probes for the next version miss newer ones; OpenLatestFrom).
  bool recent_so_far = true;
  for (const ObjectInfo& o : objects) {  // newest first
    auto version = ParseVersionFileName(std::string_view(o.key).substr(prefix.size()));
    if (!version) continue;
    ASSIGN_OR_RETURN(std::string bytes, store_->Get(o.key));
    ASSIGN_OR_RETURN(DatasetVersion v, DecodeVersionFile(bytes, o.key));
    RETURN_NOT_OK(CheckVersionNumber(o.key, *version, v.version));
    // The newest version always stays: removing it would let a later
    // commit reuse its number.
    const bool newest = kept_newest == 0;
    if (options.expired) {
      recent_so_far =
          recent_so_far && (newest || !options.expired(b.name, *version, successor_micros));
    } else {
      recent_so_far =
          recent_so_far && (kept_newest < std::max<uint64_t>(1, options.keep_versions) ||
                            v.timestamp_micros >= options.older_than_micros);
    }
    successor_micros = v.timestamp_micros;
    const bool keep = recent_so_far || c.owned_pins.count({b.name, *version});
    ++kept_newest;
    if (keep) {
      FilesOf(v, &c.referenced);
    } else {
      CleanupState::Doomed d{o.key, !InlinePartsOf(v).empty(), {}};
      FilesOf(v, &d.files);
      c.doomed.push_back(std::move(d));
    }
  }
  // A branch without versions of its own reads its fork point.
  if (!b.name.empty() && objects.empty()) {
    ASSIGN_OR_RETURN(DatasetVersion v, LoadVersion(b.name, b.info.parent_version));
    FilesOf(v, &c.referenced);
  }
  return Status::OK();
}

Status Dataset::RemoveDoomedVersions(CleanupState& c, bool holding_inline) const {
  for (bool removed = true; removed;) {
    removed = false;
    std::map<std::string, int> uses;  // by doomed versions
    for (const CleanupState::Doomed& d : c.doomed) {
      for (const std::string& f : d.files) uses[f]++;
    }
    for (auto it = c.doomed.begin(); it != c.doomed.end();) {
      const std::string rel = it->key.substr(c.root_prefix.size());
      const int by_others = uses[rel] - static_cast<int>(it->files.count(rel));
      if (it->holds_inline != holding_inline || by_others > 0) {
        ++it;
        continue;
      }
      RETURN_NOT_OK(store_->Delete(it->key));
      ++c.stats.versions_removed;
      c.dereferenced.insert(it->files.begin(), it->files.end());
      it = c.doomed.erase(it);
      removed = true;
    }
  }
  return Status::OK();
}

Status Dataset::ReferenceLatestVersions(CleanupState& c) const {
  ASSIGN_OR_RETURN(std::vector<std::string> names_now, ListBranches());
  names_now.push_back("");
  for (const std::string& n : names_now) {
    Result<DatasetVersion> latest = LoadLatest(n);
    if (latest.ok()) FilesOf(*latest, &c.referenced);
  }
  return Status::OK();
}

Status Dataset::RemoveUnreferencedFiles(CleanupState& c) const {
  ASSIGN_OR_RETURN(auto all, store_->ListAll(c.root_prefix));
  for (const ObjectInfo& o : all) {
    const std::string rel = o.key.substr(c.root_prefix.size());
    const bool data = rel.ends_with(".lfrag");
    const bool deletion = rel.ends_with(".ldel");
    const bool index = rel.ends_with(".lidx");
    if ((!data && !deletion && !index) || c.referenced.count(rel)) continue;
    if (!c.dereferenced.count(rel) && o.meta.mtime_micros > c.options.grace_cutoff_micros) continue;
    RETURN_NOT_OK(store_->Delete(o.key));
    c.stats.bytes_removed += o.meta.size;
    if (data) {
      ++c.stats.data_files_removed;
    } else if (deletion) {
      ++c.stats.deletion_files_removed;
    } else {
      ++c.stats.index_files_removed;
    }
  }
  return Status::OK();
}

}  // namespace loam
