#include "common/principal.h"

#include <string>

#include "common/utf8.h"

namespace loam {
namespace {

// The code point of the well-formed sequence of `len` bytes at s[i].
uint32_t CodePoint(std::string_view s, size_t i, size_t len) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(s[k])); };
  if (len == 1) return b(i);
  if (len == 2) return (b(i) & 0x1f) << 6 | (b(i + 1) & 0x3f);
  if (len == 3) return (b(i) & 0x0f) << 12 | (b(i + 1) & 0x3f) << 6 | (b(i + 2) & 0x3f);
  return (b(i) & 0x07) << 18 | (b(i + 1) & 0x3f) << 12 | (b(i + 2) & 0x3f) << 6 | (b(i + 3) & 0x3f);
}

bool Unprintable(uint32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029;
}

Status Bad(const std::string& why) {
  return Status::InvalidArgument("a principal is 1 to " + std::to_string(kMaxPrincipalBytes) +
                                 " bytes of printable UTF-8 with no space at either end: " + why);
}

}  // namespace

Status CheckPrincipal(std::string_view principal) {
  if (principal.empty()) return Bad("this one is empty");
  if (principal.size() > kMaxPrincipalBytes) {
    return Bad("this one has " + std::to_string(principal.size()) + " bytes");
  }
  if (principal == "." || principal == "..") return Bad("\".\" and \"..\" are not names");
  if (principal.front() == ' ' || principal.back() == ' ')
    return Bad("this one starts or ends with a space");
  for (size_t i = 0; i < principal.size();) {
    const size_t len = Utf8SequenceLength(principal, i);
    if (len == 0) return Bad("this one is not valid UTF-8 at byte " + std::to_string(i));
    if (Unprintable(CodePoint(principal, i, len))) {
      return Bad("this one holds a control character at byte " + std::to_string(i));
    }
    i += len;
  }
  return Status::OK();
}

}  // namespace loam
