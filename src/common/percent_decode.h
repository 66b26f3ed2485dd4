// Percent-decoding (RFC 3986), shared by the HTTP router and the S3 listing
// reader.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loam {

// `text` with each %XX replaced by its byte (and '+' by a space when
// `plus_is_space`, as in a query string); nullopt when an escape is cut
// short or not hexadecimal.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

}  // namespace loam
