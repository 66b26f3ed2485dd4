#include "dataset/deletion_file.h"

#include <algorithm>

#include "common/coding.h"
#include "common/hash.h"
#include "common/sorted.h"
#include "common/status_macros.h"

namespace loam {
namespace {
constexpr std::string_view kDeletionFileMagic = "LOAMDELV";
constexpr uint16_t kVersion = 1;
}  // namespace

DeletionVector::DeletionVector(std::vector<uint32_t> rows) : rows_(std::move(rows)) {
  std::sort(rows_.begin(), rows_.end());
  rows_.erase(std::unique(rows_.begin(), rows_.end()), rows_.end());
}

bool DeletionVector::Contains(uint32_t row) const {
  return std::binary_search(rows_.begin(), rows_.end(), row);
}

bool DeletionVector::Intersects(const DeletionVector& other) const {
  return SortedIntersect(rows_, other.rows_);
}

DeletionVector DeletionVector::Union(const DeletionVector& other) const {
  DeletionVector out;
  std::set_union(rows_.begin(), rows_.end(), other.rows_.begin(), other.rows_.end(),
                 std::back_inserter(out.rows_));
  return out;
}

DeletionVector DeletionVector::Minus(const DeletionVector& base) const {
  DeletionVector out;
  std::set_difference(rows_.begin(), rows_.end(), base.rows_.begin(), base.rows_.end(),
                      std::back_inserter(out.rows_));
  return out;
}

std::string DeletionVector::Encode() const {
  std::string out(kDeletionFileMagic);
  PutFixed16(&out, kVersion);
  PutFixed16(&out, 0);
  PutFixed32(&out, static_cast<uint32_t>(rows_.size()));
  for (uint32_t r : rows_) PutFixed32(&out, r);
  PutFixed64(&out, Hash64(out));
  return out;
}

Result<DeletionVector> DeletionVector::Decode(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 24 || bytes.substr(0, 8) != kDeletionFileMagic) {
    return Status::DataLoss(what + " is not a Loam deletion file");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (kVerifyChecksums && Hash64(body) != DecodeFixed(bytes.data() + body.size(), 8)) {
    return Status::DataLoss(what + ": checksum mismatch");
  }
  Decoder d(body.substr(8), what);
  ASSIGN_OR_RETURN(uint16_t version, d.U16());
  ASSIGN_OR_RETURN(uint16_t flags, d.U16());
  if (version != kVersion || flags != 0) {
    return Status::FailedPrecondition(what + " has deletion file version " +
                                      std::to_string(version) + "; upgrade Loam to read it")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  if (d.remaining() != 4ull * n) return d.Corrupt("row count disagrees with size");
  DeletionVector dv;
  dv.rows_.reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint32_t r, d.U32());
    if (!dv.rows_.empty() && r <= dv.rows_.back()) return d.Corrupt("rows not ascending");
    dv.rows_.push_back(r);
  }
  return dv;
}

Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& key) {
  ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  return DeletionVector::Decode(bytes, "deletion file '" + key + "'");
}

Result<DeletionVector> ReadDeletionFileAt(ObjectStore& store, const std::string& key,
                                          uint64_t offset, uint64_t size) {
  if (offset == 0) return ReadDeletionFile(store, key);
  const std::string what = "deletion file in '" + key + "' at byte " + std::to_string(offset);
  ASSIGN_OR_RETURN(std::string bytes, store.GetRecordedRange(key, offset, size, what));
  return DeletionVector::Decode(bytes, what);
}

}  // namespace loam
