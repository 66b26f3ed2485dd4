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
// Format 8: the layout of 7, written only in a stamped workspace, so that a
// Loam from before the format stamp (which reads 5 to 7 and never reads the
// stamp) refuses it as unsupported instead of serving it. 7: hashed head
// partitions, tombstone partitions, table_grant journal rows. 6 added file
// offsets (partitions inside inline fragments). 5 and 6 (66 partitions, heads
// by stable id modulo 64, tombstones among live heads) are still read; the
// first publish on them rewrites every head partition, on 7 only the header.
inline constexpr uint32_t kManifestFormatVersion = 8;
inline constexpr uint32_t kOldestManifestFormat = 5;
inline constexpr uint32_t kFirstHashedFormat = 7;
// The last head directory format that Loams without the format stamp read.
inline constexpr uint32_t kLastFormatBeforeStamp = 7;
inline constexpr uint32_t kPartitionsBeforeFormat7 = kTableHeadPartitions + 2;

// The partition of the live head of `sid` in a directory of `format`.
uint32_t LiveHeadPartition(int64_t sid, uint32_t format = kManifestFormatVersion);
// The partition a mutable row belongs to in a directory of `format`: a
// tombstoned head (null row_count) apart from live ones from format 7 on.
// InvalidArgument for journal rows.
Result<uint32_t> PartitionOf(const ManifestRow& row, uint32_t format = kManifestFormatVersion);
// The partition of the tombstoned head of `sid` (format 7 on).
uint32_t TombstoneHeadPartition(int64_t sid);

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
