// Just enough XML for S3 responses (ListObjectsV2, errors, multipart): S3
// bodies are flat, machine-written documents, so elements are found by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loam::s3 {

// Replaces the five predefined entities and numeric character references.
std::string XmlUnescape(std::string_view text);
// The unescaped text of the first <tag>...</tag> in `xml`, or "" when absent.
std::string XmlText(std::string_view xml, std::string_view tag);
// The raw inner text of every <tag>...</tag> in `xml`, in document order.
std::vector<std::string_view> XmlElements(std::string_view xml, std::string_view tag);
// Escapes &, <, >, " and ' for an element's text.
std::string XmlEscape(std::string_view text);

// "2026-11-30T04:10:00.000Z" -> Unix microseconds; 0 when unparsable.
int64_t ParseIso8601Micros(std::string_view text);
// "Mon, 30 Nov 2026 04:10:00 GMT" (an HTTP date) -> Unix microseconds; 0 when unparsable.
int64_t ParseHttpDateMicros(std::string_view text);

}  // namespace loam::s3
