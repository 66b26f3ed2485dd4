#include "dataset/version_file.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/coding.h"
#include "common/hash.h"

namespace loam {
namespace {

DatasetVersion Sample() {
  DatasetVersion v;
  v.version = 42;
  v.timestamp_micros = 1'700'000'000'000'000;
  v.schema = Schema{{{"id", DataType::Int64(), false}, {"d", DataType::Decimal(10, 2)}}};
  v.fragments = {{3, "data/a.lfrag", 1000, 10, "_deletions/3-x.ldel", 2},
                 {4, "tree/b/data/c.lfrag", 2000, 20, "", 0}};
  v.next_fragment_id = 5;
  v.branch = {"b", "", 40};
  v.txn.op = OpType::kMergeInsert;
  v.txn.read_version = 41;
  v.txn.id = "01HZZZZZZZZZZZZZZZZZZZZZZZ";
  v.txn.added = {{0, "tree/b/data/c.lfrag", 2000, 20, "", 0}};
  v.txn.deleted = {{3, DeletionVector({7, 1})}};
  v.txn.inserted_keys = {"k1", std::string("\0\1", 2)};
  IndexMeta idx;
  idx.name = "by_id";
  idx.column = "id";
  idx.key_type = DataType::Int64();
  idx.path = "_indices/by_id-x.lidx";
  idx.file_size = 100;
  idx.root_offset = 50;
  idx.root_size = 50;
  idx.levels = 2;
  idx.entries = 9;
  idx.fragments = {3, 4};
  v.indices = {idx};
  v.txn.indices = {idx};
  v.app_section = "app";
  v.metadata = {{"k", "v"}};
  return v;
}

TEST(VersionFileTest, RoundTrip) {
  const DatasetVersion v = Sample();
  const std::string bytes = EncodeVersionFile(v);
  DatasetVersion back = DecodeVersionFile(bytes, "t").value();
  EXPECT_EQ(back.version, v.version);
  EXPECT_EQ(back.timestamp_micros, v.timestamp_micros);
  EXPECT_EQ(back.schema, v.schema);
  EXPECT_EQ(back.fragments, v.fragments);
  EXPECT_EQ(back.next_fragment_id, 5u);
  EXPECT_EQ(back.branch, v.branch);
  EXPECT_EQ(back.txn, v.txn);
  EXPECT_EQ(back.app_section, "app");
  EXPECT_EQ(back.indices, v.indices);
  EXPECT_EQ(back.metadata, v.metadata);
  VersionHeader h = DecodeVersionHeader(std::string_view(bytes).substr(0, 80), "t").value();
  EXPECT_EQ(h.version, 42u);
  EXPECT_EQ(h.live_rows, 28u);
}

TEST(VersionFileTest, EveryCorruptedByteIsDataLoss) {
  const std::string good = EncodeVersionFile(Sample());
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    Status s = DecodeVersionFile(bad, "t").status();
    ASSERT_TRUE(s.IsDataLoss()) << "byte " << i << ": " << s;
  }
  EXPECT_TRUE(DecodeVersionFile(good.substr(0, good.size() - 1), "t").status().IsDataLoss());
}

TEST(VersionFileTest, AnApplicationSectionIsPaddedAndTheUnpaddedLayoutStillReads) {
  const DatasetVersion v = Sample();
  const std::string padded = EncodeVersionFile(v);
  // The header request returns the same bytes whatever the body's size.
  EXPECT_GE(padded.size(), kHeaderReadBytes + 8);
  EXPECT_EQ(padded.substr(kVersionHeaderSize + v.app_section.size(),
                          kHeaderReadBytes - kVersionHeaderSize - v.app_section.size()),
            std::string(kHeaderReadBytes - kVersionHeaderSize - v.app_section.size(), '\0'));
  // The layout written before padding: body right after the section.
  std::string unpadded = padded.substr(0, kVersionHeaderSize + v.app_section.size()) +
                         padded.substr(kHeaderReadBytes);
  std::string offset;
  PutFixed64(&offset, kVersionHeaderSize + v.app_section.size());
  unpadded.replace(32, 8, offset);
  Hasher64 h;
  h.Update(std::string_view(unpadded).substr(0, kVersionHeaderSize - 8));
  h.Update(v.app_section);
  std::string checksum;
  PutFixed64(&checksum, h.Digest());
  unpadded.replace(kVersionHeaderSize - 8, 8, checksum);
  DatasetVersion back = DecodeVersionFile(unpadded, "old").value();
  EXPECT_EQ(back.app_section, v.app_section);
  EXPECT_EQ(back.fragments, v.fragments);
  // Without an application section nothing is padded.
  DatasetVersion plain = v;
  plain.app_section.clear();
  EXPECT_EQ(EncodeVersionFile(plain).size(), padded.size() - kHeaderReadBytes + kVersionHeaderSize);
}

TEST(VersionFileTest, NamesSortNewestFirst) {
  EXPECT_EQ(VersionFileName(1), "18446744073709551614.lver");
  EXPECT_LT(VersionFileName(10), VersionFileName(9));
  EXPECT_LT(VersionFileName(1000000), VersionFileName(999999));
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{12345}, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(ParseVersionFileName(VersionFileName(v)), v);
  }
  EXPECT_FALSE(ParseVersionFileName("x.lver"));
  EXPECT_FALSE(ParseVersionFileName("1844674407370955161a.lver"));
  EXPECT_FALSE(ParseVersionFileName("99999999999999999999.lver"));  // overflow
}

}  // namespace
}  // namespace loam
