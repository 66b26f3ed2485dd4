// Deletion vectors: the sorted row offsets deleted from one fragment, stored
// as an immutable file (docs/format/dataset.md, "Deletion file").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/object_store.h"

namespace loam {

// The deletion file format this build writes (a roaring bitmap, or format 1
// when smaller) and the oldest it reads.
inline constexpr uint16_t kDeletionFileFormat = 2;
inline constexpr uint16_t kOldestDeletionFileFormat = 1;

class DeletionVector {
 public:
  DeletionVector() = default;
  // `rows` need not be sorted or unique.
  explicit DeletionVector(std::vector<uint32_t> rows);

  const std::vector<uint32_t>& rows() const { return rows_; }
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  bool Contains(uint32_t row) const;
  bool Intersects(const DeletionVector& other) const;
  DeletionVector Union(const DeletionVector& other) const;
  // Rows in this vector that are not in `base`.
  DeletionVector Minus(const DeletionVector& base) const;

  // A deletion file: format 2, the rows as a roaring bitmap (portable
  // serialization), unless format 1 is smaller (a few scattered rows); see
  // docs/format/dataset.md, "Deletion file".
  std::string Encode() const;
  // Format 1: the sorted rows, 4 bytes each. For the vectors a version
  // file's transaction records, whose decoding no fragment bounds.
  std::string EncodeSorted() const;
  // Either format. Rows must lie below `max_rows`; format 2 is read only
  // with a bound (a few bytes of bitmap can name 2^32 rows), so a vector
  // decoded without one (a transaction's) must be format 1.
  static Result<DeletionVector> Decode(std::string_view bytes, const std::string& what,
                                       uint64_t max_rows = kUnboundedRows);
  static constexpr uint64_t kUnboundedRows = uint64_t{1} << 32;

  friend bool operator==(const DeletionVector&, const DeletionVector&) = default;

 private:
  std::vector<uint32_t> rows_;  // ascending, unique
};

// The deletion file of a fragment of `max_rows` physical rows.
Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& key,
                                        uint64_t max_rows);
// One embedded in a version file: bytes [offset, offset + size) of `key`.
Result<DeletionVector> ReadDeletionFileAt(ObjectStore& store, const std::string& key,
                                          uint64_t offset, uint64_t size, uint64_t max_rows);

}  // namespace loam
