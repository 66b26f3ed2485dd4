#include "manifest/directory.h"

#include <algorithm>

#include "common/coding.h"
#include "common/hash.h"
#include "common/status_macros.h"

namespace loam {
namespace {
constexpr std::string_view kMagic = "LMH5";
}  // namespace

namespace {

// splitmix64's finaliser: ids from one counter (all odd, say) still spread.
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint32_t LiveHeadPartition(int64_t sid, uint32_t format) {
  const uint64_t id = static_cast<uint64_t>(sid);
  return static_cast<uint32_t>((format >= kFirstHashedFormat ? Mix(id) : id) %
                               kTableHeadPartitions);
}

namespace {

// Format 7 and 8: one hashed partition per tombstoned head.
uint32_t HashedTombstonePartition(int64_t sid) {
  return kFirstTombstonePartition +
         static_cast<uint32_t>(Mix(static_cast<uint64_t>(sid) ^ 0x5bd1e995) % kTombstonePartitions);
}

bool IsTombstonedHead(const ManifestRow& row) {
  return row.object_type == object_type::kTableHead && !row.row_count;
}

}  // namespace

uint64_t TombstoneLevelCapacity(uint32_t level) {
  if (level + 1 >= kTombstonePartitions) return UINT64_MAX;
  return uint64_t{64} << (2 * level);
}

std::vector<uint32_t> TombstoneHeadPartitions(int64_t sid, uint32_t format) {
  if (format < kFirstTombstoneLevelsFormat) return {HashedTombstonePartition(sid)};
  std::vector<uint32_t> out;
  for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) out.push_back(p);
  return out;
}

bool BelongsIn(const ManifestRow& row, uint32_t partition, uint32_t format) {
  if (format >= kFirstTombstoneLevelsFormat && IsTombstonedHead(row) && row.stable_table_id &&
      *row.stable_table_id >= 1) {
    return partition >= kFirstTombstonePartition && partition < kNumPartitions;
  }
  Result<uint32_t> p = PartitionOf(row, format);
  return p.ok() && *p == partition;
}

Result<uint32_t> PartitionOf(const ManifestRow& row, uint32_t format) {
  if (row.object_type == object_type::kTableHead) {
    if (!row.stable_table_id || *row.stable_table_id < 1) {
      return Status::InvalidArgument("table head '" + row.object_id + "' has no stable id");
    }
    const int64_t sid = *row.stable_table_id;
    if (format >= kFirstHashedFormat &&
        !row.row_count) {  // tombstoned (ParseTableHead checks the state agrees)
      return format >= kFirstTombstoneLevelsFormat ? kFirstTombstonePartition
                                                   : HashedTombstonePartition(sid);
    }
    return LiveHeadPartition(sid, format);
  }
  if (row.object_type == object_type::kGraphHead) return kGraphPartition;
  if (row.object_type == object_type::kTableDef || row.object_type == object_type::kGrant) {
    return kCatalogPartition;
  }
  return Status::InvalidArgument("'" + row.object_id + "' is not a mutable row");
}

void HeadDirectory::Set(uint32_t partition, const File& file, uint32_t offset, uint32_t count) {
  auto it = std::find(files.begin(), files.end(), file);
  if (it == files.end()) it = files.insert(files.end(), file);
  slots[partition] = {static_cast<int32_t>(it - files.begin()), offset, count};
}

void HeadDirectory::Prune() {
  std::vector<File> kept;
  std::vector<int32_t> remap(files.size(), -1);
  for (Slot& s : slots) {
    if (s.file < 0) continue;
    if (remap[s.file] < 0) {
      remap[s.file] = static_cast<int32_t>(kept.size());
      kept.push_back(files[s.file]);
    }
    s.file = remap[s.file];
  }
  files = std::move(kept);
}

std::string EncodeHeadDirectory(const HeadDirectory& d) {
  std::string out(kMagic);
  PutFixed32(&out, kManifestFormatVersion);
  PutFixed32(&out, static_cast<uint32_t>(d.slots.size()));
  PutFixed32(&out, static_cast<uint32_t>(d.files.size()));
  for (const auto& f : d.files) {
    PutLengthPrefixed(&out, f.path);
    PutFixed64(&out, f.size);
    PutFixed64(&out, f.offset);
  }
  for (const auto& s : d.slots) {
    PutFixed32(&out, static_cast<uint32_t>(s.file));
    PutFixed32(&out, s.offset);
    PutFixed32(&out, s.count);
  }
  PutFixed64(&out, Hash64(out));
  return out;
}

Result<HeadDirectory> DecodeHeadDirectory(std::string_view bytes) {
  const std::string what = "manifest head directory";
  if (bytes.size() < kMagic.size() + 8 + 8 || bytes.substr(0, kMagic.size()) != kMagic) {
    return Status::DataLoss(what + " has no LMH5 magic: this is not a Loam v5 manifest");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (VerifyChecksums() && Hash64(body) != DecodeFixed(bytes.data() + body.size(), 8)) {
    return Status::DataLoss(what + " checksum mismatch");
  }
  Decoder d(body.substr(kMagic.size()), what);
  ASSIGN_OR_RETURN(uint32_t format, d.U32());
  if (format < kOldestManifestFormat || format > kManifestFormatVersion) {
    return Status::FailedPrecondition(
               "manifest format v" + std::to_string(format) + " is not supported by this build (v" +
               std::to_string(kOldestManifestFormat) + " to v" +
               std::to_string(kManifestFormatVersion) + "); migrate or upgrade Loam")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  ASSIGN_OR_RETURN(uint32_t nslots, d.U32());
  ASSIGN_OR_RETURN(uint32_t nfiles, d.U32());
  if (nslots != (format >= kFirstHashedFormat ? kNumPartitions : kPartitionsBeforeFormat7)) {
    return d.Corrupt("wrong partition count");
  }
  HeadDirectory out;
  out.format = format;
  for (uint32_t i = 0; i < nfiles; ++i) {
    ASSIGN_OR_RETURN(std::string_view path, d.LengthPrefixed());
    ASSIGN_OR_RETURN(uint64_t size, d.U64());
    uint64_t offset = 0;
    if (format >= 6) {
      ASSIGN_OR_RETURN(offset, d.U64());
    }
    out.files.push_back({std::string(path), size, offset});
  }
  for (uint32_t i = 0; i < nslots; ++i) {
    HeadDirectory::Slot& s = out.slots[i];
    ASSIGN_OR_RETURN(uint32_t file, d.U32());
    ASSIGN_OR_RETURN(s.offset, d.U32());
    ASSIGN_OR_RETURN(s.count, d.U32());
    s.file = static_cast<int32_t>(file);
    if (s.file < -1 || s.file >= static_cast<int32_t>(nfiles))
      return d.Corrupt("slot names no file");
  }
  if (!d.done()) return d.Corrupt("trailing bytes");
  return out;
}

}  // namespace loam
