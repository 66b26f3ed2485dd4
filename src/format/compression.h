// Page compression codecs. Codec ids are stored in fragment files.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "loam/result.h"

namespace loam {

enum class Codec : uint8_t { kNone = 0, kZstd = 1, kLz4 = 2 };

std::string_view CodecName(Codec c);
Result<Codec> ParseCodec(std::string_view name);  // "none", "zstd", "lz4"

// Appends the compressed form of `raw` to `out`.
Status Compress(Codec codec, std::string_view raw, int zstd_level, std::string* out);
// Decompresses exactly `raw_size` bytes; anything else is DataLoss.
Status Decompress(Codec codec, std::string_view stored, size_t raw_size, std::string* out);

}  // namespace loam
