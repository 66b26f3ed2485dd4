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

// Partitions of mutable rows: table heads by stable id modulo
// kTableHeadPartitions, then one for graph heads and one for the catalog
// (table definitions and grants).
inline constexpr uint32_t kTableHeadPartitions = 64;
inline constexpr uint32_t kGraphPartition = kTableHeadPartitions;
inline constexpr uint32_t kCatalogPartition = kTableHeadPartitions + 1;
inline constexpr uint32_t kNumPartitions = kTableHeadPartitions + 2;
// Version 6 added file offsets (partitions inside inline fragments); 5 is
// still read.
inline constexpr uint32_t kManifestFormatVersion = 6;
inline constexpr uint32_t kOldestManifestFormat = 5;

// The partition a mutable row belongs to; InvalidArgument for journal rows.
Result<uint32_t> PartitionOf(const ManifestRow& row);

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
