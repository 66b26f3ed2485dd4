// UTF-8 validation (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
#pragma once

#include <cstddef>
#include <string_view>

namespace loam {

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 if malformed.
size_t Utf8SequenceLength(std::string_view s, size_t i);

// Offset of the first malformed byte, or npos when `s` is valid UTF-8.
size_t FindInvalidUtf8(std::string_view s);

inline bool IsValidUtf8(std::string_view s) { return FindInvalidUtf8(s) == std::string_view::npos; }

}  // namespace loam
