#include "dataset/deletion_file.h"

#include <roaring/roaring.h>

#include <algorithm>
#include <memory>

#include "common/coding.h"
#include "common/hash.h"
#include "common/sorted.h"
#include "common/status_macros.h"

namespace loam {
namespace {
constexpr std::string_view kDeletionFileMagic = "LOAMDELV";
constexpr uint16_t kSortedVersion = 1;                    // u32 rows
constexpr uint16_t kBitmapVersion = kDeletionFileFormat;  // a portable roaring bitmap
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

namespace {

std::string Header(uint16_t version, uint32_t n) {
  std::string out(kDeletionFileMagic);
  PutFixed16(&out, version);
  PutFixed16(&out, 0);
  PutFixed32(&out, n);
  return out;
}

struct RoaringFree {
  void operator()(roaring_bitmap_t* b) const { roaring_bitmap_free(b); }
};
using Bitmap = std::unique_ptr<roaring_bitmap_t, RoaringFree>;

// Format 2's body: exactly one portable roaring bitmap of `n` rows, each
// below `max_rows`, read back strictly ascending. The bitmap's own headers
// are not trusted: its cardinality and maximum are checked before the rows
// are walked, and the walk stops at the declared count.
Status DecodeBitmap(Decoder& d, uint32_t n, uint64_t max_rows, std::vector<uint32_t>* rows) {
  if (max_rows >= DeletionVector::kUnboundedRows) {
    return d.Corrupt("a bitmap outside a fragment's deletion file");
  }
  ASSIGN_OR_RETURN(const std::string_view body, d.Bytes(d.remaining()));
  Bitmap b(roaring_bitmap_portable_deserialize_safe(body.data(), body.size()));
  if (b == nullptr || roaring_bitmap_portable_size_in_bytes(b.get()) != body.size()) {
    return d.Corrupt("not one roaring bitmap");
  }
  if (roaring_bitmap_get_cardinality(b.get()) != n) {
    return d.Corrupt("row count disagrees with the bitmap");
  }
  if (n > max_rows || (n > 0 && roaring_bitmap_maximum(b.get()) >= max_rows)) {
    return d.Corrupt("a row beyond the fragment's " + std::to_string(max_rows));
  }
  rows->reserve(n);
  struct Walk {
    std::vector<uint32_t>* rows;
    uint32_t n;
    uint64_t max_rows;
    bool ascending = true;
  } walk{rows, n, max_rows};
  // Stops at the first row out of order, past the fragment or past the
  // declared count (the containers' own counts are not trusted).
  const auto take = [](uint32_t row, void* param) {
    Walk* w = static_cast<Walk*>(param);
    if (w->rows->size() == w->n || row >= w->max_rows ||
        (!w->rows->empty() && row <= w->rows->back())) {
      w->ascending = false;
      return false;
    }
    w->rows->push_back(row);
    return true;
  };
  if (!roaring_iterate(b.get(), take, &walk) || !walk.ascending) {
    return d.Corrupt("bitmap rows out of order, past the fragment or past their count");
  }
  if (rows->size() != n) return d.Corrupt("row count disagrees with the bitmap");
  return Status::OK();
}

Status DecodeSorted(Decoder& d, uint32_t n, uint64_t max_rows, std::vector<uint32_t>* rows) {
  if (d.remaining() != 4ull * n) return d.Corrupt("row count disagrees with size");
  rows->reserve(n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint32_t r, d.U32());
    if (!rows->empty() && r <= rows->back()) return d.Corrupt("rows not ascending");
    if (r >= max_rows) return d.Corrupt("a row beyond the fragment's " + std::to_string(max_rows));
    rows->push_back(r);
  }
  return Status::OK();
}

}  // namespace

std::string DeletionVector::Encode() const {
  Bitmap b(roaring_bitmap_of_ptr(rows_.size(), rows_.data()));
  if (b == nullptr) return EncodeSorted();  // out of memory for the bitmap
  roaring_bitmap_run_optimize(b.get());
  const size_t bitmap_bytes = roaring_bitmap_portable_size_in_bytes(b.get());
  // A few scattered rows: the bitmap's own headers outweigh 4 bytes a row.
  if (bitmap_bytes >= 4 * rows_.size()) return EncodeSorted();
  std::string out = Header(kBitmapVersion, static_cast<uint32_t>(rows_.size()));
  const size_t at = out.size();
  out.resize(at + bitmap_bytes);
  roaring_bitmap_portable_serialize(b.get(), out.data() + at);
  PutFixed64(&out, Hash64(out));
  return out;
}

std::string DeletionVector::EncodeSorted() const {
  std::string out = Header(kSortedVersion, static_cast<uint32_t>(rows_.size()));
  for (uint32_t r : rows_) PutFixed32(&out, r);
  PutFixed64(&out, Hash64(out));
  return out;
}

Result<DeletionVector> DeletionVector::Decode(std::string_view bytes, const std::string& what,
                                              uint64_t max_rows) {
  if (bytes.size() < 24 || bytes.substr(0, 8) != kDeletionFileMagic) {
    return Status::DataLoss(what + " is not a Loam deletion file");
  }
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  if (VerifyChecksums() && Hash64(body) != DecodeFixed(bytes.data() + body.size(), 8)) {
    return Status::DataLoss(what + ": checksum mismatch");
  }
  Decoder d(body.substr(8), what);
  ASSIGN_OR_RETURN(uint16_t version, d.U16());
  ASSIGN_OR_RETURN(uint16_t flags, d.U16());
  if ((version != kSortedVersion && version != kBitmapVersion) || flags != 0) {
    return Status::FailedPrecondition(what + " has deletion file version " +
                                      std::to_string(version) + "; upgrade Loam to read it")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  DeletionVector dv;
  if (version == kSortedVersion) {
    RETURN_NOT_OK(DecodeSorted(d, n, max_rows, &dv.rows_));
  } else {
    RETURN_NOT_OK(DecodeBitmap(d, n, max_rows, &dv.rows_));
  }
  return dv;
}

Result<DeletionVector> ReadDeletionFile(ObjectStore& store, const std::string& key,
                                        uint64_t max_rows) {
  ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  return DeletionVector::Decode(bytes, "deletion file '" + key + "'", max_rows);
}

Result<DeletionVector> ReadDeletionFileAt(ObjectStore& store, const std::string& key,
                                          uint64_t offset, uint64_t size, uint64_t max_rows) {
  if (offset == 0) return ReadDeletionFile(store, key, max_rows);
  const std::string what = "deletion file in '" + key + "' at byte " + std::to_string(offset);
  ASSIGN_OR_RETURN(std::string bytes, store.GetRecordedRange(key, offset, size, what));
  return DeletionVector::Decode(bytes, what, max_rows);
}

}  // namespace loam
