// Deletion files: format 2 (a roaring bitmap) as written, format 1 (sorted
// rows) as older builds wrote and transactions record, and the bounds a
// reader applies to both.
#include "dataset/deletion_file.h"

#include <gtest/gtest.h>
#include <roaring/roaring.h>

#include "common/coding.h"
#include "common/hash.h"

namespace loam {
namespace {

// A deletion file of `version` declaring `n` rows around `body`, with a
// valid checksum: what a buggy or hostile writer could store.
std::string Seal(uint16_t version, uint32_t n, std::string_view body) {
  std::string out = "LOAMDELV";
  PutFixed16(&out, version);
  PutFixed16(&out, 0);
  PutFixed32(&out, n);
  out.append(body);
  PutFixed64(&out, Hash64(out));
  return out;
}

std::string BitmapOf(roaring_bitmap_t* b) {
  std::string out(roaring_bitmap_portable_size_in_bytes(b), '\0');
  roaring_bitmap_portable_serialize(b, out.data());
  roaring_bitmap_free(b);
  return out;
}

std::vector<uint32_t> RowsFrom(uint32_t first, uint32_t n) {
  std::vector<uint32_t> rows(n);
  for (uint32_t i = 0; i < n; ++i) rows[i] = first + i;
  return rows;
}

TEST(DeletionFileTest, BothFormatsReadBackAndTheBitmapIsWhatIsWritten) {
  std::vector<uint32_t> rows = RowsFrom(1000, 5000);
  for (uint32_t r = 100'000; r < 400'000; r += 7) rows.push_back(r);
  const DeletionVector dv(rows);
  const std::string bitmap = dv.Encode(), sorted = dv.EncodeSorted();
  EXPECT_EQ(DecodeFixed(bitmap.data() + 8, 2), 2u);
  EXPECT_EQ(DecodeFixed(sorted.data() + 8, 2), 1u);
  EXPECT_LT(bitmap.size() * 2, sorted.size());  // a run and a dense stretch compress
  for (const std::string& bytes : {bitmap, sorted}) {
    Result<DeletionVector> back = DeletionVector::Decode(bytes, "dv", 400'000);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, dv);
  }
  EXPECT_EQ(DeletionVector::Decode(DeletionVector().Encode(), "dv", 1).value().size(), 0u);
}

// One row costs 4 bytes in format 1 and more in a bitmap's headers: a few
// scattered rows are written as format 1, byte for byte as before.
TEST(DeletionFileTest, AFewScatteredRowsStayInTheSmallerSortedFormat) {
  const DeletionVector one({7}), scattered({5, 70'000, 900'000});
  EXPECT_EQ(one.Encode(), one.EncodeSorted());
  EXPECT_EQ(one.Encode().size(), 28u);
  EXPECT_EQ(scattered.Encode(), scattered.EncodeSorted());
  const DeletionVector dense(RowsFrom(0, 64));
  EXPECT_LT(dense.Encode().size(), dense.EncodeSorted().size());
}

TEST(DeletionFileTest, RowsPastTheFragmentAreDataLossInEitherFormat) {
  const DeletionVector dv({3, 9, 10});
  const std::string bitmap = Seal(2, 3, BitmapOf(roaring_bitmap_of(3, 3, 9, 10)));
  for (const std::string& bytes : {bitmap, dv.EncodeSorted()}) {
    EXPECT_TRUE(DeletionVector::Decode(bytes, "dv", 11).ok());
    Status st = DeletionVector::Decode(bytes, "dv", 10).status();
    EXPECT_TRUE(st.IsDataLoss()) << st;
    EXPECT_NE(st.message().find("beyond the fragment"), std::string::npos) << st;
  }
}

// A bitmap names up to 65,536 rows in four bytes: it is read only with its
// fragment's row count as a bound, so a vector decoded without one (inside
// a version file's transaction) must be format 1.
TEST(DeletionFileTest, ABitmapIsReadOnlyWithAFragmentsBound) {
  const std::string bytes = Seal(2, 2, BitmapOf(roaring_bitmap_of(2, 1, 2)));
  ASSERT_TRUE(DeletionVector::Decode(bytes, "dv", 3).ok());
  Status st = DeletionVector::Decode(bytes, "txn dv").status();
  EXPECT_TRUE(st.IsDataLoss()) << st;
  // 2^32 - 1 rows in a few hundred kilobytes, header and bitmap agreeing:
  // refused by the fragment's bound before any row is listed.
  roaring_bitmap_t* all = roaring_bitmap_create();
  roaring_bitmap_add_range(all, 0, (uint64_t{1} << 32) - 1);
  roaring_bitmap_run_optimize(all);
  const std::string huge = BitmapOf(all);
  EXPECT_LT(huge.size(), 1u << 20);
  st = DeletionVector::Decode(Seal(2, 0xFFFFFFFF, huge), "dv", 1 << 20).status();
  EXPECT_TRUE(st.IsDataLoss()) << st;
  EXPECT_NE(st.message().find("beyond the fragment"), std::string::npos) << st;
}

TEST(DeletionFileTest, ABitmapThatDisagreesWithItsHeaderIsDataLoss) {
  const std::string body = BitmapOf(roaring_bitmap_of(3, 1, 5, 9));
  EXPECT_TRUE(DeletionVector::Decode(Seal(2, 3, body), "dv", 100).ok());
  for (const std::string& bad :
       {Seal(2, 2, body), Seal(2, 4, body), Seal(2, 3, body + "x"),
        Seal(2, 3, body.substr(0, body.size() - 1)), Seal(2, 0, ""), Seal(3, 3, body)}) {
    Status st = DeletionVector::Decode(bad, "dv", 100).status();
    EXPECT_FALSE(st.ok());
    EXPECT_TRUE(st.IsDataLoss() || st.Is(ErrorCode::kUnsupportedFormat)) << st;
  }
}

}  // namespace
}  // namespace loam
