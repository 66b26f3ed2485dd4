#include "ingest/input_source.h"

#include <gtest/gtest.h>

#include "common/status_macros.h"
#include "ingest/compress_test_util.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

using testing::Gzip;
using testing::Zstd;

Result<std::string> Decode(const std::string& bytes, DecodeLimits limits = {},
                           Compression* kind = nullptr) {
  ASSIGN_OR_RETURN(auto src,
                   DecodedSource::Open(std::make_unique<StringSource>(bytes), "in.csv", limits));
  std::string out;
  char buf[1000];  // small reads exercise the decoders' pending output
  while (true) {
    ASSIGN_OR_RETURN(size_t n, src->Read(buf, sizeof(buf)));
    if (n == 0) break;
    out.append(buf, n);
  }
  if (kind) *kind = src->compression();
  return out;
}

std::string Sample() {
  std::string s;
  for (int i = 0; i < 20000; ++i) s += std::to_string(i) + ",name-" + std::to_string(i * 7) + "\n";
  return s;
}

TEST(DecodedSource, DetectsGzipAndZstdByMagic) {
  const std::string plain = Sample();
  Compression kind;
  EXPECT_EQ(Decode(plain, {}, &kind).value(), plain);
  EXPECT_EQ(kind, Compression::kNone);
  EXPECT_EQ(Decode(Gzip(plain), {}, &kind).value(), plain);
  EXPECT_EQ(kind, Compression::kGzip);
  EXPECT_EQ(Decode(Zstd(plain), {}, &kind).value(), plain);
  EXPECT_EQ(kind, Compression::kZstd);
  EXPECT_EQ(Decode(Gzip("a\n") + Gzip("b\n")).value(), "a\nb\n");  // concatenated members
  EXPECT_EQ(Decode("").value(), "");
  EXPECT_EQ(Decode("ab").value(), "ab");
}

TEST(DecodedSource, TruncatedAndCorruptInputsFail) {
  const std::string plain = Sample();
  for (const std::string& whole : {Gzip(plain), Zstd(plain)}) {
    Status s = Decode(whole.substr(0, whole.size() / 2)).status();
    EXPECT_TRUE(s.IsInvalidArgument()) << s;
    EXPECT_NE(s.message().find("in.csv: the "), std::string::npos) << s;
    EXPECT_NE(s.message().find("input ends inside its compressed stream (a truncated file)"),
              std::string::npos)
        << s;
  }
  std::string corrupt = Gzip(plain);
  corrupt[corrupt.size() / 2] ^= 0x55;
  corrupt[corrupt.size() / 2 + 1] ^= 0x55;
  Status s = Decode(corrupt).status();
  EXPECT_TRUE(s.IsInvalidArgument()) << s;
}

TEST(DecodedSource, ExpansionAndSizeLimits) {
  const std::string zeros(64 << 20, '0');  // compresses about 1000:1
  DecodeLimits ratio;
  ratio.max_expansion_ratio = 100;
  Status s = Decode(Gzip(zeros), ratio).status();
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("expands more than 100x"), std::string::npos) << s;
  Status z = Decode(Zstd(zeros), ratio).status();
  EXPECT_EQ(z.code(), StatusCode::kResourceExhausted) << z;
  DecodeLimits size;
  size.max_decoded_bytes = 1000;
  Status p = Decode(Sample(), size).status();
  EXPECT_EQ(p.code(), StatusCode::kResourceExhausted) << p;
  EXPECT_NE(p.message().find("decodes to more than the limit of 1000 bytes"), std::string::npos);
}

TEST(ObjectByteSource, ReadsAnObjectInRangedChunks) {
  auto store = std::make_shared<MemoryObjectStore>();
  const std::string data = Sample();
  ASSERT_TRUE(store->Put("dir/in.csv", data).ok());
  ObjectByteSource src(store, "dir/in.csv", data.size(), /*chunk=*/4096);
  std::string out;
  char buf[777];
  size_t n;
  while ((n = src.Read(buf, sizeof(buf)).value()) > 0) out.append(buf, n);
  EXPECT_EQ(out, data);
}

}  // namespace
}  // namespace loam::ingest
