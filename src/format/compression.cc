#include "format/compression.h"

#include <lz4.h>
#include <zstd.h>

namespace loam {

std::string_view CodecName(Codec c) {
  switch (c) {
    case Codec::kNone: return "none";
    case Codec::kZstd: return "zstd";
    case Codec::kLz4: return "lz4";
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
  const size_t at = out->size();
  switch (codec) {
    case Codec::kNone:
      out->append(raw);
      return Status::OK();
    case Codec::kZstd: {
      out->resize(at + ZSTD_compressBound(raw.size()));
      const size_t n = ZSTD_compress(out->data() + at, out->size() - at, raw.data(), raw.size(),
                                     zstd_level);
      if (ZSTD_isError(n)) return Status::Internal(std::string("zstd: ") + ZSTD_getErrorName(n));
      out->resize(at + n);
      return Status::OK();
    }
    case Codec::kLz4: {
      if (raw.size() > static_cast<size_t>(LZ4_MAX_INPUT_SIZE)) {
        return Status::InvalidArgument("page too large for lz4");
      }
      out->resize(at + LZ4_compressBound(static_cast<int>(raw.size())));
      const int n = LZ4_compress_default(raw.data(), out->data() + at, static_cast<int>(raw.size()),
                                         static_cast<int>(out->size() - at));
      if (n <= 0) return Status::Internal("lz4 compression failed");
      out->resize(at + n);
      return Status::OK();
    }
  }
  return Status::InvalidArgument("unknown codec");
}

Status Decompress(Codec codec, std::string_view stored, size_t raw_size, std::string* out) {
  if (codec != Codec::kNone) out->resize(raw_size);
  switch (codec) {
    case Codec::kNone:
      if (stored.size() != raw_size) return Status::DataLoss("uncompressed page has wrong size");
      out->assign(stored);
      return Status::OK();
    case Codec::kZstd: {
      const size_t n = ZSTD_decompress(out->data(), raw_size, stored.data(), stored.size());
      if (ZSTD_isError(n) || n != raw_size) return Status::DataLoss("zstd page does not decode");
      return Status::OK();
    }
    case Codec::kLz4: {
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
