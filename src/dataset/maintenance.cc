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

namespace {

struct BranchVersions {
  std::string name;
  BranchInfo info;                                    // parent and fork point (empty for main)
  std::vector<std::pair<uint64_t, std::string>> own;  // version -> key, newest first
};

}  // namespace

Result<CleanupStats> Dataset::Cleanup(const CleanupOptions& options) const {
  CleanupStats stats;
  // Every branch: main and each ref.
  std::vector<BranchVersions> branches(1);
  ASSIGN_OR_RETURN(std::vector<std::string> names, ListBranches());
  for (const std::string& n : names) {
    ASSIGN_OR_RETURN(std::string text, store_->Get(BranchRefKey(Key(""), n)));
    ASSIGN_OR_RETURN(BranchInfo info, DecodeBranchRef(text, n));
    branches.push_back({n, info, {}});
  }
  // Versions that must stay loadable: tags and fork points.
  std::set<std::pair<std::string, uint64_t>> pinned;
  const std::string tprefix = Key("_refs/tags/");
  ASSIGN_OR_RETURN(auto tags, store_->ListAll(tprefix));
  for (const ObjectInfo& o : tags) {
    ASSIGN_OR_RETURN(std::string text, store_->Get(o.key));
    ASSIGN_OR_RETURN(TagRef t, DecodeTagRef(text, o.key));
    pinned.insert({t.branch, t.version});
  }
  for (const BranchVersions& b : branches) {
    if (!b.name.empty()) pinned.insert({b.info.parent, b.info.parent_version});
  }
  // A version at or below a branch's fork point lives in an ancestor.
  std::map<std::string, BranchInfo> info_of;
  for (const BranchVersions& b : branches) info_of[b.name] = b.info;
  std::set<std::pair<std::string, uint64_t>> owned_pins;
  for (auto [branch, version] : pinned) {
    for (int depth = 0;
         !branch.empty() && info_of.count(branch) && version <= info_of[branch].parent_version;
         ++depth) {
      RETURN_NOT_OK(CheckBranchDepth(branch, depth));
      branch = info_of[branch].parent;
    }
    owned_pins.insert({branch, version});
  }

  std::set<std::string> referenced;    // root-relative paths kept versions use
  std::set<std::string> dereferenced;  // used by removed versions: never in flight
  auto files_of = [](const DatasetVersion& v, std::set<std::string>* out) {
    for (const Fragment& f : v.fragments) {
      out->insert(f.data_path);
      if (!f.deletion_path.empty()) out->insert(f.deletion_path);
    }
    for (const IndexMeta& m : v.indices) out->insert(m.path);
  };
  auto reference = [&](const DatasetVersion& v) { files_of(v, &referenced); };
  // Versions committed meanwhile (e.g. a restore of a version being removed)
  // keep their files: every branch's latest is re-read before deleting.
  auto reference_latest = [&]() -> Status {
    ASSIGN_OR_RETURN(std::vector<std::string> names_now, ListBranches());
    names_now.push_back("");
    for (const std::string& n : names_now) {
      Result<DatasetVersion> latest = LoadLatest(n);
      if (latest.ok()) reference(*latest);
    }
    return Status::OK();
  };
  const std::string root_prefix = Key("");
  struct Doomed {
    std::string key;
    bool holds_inline = false;  // the file holds fragments or deletion files
    std::set<std::string> files;
  };
  std::vector<Doomed> doomed;
  for (BranchVersions& b : branches) {
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
      const bool keep = recent_so_far || owned_pins.count({b.name, *version});
      ++kept_newest;
      if (keep) {
        reference(v);
      } else {
        Doomed d{o.key, false, {}};
        d.holds_inline = !InlinePartsOf(v).empty();
        files_of(v, &d.files);
        doomed.push_back(std::move(d));
      }
    }
    // A branch without versions of its own reads its fork point.
    if (!b.name.empty() && objects.empty()) {
      ASSIGN_OR_RETURN(DatasetVersion v, LoadVersion(b.name, b.info.parent_version));
      reference(v);
    }
  }
  // A version whose file holds inline fragments that a kept version uses
  // stays, whole and loadable, and so does everything it references.
  auto spare_holders = [&] {
    for (bool spared = true; spared;) {
      spared = false;
      for (auto it = doomed.begin(); it != doomed.end();) {
        if (referenced.count(it->key.substr(root_prefix.size()))) {
          if (options.keep_holders_loadable) referenced.insert(it->files.begin(), it->files.end());
          it = doomed.erase(it);
          spared = true;
        } else {
          ++it;
        }
      }
    }
  };
  // Version files go before the files only they reference, so a crash
  // part-way leaves orphans for the next run, never a dangling reference.
  // Files holding inline parts go last, after the re-read, like data, each
  // only once no other doomed version still references it.
  auto remove_versions = [&](bool holding_inline) -> Status {
    for (bool removed = true; removed;) {
      removed = false;
      std::map<std::string, int> uses;  // by doomed versions
      for (const Doomed& d : doomed) {
        for (const std::string& f : d.files) uses[f]++;
      }
      for (auto it = doomed.begin(); it != doomed.end();) {
        const std::string rel = it->key.substr(root_prefix.size());
        const int by_others = uses[rel] - static_cast<int>(it->files.count(rel));
        if (it->holds_inline != holding_inline || by_others > 0) {
          ++it;
          continue;
        }
        RETURN_NOT_OK(store_->Delete(it->key));
        ++stats.versions_removed;
        dereferenced.insert(it->files.begin(), it->files.end());
        it = doomed.erase(it);
        removed = true;
      }
    }
    return Status::OK();
  };
  spare_holders();
  RETURN_NOT_OK(remove_versions(/*holding_inline=*/false));
  RETURN_NOT_OK(reference_latest());
  spare_holders();
  RETURN_NOT_OK(remove_versions(/*holding_inline=*/true));
  // Files of removed versions, and orphans (never committed, e.g. from a
  // failed write) once past the grace period.
  ASSIGN_OR_RETURN(auto all, store_->ListAll(root_prefix));
  for (const ObjectInfo& o : all) {
    const std::string rel = o.key.substr(root_prefix.size());
    const bool data = rel.ends_with(".lfrag");
    const bool deletion = rel.ends_with(".ldel");
    const bool index = rel.ends_with(".lidx");
    if ((!data && !deletion && !index) || referenced.count(rel)) continue;
    if (!dereferenced.count(rel) && o.meta.mtime_micros > options.grace_cutoff_micros) continue;
    RETURN_NOT_OK(store_->Delete(o.key));
    stats.bytes_removed += o.meta.size;
    if (data) {
      ++stats.data_files_removed;
    } else if (deletion) {
      ++stats.deletion_files_removed;
    } else {
      ++stats.index_files_removed;
    }
  }
  return stats;
}

}  // namespace loam
