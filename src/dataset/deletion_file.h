// Deletion vectors: the sorted row offsets deleted from one fragment, stored
// as an immutable file (docs/format/dataset.md, "Deletion file").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/object_store.h"

namespace loam {

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

  std::string Encode() const;
  static Result<DeletionVector> Decode(std::string_view bytes, const std::string& what);

  friend bool operator==(const DeletionVector&, const DeletionVector&) = default;

 private:
  std::vector<uint32_t> rows_;  // ascending, unique
};

Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& key);
// One embedded in a version file: bytes [offset, offset + size) of `key`.
Result<DeletionVector> ReadDeletionFileAt(ObjectStore& store, const std::string& key,
                                          uint64_t offset, uint64_t size);

}  // namespace loam
