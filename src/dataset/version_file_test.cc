#include "dataset/version_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "common/coding.h"
#include "common/hash.h"

namespace loam {
namespace {

DatasetVersion Sample() {
  DatasetVersion v;
  v.version = 42;
  v.timestamp_micros = 1'700'000'000'000'000;
  v.schema = Schema{{{"id", DataType::Int64(), false}, {"d", DataType::Decimal(10, 2)}}};
  v.fragments = {{3, "data/a.lfrag", 0, 1000, 10, "_deletions/3-x.ldel", 0, 0, 2},
                 {4, "tree/b/data/c.lfrag", 0, 2000, 20, "", 0, 0, 0}};
  v.next_fragment_id = 5;
  v.branch = {"b", "", 40};
  v.txn.op = OpType::kMergeInsert;
  v.txn.read_version = 41;
  v.txn.id = "01HZZZZZZZZZZZZZZZZZZZZZZZ";
  v.txn.added = {{0, "tree/b/data/c.lfrag", 0, 2000, 20, "", 0, 0, 0}};
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

std::string ReadFixture(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Version files written by the build before format 2 (testdata/README.md).
std::vector<std::filesystem::path> V1VersionFiles() {
  std::vector<std::filesystem::path> out;
  const std::filesystem::path root = std::filesystem::path(LOAM_TESTDATA_DIR) / "workspace_v1";
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.path().extension() == ".lver") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(VersionFileTest, AnApplicationSectionIsPadded) {
  const DatasetVersion v = Sample();
  const std::string padded = EncodeVersionFile(v);
  // The header request returns the same bytes whatever the body's size.
  EXPECT_GE(padded.size(), kHeaderReadBytes + 8);
  EXPECT_EQ(padded.substr(kVersionHeaderSize + v.app_section.size(),
                          kHeaderReadBytes - kVersionHeaderSize - v.app_section.size()),
            std::string(kHeaderReadBytes - kVersionHeaderSize - v.app_section.size(), '\0'));
  // Without an application section nothing is padded.
  DatasetVersion plain = v;
  plain.app_section.clear();
  EXPECT_EQ(EncodeVersionFile(plain).size(), padded.size() - kHeaderReadBytes + kVersionHeaderSize);
}

TEST(VersionFileTest, FormatOneFilesWrittenByAnOlderBuildStillRead) {
  const auto files = V1VersionFiles();
  ASSERT_EQ(files.size(), 9u);  // 5 manifest versions, 3 + 1 table versions
  int padded = 0;
  for (const auto& path : files) {
    const std::string bytes = ReadFixture(path);
    ASSERT_EQ(DecodeFixed(bytes.data() + 8, 2), 1u) << path;  // format_version 1
    Result<DatasetVersion> v = DecodeVersionFile(bytes, path.string());
    ASSERT_TRUE(v.ok()) << path << ": " << v.status();
    for (const Fragment& f : v->fragments) {
      EXPECT_EQ(f.data_offset, 0u);
      EXPECT_TRUE(f.data_path.ends_with(".lfrag")) << f.data_path;
    }
    if (v->app_section.empty()) continue;
    ++padded;
    // The format 1 layout written before padding: body right after the
    // section. Made from the padded file: cut the padding, fix the header.
    std::string unpadded = bytes.substr(0, kVersionHeaderSize + v->app_section.size()) +
                           bytes.substr(kHeaderReadBytes);
    std::string offset;
    PutFixed64(&offset, kVersionHeaderSize + v->app_section.size());
    unpadded.replace(32, 8, offset);
    Hasher64 h;
    h.Update(std::string_view(unpadded).substr(0, kVersionHeaderSize - 8));
    h.Update(v->app_section);
    std::string checksum;
    PutFixed64(&checksum, h.Digest());
    unpadded.replace(kVersionHeaderSize - 8, 8, checksum);
    DatasetVersion back = DecodeVersionFile(unpadded, "unpadded").value();
    EXPECT_EQ(back.app_section, v->app_section);
    EXPECT_EQ(back.fragments, v->fragments);
  }
  EXPECT_EQ(padded, 4);  // every manifest version but the first
}

// A version with one inline fragment of `bytes`, placed in its own file.
DatasetVersion WithInline(std::string app_section, std::string bytes) {
  DatasetVersion v = Sample();
  v.app_section = std::move(app_section);
  Fragment f;
  f.physical_rows = 3;
  f.inline_bytes = std::make_shared<const std::string>(std::move(bytes));
  v.txn.added.push_back(f);
  f.id = 5;
  v.fragments.push_back(f);
  v.next_fragment_id = 6;
  PlaceInlineFragments(&v, "_versions/" + VersionFileName(v.version));
  return v;
}

TEST(VersionFileTest, InlineFragmentsSitBetweenTheHeaderAndTheBody) {
  for (const std::string app : {"", "app"}) {
    const DatasetVersion v = WithInline(app, "FRAGMENT BYTES");
    const uint64_t start = app.empty() ? kVersionHeaderSize : kHeaderReadBytes;
    EXPECT_EQ(v.txn.added.back().data_offset, start);
    EXPECT_EQ(v.fragments.back().data_offset, start);
    EXPECT_EQ(v.fragments.back().data_path, "_versions/" + VersionFileName(42));
    EXPECT_EQ(v.fragments.back().data_size, 14u);
    const std::string bytes = EncodeVersionFile(v);
    EXPECT_EQ(bytes.substr(start, 14), "FRAGMENT BYTES");
    DatasetVersion back = DecodeVersionFile(bytes, "t").value();
    EXPECT_EQ(back.fragments, v.fragments);
    EXPECT_EQ(back.txn, v.txn);
    EXPECT_EQ(back.fragments.back().inline_bytes, nullptr);  // read back by range
    // The header still comes whole from the first request.
    EXPECT_EQ(DecodeVersionHeader(std::string_view(bytes).substr(0, kHeaderReadBytes), "t")
                  .value()
                  .app_section,
              app);
  }
}

TEST(VersionFileTest, InlineDeletionFilesFollowTheInlineFragments) {
  DatasetVersion v = Sample();  // its transaction deletes rows of fragment 3
  v.app_section.clear();
  Fragment added;
  added.physical_rows = 1;
  added.inline_bytes = std::make_shared<const std::string>("FRAG");
  v.txn.added = {added};
  added.id = 5;
  v.fragments.push_back(added);
  v.next_fragment_id = 6;
  v.fragments[0].deletion_path.clear();
  v.fragments[0].inline_deletion = std::make_shared<const std::string>("DELETIONS");
  const std::string own = "tree/b/_versions/" + VersionFileName(v.version);
  PlaceInlineFragments(&v, own);
  EXPECT_EQ(v.fragments[0].deletion_path, own);
  EXPECT_EQ(v.fragments[0].deletion_offset, kVersionHeaderSize + 4);
  EXPECT_EQ(v.fragments[0].deletion_size, 9u);
  const std::string bytes = EncodeVersionFile(v);
  EXPECT_EQ(bytes.substr(kVersionHeaderSize, 13), "FRAGDELETIONS");
  DatasetVersion back = DecodeVersionFile(bytes, "t").value();
  EXPECT_EQ(back.fragments, v.fragments);
  const std::vector<std::pair<uint64_t, uint64_t>> parts = {{kVersionHeaderSize, 4},
                                                            {kVersionHeaderSize + 4, 9}};
  EXPECT_EQ(InlinePartsOf(back), parts);
  // Committed, the in-memory bytes go; the places stay.
  ForgetInlineBytes(&v);
  EXPECT_EQ(v.fragments[0].inline_deletion, nullptr);
  EXPECT_EQ(v.fragments.back().inline_bytes, nullptr);
  EXPECT_EQ(back.fragments, v.fragments);
}

TEST(VersionFileTest, EveryCorruptedByteOutsideInlineFragmentsIsDataLoss) {
  // Inline fragments carry their own page and footer checksums (read by the
  // fragment reader); every other byte is covered by the version file's.
  const DatasetVersion v = WithInline("app", std::string(100, 'f'));
  const std::string good = EncodeVersionFile(v);
  for (size_t i = 0; i < good.size(); ++i) {
    if (i >= kHeaderReadBytes && i < kHeaderReadBytes + 100) continue;
    std::string bad = good;
    bad[i] = static_cast<char>(bad[i] ^ 0x01);
    Status s = DecodeVersionFile(bad, "t").status();
    ASSERT_TRUE(s.IsDataLoss()) << "byte " << i << ": " << s;
  }
}

TEST(VersionFileTest, AnInlineRegionThatDisagreesWithTheBodyIsDataLoss) {
  // The body says 100 inline bytes; the header says the body starts later.
  DatasetVersion v = WithInline("", std::string(100, 'f'));
  std::string bytes = EncodeVersionFile(v);
  std::string extra =
      bytes.substr(0, kVersionHeaderSize + 100) + "X" + bytes.substr(kVersionHeaderSize + 100);
  std::string offset;
  PutFixed64(&offset, kVersionHeaderSize + 101);
  extra.replace(32, 8, offset);
  std::string checksum;
  PutFixed64(&checksum, Hash64(std::string_view(extra).substr(0, kVersionHeaderSize - 8)));
  extra.replace(kVersionHeaderSize - 8, 8, checksum);
  Status s = DecodeVersionFile(extra, "t").status();
  EXPECT_TRUE(s.IsDataLoss()) << s;
  EXPECT_NE(s.message().find("unreferenced"), std::string::npos) << s;
}

// Rewrites the header checksum of a Sample() file after an edit of its
// header, as a writer that computes checksums would.
void ResealHeader(std::string* bytes) {
  Hasher64 h;
  h.Update(std::string_view(*bytes).substr(0, kVersionHeaderSize - 8));
  h.Update("app");
  std::string checksum;
  PutFixed64(&checksum, h.Digest());
  bytes->replace(kVersionHeaderSize - 8, 8, checksum);
}

TEST(VersionFileTest, ANewerFormatAsksForAnUpgrade) {
  std::string bytes = EncodeVersionFile(Sample());
  std::string format;
  PutFixed16(&format, 3);
  bytes.replace(8, 2, format);
  ResealHeader(&bytes);
  Status s = DecodeVersionFile(bytes, "t").status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("upgrade Loam"), std::string::npos) << s;
}

// A header whose body offset and size wrap around 2^64 to the file's size,
// checksummed as a buggy or hostile writer would: DataLoss, not a throw
// from substr (found by version_file_fuzz once its replays skipped the
// checksums).
TEST(VersionFileTest, ABodyOffsetThatWrapsAroundIsDataLoss) {
  std::string bytes = EncodeVersionFile(Sample());
  const uint64_t size = uint64_t{1} << 63;
  const uint64_t offset = bytes.size() - 8 - size;  // modulo 2^64
  std::string fields;
  PutFixed64(&fields, offset);
  PutFixed64(&fields, size);
  bytes.replace(32, 16, fields);
  ResealHeader(&bytes);
  Status s = DecodeVersionFile(bytes, "t").status();
  EXPECT_TRUE(s.IsDataLoss()) << s;
  EXPECT_NE(s.message().find("size disagrees with the header"), std::string::npos) << s;
}

TEST(VersionFileTest, NamesSortNewestFirst) {
  EXPECT_EQ(VersionFileName(1), "18446744073709551614.lver");
  EXPECT_LT(VersionFileName(10), VersionFileName(9));
  EXPECT_LT(VersionFileName(1000000), VersionFileName(999999));
  for (uint64_t v :
       {uint64_t{0}, uint64_t{1}, uint64_t{12345}, std::numeric_limits<uint64_t>::max()}) {
    EXPECT_EQ(ParseVersionFileName(VersionFileName(v)), v);
  }
  EXPECT_FALSE(ParseVersionFileName("x.lver"));
  EXPECT_FALSE(ParseVersionFileName("1844674407370955161a.lver"));
  EXPECT_FALSE(ParseVersionFileName("99999999999999999999.lver"));  // overflow
}

}  // namespace
}  // namespace loam
