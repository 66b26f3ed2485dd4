// The footer and trailer of a fragment file (docs/format/fragment.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "format/compression.h"
#include "format/page.h"
#include "loam/types.h"

namespace loam {

inline constexpr std::string_view kFragmentMagic = "LOAMFRAG";
inline constexpr uint16_t kFragmentFormatVersion = 1;
inline constexpr size_t kFragmentTrailerSize = 32;

struct PageEntry {
  uint64_t offset = 0;       // absolute file offset of the stored bytes
  uint32_t stored_size = 0;  // bytes on disk
  uint32_t raw_size = 0;     // payload bytes after decompression
  Codec codec = Codec::kNone;
  uint64_t checksum = 0;  // xxh3-64 of the stored bytes
  PageStats stats;
};

struct RowGroupEntry {
  uint32_t rows = 0;
  std::vector<PageEntry> pages;  // one per schema field, in field order
};

struct FragmentFooter {
  Schema schema;
  uint64_t num_rows = 0;
  std::vector<RowGroupEntry> groups;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// Footer bytes followed by the 32-byte trailer; `footer_offset` is where the
// footer starts in the file.
std::string EncodeFooterAndTrailer(const FragmentFooter& footer, uint64_t footer_offset);

struct Trailer {
  uint64_t footer_offset = 0;
  uint32_t footer_size = 0;
  uint16_t version = 0;
  uint64_t checksum = 0;
};
// Parses the last kFragmentTrailerSize bytes of a file (magic checked).
Result<Trailer> DecodeTrailer(std::string_view bytes, const std::string& file);
// Verifies the checksum over footer + trailer prefix and the version, then
// parses the footer.
Result<FragmentFooter> DecodeFooter(std::string_view footer, std::string_view trailer_bytes,
                                    const Trailer& trailer, uint64_t file_size,
                                    const std::string& file);

}  // namespace loam
