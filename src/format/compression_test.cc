#include "format/compression.h"

#include <gtest/gtest.h>
#include <zstd.h>

#include <random>
#include <string>

namespace loam {
namespace {

// A page whose footer claims more bytes than its codec can expand its
// stored bytes to is DataLoss, and nothing of the claimed size is
// allocated (a 4 GiB claim for a 20-byte page took 22 s and 880 MB before;
// found by fragment_fuzz). Real pages, even all-zero ones, still decode.
TEST(CompressionTest, ADecompressedSizeBeyondTheCodecsReachIsRefused) {
  for (Codec codec : {Codec::kZstd, Codec::kLz4}) {
    const std::string zeros(1 << 20, '\0');
    std::string stored, back;
    ASSERT_TRUE(Compress(codec, zeros, 3, &stored).ok());
    ASSERT_TRUE(Decompress(codec, stored, zeros.size(), &back).ok());
    EXPECT_EQ(back, zeros);
    std::string out;
    Status s = Decompress(codec, stored, size_t{4} << 30, &out);
    EXPECT_TRUE(s.IsDataLoss()) << s;
    EXPECT_NE(s.message().find("cannot hold"), std::string::npos) << s;
    EXPECT_LT(out.capacity(), size_t{1} << 30);
  }
  std::string out;
  EXPECT_TRUE(Decompress(Codec::kNone, "abc", 4, &out).IsDataLoss());
  // A zstd frame records its size: a footer that disagrees is refused
  // before anything of that size is allocated.
  std::string stored;
  ASSERT_TRUE(Compress(Codec::kZstd, std::string(1000, 'x'), 3, &stored).ok());
  Status wrong = Decompress(Codec::kZstd, stored, 999, &out);
  EXPECT_TRUE(wrong.IsDataLoss()) << wrong;
  EXPECT_NE(wrong.message().find("does not hold the 999 bytes"), std::string::npos) << wrong;
}

// A claim the codec could reach but the bytes do not: memory follows what
// the bytes decode to, not the footer. A zstd frame without a recorded size
// (the writer always records one) claiming 30 MiB for 1,000 bytes, and an
// LZ4 block of zeros claiming the most its size allows.
TEST(CompressionTest, AnUnreachedClaimAllocatesOnlyWhatTheBytesDecodeTo) {
  std::string raw(1000, '\0');
  std::mt19937 rng(7);
  for (char& c : raw) c = static_cast<char>(rng());
  std::string frame(ZSTD_compressBound(raw.size()), '\0');
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ASSERT_EQ(ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0), 0u);
  const size_t n = ZSTD_compress2(cctx, frame.data(), frame.size(), raw.data(), raw.size());
  ZSTD_freeCCtx(cctx);
  ASSERT_FALSE(ZSTD_isError(n));
  frame.resize(n);
  std::string out;
  Status s = Decompress(Codec::kZstd, frame, size_t{30} << 20, &out);
  EXPECT_TRUE(s.IsDataLoss()) << s;
  EXPECT_LT(out.capacity(), size_t{1} << 20);
  ASSERT_TRUE(Decompress(Codec::kZstd, frame, raw.size(), &out).ok());
  EXPECT_EQ(out, raw);
  // Cut short, the frame is DataLoss, whatever it claimed.
  EXPECT_TRUE(Decompress(Codec::kZstd, frame.substr(0, n / 2), raw.size(), &out).IsDataLoss());

  const std::string zeros(1 << 20, '\0');
  std::string block;
  ASSERT_TRUE(Compress(Codec::kLz4, zeros, 0, &block).ok());
  std::string lz4_out;
  s = Decompress(Codec::kLz4, block, 255 * block.size(), &lz4_out);
  EXPECT_TRUE(s.IsDataLoss()) << s;
  EXPECT_NE(s.message().find("does not hold the"), std::string::npos) << s;
  EXPECT_EQ(lz4_out.capacity(), std::string().capacity());
  ASSERT_TRUE(Decompress(Codec::kLz4, block, zeros.size(), &lz4_out).ok());
  EXPECT_EQ(lz4_out, zeros);
  EXPECT_TRUE(Decompress(Codec::kLz4, block.substr(0, block.size() - 3), zeros.size(), &lz4_out)
                  .IsDataLoss());
}

}  // namespace
}  // namespace loam
