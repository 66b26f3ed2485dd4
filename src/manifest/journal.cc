// The journal side of Manifest: merges of old fragments, the object_id
// index and journal look-ups, history reads, and compaction
// (docs/format/manifest.md, "Merging" and "Journal look-up").
#include <algorithm>
#include <set>

#include "common/logging.h"
#include "common/status_macros.h"
#include "format/fragment_reader.h"
#include "manifest/manifest.h"
#include "manifest/manifest_internal.h"

namespace loam {

using manifest_internal::DirectoryOf;
using manifest_internal::FileOf;
using manifest_internal::FragmentRows;
using manifest_internal::kPublishBackoff;
using manifest_internal::PartitionRows;
using manifest_internal::RegroupPartitions;
using manifest_internal::SettleTombstoneLevels;

// --- merging ----------------------------------------------------------------------

namespace {

// Size tier of a fragment by rows: tier k holds fewer than 64 * 16^k rows.
int TierOf(uint64_t rows) {
  int tier = 0;
  for (uint64_t limit = 64; rows >= limit && tier < 12; limit *= 16) ++tier;
  return tier;
}

}  // namespace

Result<Dataset> Manifest::MergeTier(const Dataset& base, size_t min_count) {
  ASSIGN_OR_RETURN(HeadDirectory dir, DirectoryOf(base.state().app_section));
  std::set<std::pair<std::string, uint64_t>> live;
  for (const HeadDirectory::File& f : dir.files) live.insert({f.path, f.offset});
  std::map<int, std::vector<const Fragment*>> tiers;
  for (const Fragment& f : base.state().fragments) {
    if (!live.count({f.data_path, f.data_offset})) tiers[TierOf(f.physical_rows)].push_back(&f);
  }
  for (const auto& [tier, victims] : tiers) {
    if (victims.size() < std::max<size_t>(min_count, 2)) continue;
    std::vector<ManifestRow> journal;
    std::vector<uint64_t> removed;
    uint64_t merged_rows = 0;
    for (const Fragment* f : victims) {
      // One output fragment: stop at the fragment row limit.
      if (merged_rows + f->physical_rows > options_.dataset.max_rows_per_fragment &&
          removed.size() >= 2) {
        break;
      }
      merged_rows += f->physical_rows;
      ASSIGN_OR_RETURN(auto batch, ReadFile(FileOf(*f), nullptr));
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, BatchToRows(*batch));
      for (ManifestRow& r : rows) {
        if (IsJournalType(r.object_type)) journal.push_back(std::move(r));
      }
      removed.push_back(f->id);
    }
    std::vector<Fragment> added;
    if (!journal.empty()) {
      ASSIGN_OR_RETURN(Fragment merged,
                       base.WriteFragment(RowsToBatch(journal), /*allow_inline=*/true));
      added.push_back(std::move(merged));
    }
    return base.CommitRewrite(std::move(added), std::move(removed), base.state().app_section);
  }
  return base;
}

Status Manifest::Maintain(const std::string& branch) {
  for (int round = 0; round < 64; ++round) {
    ASSIGN_OR_RETURN(Dataset base, OpenDataset(branch));
    ASSIGN_OR_RETURN(Dataset merged, MergeTier(base, 2));
    if (merged.version() == base.version()) break;
    RememberBase(branch, merged);
  }
  return Status::OK();
}

// --- history ----------------------------------------------------------------------

Result<std::vector<ManifestRow>> Manifest::Journal(const std::string& branch,
                                                   std::optional<uint64_t> version) const {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(branch, version));
  std::vector<ManifestRow> out;
  ScanSpec spec;
  ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, ds.Scan(spec));
  for (const RecordBatch& b : batches) {
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, BatchToRows(b));
    for (ManifestRow& r : rows) {
      if (IsJournalType(r.object_type)) out.push_back(std::move(r));
    }
  }
  // Merged fragments hold older rows than the fragments before them: commit
  // order is the manifest version each row was published at.
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < out.size(); ++i) order.push_back({ManifestVersionOf(out[i]), i});
  std::stable_sort(order.begin(), order.end());
  std::vector<ManifestRow> sorted;
  sorted.reserve(out.size());
  for (const auto& [v, i] : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

Result<std::vector<ManifestRow>> Manifest::CommitRows(const std::string& branch,
                                                      uint64_t version) const {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(branch, version));
  return RowsAddedIn(ds.state());
}

Result<std::vector<ManifestRow>> Manifest::RowsAddedIn(const DatasetVersion& v) const {
  std::vector<ManifestRow> out;
  for (const Fragment& f : v.txn.added) {
    // Added fragments carry their ids in the committed version.
    const Fragment* live = nullptr;
    for (const Fragment& g : v.fragments) {
      if (g.data_path == f.data_path && g.data_offset == f.data_offset) live = &g;
    }
    if (live == nullptr) continue;
    const HeadDirectory::File file = FileOf(*live);
    ASSIGN_OR_RETURN(auto reader, FragmentReader::OpenAt(store_.get(), {Root() + "/" + file.path,
                                                                        file.offset, file.size}));
    ASSIGN_OR_RETURN(RecordBatch b, reader->ReadAll());
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, BatchToRows(b));
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

Result<std::optional<ManifestRow>> Manifest::FindJournalRow(const std::string& branch,
                                                            const std::string& object_id,
                                                            JournalLookupStats* stats) const {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(branch));
  return FindJournalRowIn(ds, object_id, stats);
}

Result<bool> Manifest::RunCommitted(const std::string& branch, const std::string& run_id,
                                    JournalLookupStats* stats, uint64_t journal_floor) {
  bool cached = false;
  ASSIGN_OR_RETURN(Dataset base, WriterBase(branch, /*reload=*/false, &cached));
  ASSIGN_OR_RETURN(auto row, FindJournalRowIn(base, RunCommitId(run_id), stats, journal_floor));
  return row.has_value();
}

Result<uint64_t> Manifest::JournalFloor(const std::string& branch) {
  if (!branch.empty()) return uint64_t{0};
  bool cached = false;
  ASSIGN_OR_RETURN(Dataset base, WriterBase(branch, /*reload=*/false, &cached));
  return base.state().next_fragment_id;
}

std::string JournalLevelName(int level) {
  return std::string(kJournalIndex) + "-" + std::to_string(level);
}

namespace {

bool IsJournalIndex(const IndexMeta& m) { return m.column == kJournalIndex; }

bool CoveredByJournalIndex(const DatasetVersion& v, uint64_t fragment) {
  return std::any_of(v.indices.begin(), v.indices.end(),
                     [&](const IndexMeta& m) { return IsJournalIndex(m) && m.Covers(fragment); });
}

size_t UncoveredFragments(const DatasetVersion& v) {
  size_t n = 0;
  for (const Fragment& f : v.fragments) n += !CoveredByJournalIndex(v, f.id);
  return n;
}

// The fold: level 0 takes the fragments outside every index; then each
// level over its capacity moves into the next and starts again empty. One
// commit. Levels above the first that fits are left as they are.
std::vector<Dataset::IndexRebuild> FoldPlan(const DatasetVersion& v, const ManifestOptions& o) {
  auto entries_of = [&](int level) -> uint64_t {
    const IndexMeta* m = v.FindIndex(JournalLevelName(level));
    return m == nullptr ? 0 : m->entries;
  };
  auto existing = [&](int level) { return v.FindIndex(JournalLevelName(level)) != nullptr; };
  uint64_t carried = entries_of(0);  // what the level being built will hold
  for (const Fragment& f : v.fragments) {
    if (!CoveredByJournalIndex(v, f.id)) carried += f.physical_rows;
  }
  std::vector<Dataset::IndexRebuild> plan;
  plan.push_back({JournalLevelName(0), {}, /*tail=*/true});
  if (existing(0)) plan.back().from.push_back(JournalLevelName(0));
  uint64_t capacity = std::max<uint64_t>(o.journal_level0_entries, 1);
  for (int level = 0; carried > capacity; ++level) {
    Dataset::IndexRebuild up{JournalLevelName(level + 1), plan.back().from, plan.back().tail};
    if (existing(level + 1)) up.from.push_back(JournalLevelName(level + 1));
    plan.back().from.clear();
    plan.back().tail = false;
    carried += entries_of(level + 1);
    capacity *= std::max<uint64_t>(o.journal_level_fanout, 2);
    plan.push_back(std::move(up));
  }
  return plan;
}

}  // namespace

Result<std::optional<ManifestRow>> Manifest::FindJournalRowIn(const Dataset& ds,
                                                              const std::string& object_id,
                                                              JournalLookupStats* stats,
                                                              uint64_t floor) const {
  const DatasetVersion& v = ds.state();
  const bool indexed = std::any_of(v.indices.begin(), v.indices.end(), [&](const IndexMeta& m) {
    return IsJournalIndex(m) && m.CoversFrom(floor);
  });
  if (stats) stats->index_used = indexed;
  auto journal_row = [&](std::vector<ManifestRow> rows) -> std::optional<ManifestRow> {
    for (ManifestRow& r : rows) {
      if (r.object_id == object_id && IsJournalType(r.object_type)) return std::move(r);
    }
    return std::nullopt;
  };
  if (indexed) {
    ScanStats scan_stats;
    ScanSpec spec;
    spec.where = {Predicate::Eq("object_id", object_id)};
    spec.indexed_fragments_only = true;
    spec.min_fragment_id = floor;
    spec.stats = &scan_stats;
    ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, ds.Scan(spec));
    if (stats) stats->index_pages_read = scan_stats.index_pages_read;
    for (const RecordBatch& b : batches) {
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, BatchToRows(b));
      if (auto found = journal_row(std::move(rows))) return found;
    }
  }
  // The tail outside the index: small publish fragments, decoded whole
  // through the file cache (a writer's own recent commits are already there).
  for (const Fragment& f : v.fragments) {
    if (f.id < floor || CoveredByJournalIndex(v, f.id)) continue;
    if (stats) stats->fragments_scanned++;
    ASSIGN_OR_RETURN(std::shared_ptr<const RecordBatch> batch, ReadFile(FileOf(f), nullptr));
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, BatchToRows(*batch));
    if (auto found = journal_row(std::move(rows))) return found;
  }
  return std::optional<ManifestRow>();
}

Result<int> Manifest::JournalIndexTail(const std::string& branch) const {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(branch));
  return static_cast<int>(UncoveredFragments(ds.state()));
}

Result<Dataset> Manifest::FoldJournalIndex(const Dataset& base, size_t max_tail) {
  const size_t tail = UncoveredFragments(base.state());
  if (tail <= max_tail || tail == 0) return base;
  LOAM_LOG_DEBUG("journal index: {} fragments outside it (bound {}); folding them in", tail,
                 max_tail);
  CommitOptions opts;
  opts.expected_version = base.version();
  opts.trust_snapshot = true;
  return base.RebuildIndices(std::string(kJournalIndex), FoldPlan(base.state(), options_), opts);
}

Status Manifest::Reconcile(const std::string& branch) {
  ASSIGN_OR_RETURN(Dataset ds, OpenDataset(branch));
  if (UncoveredFragments(ds.state()) == 0) return Status::OK();
  return ds.RebuildIndices(std::string(kJournalIndex), FoldPlan(ds.state(), options_)).status();
}

namespace {

// The files a compaction writes the partitions to: the live heads, the
// graph heads and the catalog in partition order, a file taking partitions
// while it holds fewer than `target` rows (raised so that there are at most
// 16 such files); the catalog (a row per table, read by every current read)
// joins the last file only if the two together stay within `target`, and
// is apart otherwise; then the tombstone levels in a file of their own.
std::vector<FragmentRows> CompactedPartitionFiles(PartitionRows* partitions, size_t target) {
  size_t live_rows = 0;
  for (const auto& [p, rows] : *partitions) {
    if (p < kCatalogPartition) live_rows += rows.size();
  }
  target = std::max({target, (live_rows + 15) / 16, size_t{1}});
  std::vector<FragmentRows> files(1);
  FragmentRows catalog, tombs;
  for (auto& [p, rows] : *partitions) {
    if (rows.empty()) continue;
    if (p >= kFirstTombstonePartition) {
      tombs.Add(p, &rows);
    } else if (p == kCatalogPartition && files.back().rows.size() + rows.size() > target) {
      catalog.Add(p, &rows);
    } else {
      if (files.back().rows.size() >= target) files.emplace_back();
      files.back().Add(p, &rows);
    }
  }
  if (files.back().rows.empty()) files.pop_back();
  for (FragmentRows* f : {&catalog, &tombs}) {
    if (!f->rows.empty()) files.push_back(std::move(*f));
  }
  return files;
}

}  // namespace

Status Manifest::Compact(const std::string& branch) {
  for (int attempt = 0; attempt < options_.max_publish_attempts; ++attempt) {
    ASSIGN_OR_RETURN(Dataset base, OpenDataset(branch));
    ManifestVersion v;
    v.branch = branch;
    v.version = base.version();
    ASSIGN_OR_RETURN(v.dir, DirectoryOf(base.state().app_section));
    ASSIGN_OR_RETURN(std::vector<ManifestRow> journal, Journal(branch, base.version()));
    // Every partition is in `partitions`: settling never reads.
    ASSIGN_OR_RETURN(PartitionRows partitions,
                     RegroupPartitions(v, [&](uint32_t p) { return ReadPartition(v, p); }));
    RETURN_NOT_OK(SettleTombstoneLevels(
        &partitions,
        [](uint32_t) -> Result<std::vector<ManifestRow>> { return std::vector<ManifestRow>(); }));
    // Journal fragments first, then the live partitions' files, then the
    // tombstones' (as a publish keeps them, apart from what current reads need).
    std::vector<FragmentRows> groups;
    const size_t cap = options_.dataset.max_rows_per_fragment;
    for (size_t at = 0; at < journal.size(); at += cap) {
      const size_t end = std::min(journal.size(), at + cap);
      groups.push_back({{journal.begin() + at, journal.begin() + end}, {}});
    }
    for (FragmentRows& f : CompactedPartitionFiles(&partitions, options_.compacted_file_rows)) {
      groups.push_back(std::move(f));
    }
    std::vector<Fragment> added;
    for (const FragmentRows& g : groups) {
      ASSIGN_OR_RETURN(Fragment f, base.WriteFragment(RowsToBatch(g.rows), /*allow_inline=*/true));
      added.push_back(std::move(f));
    }
    auto directory = [&](const std::vector<Fragment>& committed) -> Result<std::string> {
      HeadDirectory dir;
      for (size_t i = 0; i < groups.size(); ++i) {
        for (const auto& [p, range] : groups[i].ranges) {
          dir.Set(p, FileOf(committed.at(i)), range.first, range.second);
        }
      }
      return EncodeHeadDirectory(dir);
    };
    std::vector<uint64_t> removed;
    for (const Fragment& f : base.state().fragments) removed.push_back(f.id);
    Result<Dataset> done = base.CommitRewrite(std::move(added), removed, directory);
    if (done.ok()) {
      // The journal's new fragments go into its index at once (best effort:
      // a later publish folds them otherwise), so look-ups stay indexed.
      Result<Dataset> indexed = FoldJournalIndex(*done, 0);
      RememberBase(branch, indexed.ok() ? *indexed : *done);
      return Status::OK();
    }
    if (!done.status().IsAborted()) return done.status();
    kPublishBackoff.Sleep(attempt);
  }
  return Status::Aborted("manifest compaction kept losing to concurrent writers");
}

}  // namespace loam
