#include "format/compression.h"

#include <lz4.h>
#include <zstd.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace loam {
namespace {

// One zstd context per thread, reused across pages: a fresh context per call
// allocates and zero-fills megabytes of match tables for every page.
struct ZstdContexts {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_DCtx* dctx = ZSTD_createDCtx();
  ~ZstdContexts() {
    ZSTD_freeCCtx(cctx);
    ZSTD_freeDCtx(dctx);
  }
};

ZstdContexts& ThreadZstd() {
  thread_local ZstdContexts contexts;
  return contexts;
}

}  // namespace

std::string_view CodecName(Codec c) {
  switch (c) {
    case Codec::kNone:
      return "none";
    case Codec::kZstd:
      return "zstd";
    case Codec::kLz4:
      return "lz4";
  }
  return "unknown";
}

Result<Codec> ParseCodec(std::string_view name) {
  for (Codec c : {Codec::kNone, Codec::kZstd, Codec::kLz4}) {
    if (name == CodecName(c)) return c;
  }
  return Status::InvalidArgument("unknown codec '" + std::string(name) + "' (none, zstd, lz4)");
}

Status Compress(Codec codec, std::string_view raw, int zstd_level, std::string* out) {
  // Compress into a per-thread buffer of the worst-case size, then append only
  // the bytes produced: sizing `out` to the bound would zero-fill (and fault
  // in) a page-sized buffer per call.
  thread_local std::string bound;
  switch (codec) {
    case Codec::kNone:
      out->append(raw);
      return Status::OK();
    case Codec::kZstd: {
      if (bound.size() < ZSTD_compressBound(raw.size()))
        bound.resize(ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compressCCtx(ThreadZstd().cctx, bound.data(), bound.size(), raw.data(),
                                         raw.size(), zstd_level);
      if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
      out->append(bound.data(), n);
      return Status::OK();
    }
    case Codec::kLz4: {
      if (raw.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
        return Status::InvalidArgument("page too large for lz4");
      }
      const size_t limit = LZ4_compressBound(static_cast<int>(raw.size()));
      if (bound.size() < limit) bound.resize(limit);
      const int n = LZ4_compress_default(raw.data(), bound.data(), static_cast<int>(raw.size()),
                                         static_cast<int>(limit));
      if (n <= 0) return Status::Internal("lz4 compression failed");
      out->append(bound.data(), n);
      return Status::OK();
    }
  }
  return Status::InvalidArgument("unknown codec");
}

namespace {

// The most a stored page can expand to, by its codec's format: a zstd block
// of at most 128 KiB costs at least 4 bytes (an RLE block), an LZ4 sequence
// at most 255 bytes per byte. A footer claiming more is not believed (and
// makes no allocation of that size).
uint64_t MaxExpansion(Codec codec, size_t stored) {
  switch (codec) {
    case Codec::kZstd:
      return uint64_t{32768} * stored;
    case Codec::kLz4:  // and LZ4 sizes are ints
      return std::min<uint64_t>(uint64_t{255} * stored + 255, std::numeric_limits<int>::max());
    case Codec::kNone:
      break;
  }
  return stored;
}

// Claims of up to this many times the stored size are allocated at once;
// beyond it (all-zero pages, or a hostile footer) the real size is found
// first, so memory follows what the bytes decode to, not what they claim.
constexpr uint64_t kTrustedExpansion = 64;

// The decoded size of an LZ4 block, found by walking its sequences without
// writing them, or nullopt when the block ends mid-sequence. Stops counting
// past `limit`.
std::optional<uint64_t> Lz4DecodedSize(std::string_view block, uint64_t limit) {
  const auto* p = reinterpret_cast<const uint8_t*>(block.data());
  const uint8_t* const end = p + block.size();
  auto length = [&](uint64_t n) -> std::optional<uint64_t> {
    if (n != 15) return n;
    for (;;) {
      if (p == end) return std::nullopt;
      const uint8_t b = *p++;
      n += b;
      if (b != 255) return n;
    }
  };
  uint64_t total = 0;
  while (p < end && total <= limit) {
    const uint8_t token = *p++;
    const auto literals = length(token >> 4);
    if (!literals || *literals > static_cast<uint64_t>(end - p)) return std::nullopt;
    p += *literals;
    total += *literals;
    if (p == end) return total;  // the last sequence has no match
    if (end - p < 2) return std::nullopt;
    p += 2;  // match offset
    const auto match = length(token & 15);
    if (!match) return std::nullopt;
    total += *match + 4;
  }
  return p == end ? std::optional<uint64_t>(total) : std::optional<uint64_t>(limit + 1);
}

// Decodes one zstd frame into `out`, growing it only as output appears.
Status ZstdDecodeGrowing(std::string_view stored, size_t raw_size, std::string* out) {
  constexpr uint64_t kMinStep = 1 << 16;
  ZSTD_DCtx* dctx = ThreadZstd().dctx;
  ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  out->resize(std::min<uint64_t>(raw_size, std::max(kMinStep, kTrustedExpansion * stored.size())));
  ZSTD_inBuffer in{stored.data(), stored.size(), 0};
  ZSTD_outBuffer dst{out->data(), out->size(), 0};
  for (;;) {
    const size_t in_before = in.pos, out_before = dst.pos;
    const size_t r = ZSTD_decompressStream(dctx, &dst, &in);
    if (ZSTD_isError(r)) return Status::DataLoss("zstd page does not decode");
    if (r == 0) break;  // the frame is complete
    if (dst.pos == dst.size) {
      if (dst.size == raw_size)
        return Status::DataLoss("zstd page holds more than its footer says");
      out->resize(std::min<uint64_t>(raw_size, std::max(kMinStep, uint64_t{2} * out->size())));
      dst = {out->data(), out->size(), dst.pos};
    } else if (in.pos == in.size || (in.pos == in_before && dst.pos == out_before)) {
      return Status::DataLoss("zstd page is truncated");
    }
  }
  if (dst.pos != raw_size || in.pos != in.size)
    return Status::DataLoss("zstd page does not decode");
  return Status::OK();
}

}  // namespace

Status Decompress(Codec codec, std::string_view stored, size_t raw_size, std::string* out) {
  if (raw_size > MaxExpansion(codec, stored.size())) {
    return Status::DataLoss("a page of " + std::to_string(stored.size()) +
                            " stored bytes cannot hold the " + std::to_string(raw_size) +
                            " its footer claims");
  }
  const bool trusted = raw_size <= kTrustedExpansion * stored.size();
  switch (codec) {
    case Codec::kNone:
      if (stored.size() != raw_size) return Status::DataLoss("uncompressed page has wrong size");
      out->assign(stored);
      return Status::OK();
    case Codec::kZstd: {
      // The frame says how much it holds (the writer always records it).
      const unsigned long long declared = ZSTD_getFrameContentSize(stored.data(), stored.size());
      if (declared == ZSTD_CONTENTSIZE_ERROR ||
          (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != raw_size)) {
        return Status::DataLoss("zstd page does not hold the " + std::to_string(raw_size) +
                                " bytes its footer says");
      }
      if (!trusted) return ZstdDecodeGrowing(stored, raw_size, out);
      out->resize(raw_size);
      const size_t n = ZSTD_decompressDCtx(ThreadZstd().dctx, out->data(), raw_size, stored.data(),
                                           stored.size());
      if (ZSTD_isError(n) || n != raw_size) return Status::DataLoss("zstd page does not decode");
      return Status::OK();
    }
    case Codec::kLz4: {
      if (!trusted && Lz4DecodedSize(stored, raw_size) != raw_size) {
        return Status::DataLoss("lz4 page does not hold the " + std::to_string(raw_size) +
                                " bytes its footer says");
      }
      out->resize(raw_size);
      const int n = LZ4_decompress_safe(stored.data(), out->data(), static_cast<int>(stored.size()),
                                        static_cast<int>(raw_size));
      if (n < 0 || static_cast<size_t>(n) != raw_size) {
        return Status::DataLoss("lz4 page does not decode");
      }
      return Status::OK();
    }
  }
  return Status::DataLoss("unknown codec id " + std::to_string(static_cast<int>(codec)));
}

}  // namespace loam
