// Helpers shared by the files of Manifest (manifest.cc, journal.cc); not a
// public interface.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/backoff.h"
#include "common/status_macros.h"
#include "manifest/manifest.h"

namespace loam::manifest_internal {

// Between publish attempts: full jitter up to 1 ms * 2^attempt, at most 20 ms.
inline constexpr Backoff kPublishBackoff{1'000, 20'000, 0.0};

inline HeadDirectory::File FileOf(const Fragment& f) {
  return HeadDirectory::File{f.data_path, f.data_size, f.data_offset};
}

inline Result<HeadDirectory> DirectoryOf(std::string_view app_section) {
  if (app_section.empty()) return HeadDirectory{};  // version 1: nothing published yet
  return DecodeHeadDirectory(app_section);
}

// Partitions' new contents, by partition, as a commit will write them.
using PartitionRows = std::map<uint32_t, std::vector<ManifestRow>>;
using PartitionReader = std::function<Result<std::vector<ManifestRow>>(uint32_t)>;

// One fragment's rows: some journal rows, then whole partitions, each sorted
// by object_id, and where each partition's run of rows lies.
struct FragmentRows {
  std::vector<ManifestRow> rows;
  std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>> ranges;  // partition, run
  void Add(uint32_t p, std::vector<ManifestRow>* part) {
    std::sort(part->begin(), part->end(),
              [](const ManifestRow& a, const ManifestRow& b) { return a.object_id < b.object_id; });
    ranges.push_back(
        {p, {static_cast<uint32_t>(rows.size()), static_cast<uint32_t>(part->size())}});
    rows.insert(rows.end(), part->begin(), part->end());
  }
};

// Every mutable row of `v`, grouped by the partition the current format puts
// it in; every partition appears (empty ones too), so writing them all
// replaces the directory whole.
inline Result<PartitionRows> RegroupPartitions(const ManifestVersion& v,
                                               const PartitionReader& read) {
  PartitionRows out;
  for (uint32_t p = 0; p < kNumPartitions; ++p) out[p];
  for (uint32_t p = 0; p < kNumPartitions; ++p) {
    if (v.dir.slots[p].file < 0) continue;
    ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, read(p));
    for (ManifestRow& r : rows) {
      ASSIGN_OR_RETURN(uint32_t to, PartitionOf(r));
      out[to].push_back(std::move(r));
    }
  }
  return out;
}

// Moves every tombstone level of `parts` over its capacity whole into the
// next level (read through `read` when `parts` lacks it), lowest level
// first, so a move may cascade. A moved head replaces an older copy of
// itself there.
inline Status SettleTombstoneLevels(PartitionRows* parts, const PartitionReader& read) {
  for (uint32_t level = 0; level + 1 < kTombstonePartitions; ++level) {
    auto it = parts->find(kFirstTombstonePartition + level);
    if (it == parts->end() || it->second.size() <= TombstoneLevelCapacity(level)) continue;
    auto next = parts->find(kFirstTombstonePartition + level + 1);
    if (next == parts->end()) {
      ASSIGN_OR_RETURN(std::vector<ManifestRow> rows, read(kFirstTombstonePartition + level + 1));
      next = parts->emplace(kFirstTombstonePartition + level + 1, std::move(rows)).first;
    }
    std::set<std::string> moved;
    for (const ManifestRow& r : it->second) moved.insert(r.object_id);
    std::erase_if(next->second, [&](const ManifestRow& r) { return moved.count(r.object_id); });
    next->second.insert(next->second.end(), std::make_move_iterator(it->second.begin()),
                        std::make_move_iterator(it->second.end()));
    it->second.clear();
  }
  return Status::OK();
}

}  // namespace loam::manifest_internal
