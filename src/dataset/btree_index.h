// A scalar B+tree index file: (key, row address) entries sorted by key, in
// leaf pages chained left to right, under internal pages of (first key,
// child) entries. A lookup reads one page per level, by range requests,
// starting from the root whose position the version file records
// (docs/format/dataset.md, "Index file").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/lru_cache.h"
#include "loam/batch.h"
#include "loam/object_store.h"

namespace loam {

// Where an index file's root is and what it covers; kept in version files.
struct IndexMeta {
  std::string name;
  std::string column;
  DataType key_type;
  std::string path;  // root-relative
  uint64_t file_size = 0;
  uint64_t root_offset = 0;
  uint32_t root_size = 0;
  uint32_t levels = 0;  // 1 = the root is a leaf
  uint64_t entries = 0;
  std::vector<uint64_t> fragments;  // covered fragment ids, ascending

  bool Covers(uint64_t fragment_id) const;
  // Whether it covers a fragment numbered `floor` or more (any, for 0).
  bool CoversFrom(uint64_t floor) const {
    return floor == 0 || (!fragments.empty() && fragments.back() >= floor);
  }
  friend bool operator==(const IndexMeta&, const IndexMeta&) = default;
};

// More levels than any index of 2^32 entries at two entries a page needs: a
// version file claiming more is corrupt.
inline constexpr uint32_t kMaxIndexLevels = 33;

struct IndexEntry {
  std::string key;  // order-preserving encoding (EncodeIndexKey)
  uint64_t row_address = 0;
};

// Whether a column of this type can be indexed (integers, date, timestamp,
// string, binary).
bool IsIndexableType(const DataType& type);
// Encodes a non-null value so that byte order equals value order.
std::string EncodeIndexKey(const DataType& type, const Value& v);

// Writes an index over `entries` (sorted here) at `key`; fills the file
// fields of `meta`.
Status WriteBTreeIndex(ObjectStore& store, const std::string& key, std::vector<IndexEntry> entries,
                       uint32_t entries_per_page, IndexMeta* meta);

struct IndexLookupStats {
  int pages_read = 0;  // fetched from the store (cache hits excluded)
};

// Row addresses of entries with lo <= key <= hi (either bound may be absent).
Result<std::vector<uint64_t>> LookupBTreeRange(ObjectStore& store, const std::string& key,
                                               const IndexMeta& meta,
                                               const std::optional<std::string>& lo,
                                               const std::optional<std::string>& hi,
                                               IndexLookupStats* stats = nullptr,
                                               LruCache* cache = nullptr);
// All entries, in key order (for merging an index with new fragments).
Result<std::vector<IndexEntry>> ReadAllBTreeEntries(ObjectStore& store, const std::string& key,
                                                    const IndexMeta& meta);

}  // namespace loam
