// The manifest's head directory: where each partition of mutable rows lives.
// Stored in the application section of every __manifest version file, so one
// range request finds every partition (docs/format/manifest.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"
#include "manifest/rows.h"

namespace loam {

// Partitions of mutable rows: live table heads by a hash of the stable id
// modulo kTableHeadPartitions, then one for graph heads, one for the catalog
// (table definitions and grants), then tombstoned table heads, apart so that
// a current-state read never decodes them.
inline constexpr uint32_t kTableHeadPartitions = 64;
inline constexpr uint32_t kGraphPartition = kTableHeadPartitions;
inline constexpr uint32_t kCatalogPartition = kTableHeadPartitions + 1;
inline constexpr uint32_t kFirstTombstonePartition = kTableHeadPartitions + 2;
inline constexpr uint32_t kTombstonePartitions = 16;
inline constexpr uint32_t kNumPartitions = kFirstTombstonePartition + kTombstonePartitions;
// Format 9: the tombstone partitions are levels. A drop adds its head to
// level 0; a level over its capacity (TombstoneLevelCapacity) moves whole
// into the next, so a drop rewrites a bounded level, amortised, whatever
// the drops before it. 8: the layout of 7, written only in a stamped
// workspace, so that a Loam from before the format stamp (which reads 5 to
// 7 and never reads the stamp) refuses it as unsupported instead of serving
// it. 7: hashed head partitions, tombstones hashed into 16 partitions of
// their own, table_grant journal rows. 6 added file offsets (partitions
// inside inline fragments). 5 and 6 (66 partitions, heads by stable id
// modulo 64, tombstones among live heads) are still read; the first publish
// on them rewrites every head partition, on 7 and 8 only the header (their
// hashed tombstone partitions are valid levels).
inline constexpr uint32_t kManifestFormatVersion = 9;
inline constexpr uint32_t kOldestManifestFormat = 5;
inline constexpr uint32_t kFirstHashedFormat = 7;
inline constexpr uint32_t kFirstTombstoneLevelsFormat = 9;
// The last head directory format that Loams without the format stamp read.
inline constexpr uint32_t kLastFormatBeforeStamp = 7;
inline constexpr uint32_t kPartitionsBeforeFormat7 = kTableHeadPartitions + 2;

// Rows tombstone level `level` (0 = kFirstTombstonePartition) holds before
// it moves into the next: 64 · 4^level; the last level has no bound.
uint64_t TombstoneLevelCapacity(uint32_t level);

// The partition of the live head of `sid` in a directory of `format`.
uint32_t LiveHeadPartition(int64_t sid, uint32_t format = kManifestFormatVersion);
// The partition a mutable row is written to in a directory of `format`: a
// tombstoned head (null row_count) apart from live ones from format 7 on,
// into level 0 from format 9 on. InvalidArgument for journal rows.
Result<uint32_t> PartitionOf(const ManifestRow& row, uint32_t format = kManifestFormatVersion);
// Whether `row` may be found in `partition` of a directory of `format`:
// its PartitionOf, or from format 9 on any tombstone level for a tombstoned
// head.
bool BelongsIn(const ManifestRow& row, uint32_t partition, uint32_t format);
// The partitions that may hold the tombstoned head of `sid` in a directory
// of `format` (7 on), in the order to search them: newest level first.
std::vector<uint32_t> TombstoneHeadPartitions(int64_t sid, uint32_t format);

struct HeadDirectory {
  // A fragment: bytes [offset, offset + size) of the object at `path`.
  struct File {
    std::string path;  // relative to the manifest root
    uint64_t size = 0;
    uint64_t offset = 0;  // > 0: inline in the version file at `path`
    friend bool operator==(const File&, const File&) = default;
  };
  struct Slot {
    int32_t file = -1;  // index into files; -1 = empty partition
    uint32_t offset = 0;
    uint32_t count = 0;
    friend bool operator==(const Slot&, const Slot&) = default;
  };
  uint32_t format = kManifestFormatVersion;  // as decoded; new directories are current
  std::vector<File> files;
  std::vector<Slot> slots = std::vector<Slot>(kNumPartitions);

  // Points `partition` at rows [offset, offset + count) of `file`.
  void Set(uint32_t partition, const File& file, uint32_t offset, uint32_t count);
  // Drops files no slot uses.
  void Prune();

  friend bool operator==(const HeadDirectory&, const HeadDirectory&) = default;
};

std::string EncodeHeadDirectory(const HeadDirectory& d);
// DataLoss for a bad magic or checksum; FailedPrecondition for another format version.
Result<HeadDirectory> DecodeHeadDirectory(std::string_view bytes);

}  // namespace loam
