// A strict RFC 8259 check of one JSON document: syntax, string escapes,
// control bytes, numbers, UTF-8, nesting depth and that nothing but
// whitespace follows the value. It validates without building anything, so
// every byte of a JSON Lines line or a `json` value is checked before it is
// accepted (a lazy parser only looks at what it visits).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace loam {

struct JsonCheck {
  enum class Outcome { kValid, kMalformed, kTooDeep };
  Outcome outcome = Outcome::kValid;
  size_t offset = 0;  // byte of the first problem
  std::string what;   // why it is malformed ("" when valid)
  bool ok() const { return outcome == Outcome::kValid; }
};

// Checks that `text` is exactly one JSON document nested at most `max_depth`
// levels (an object or array is one level). kTooDeep stops at the first
// container beyond the limit, so a deep input costs no more than the limit.
JsonCheck CheckJsonDocument(std::string_view text, int max_depth);

// The deepest nesting any json value may have, whatever the configured limit
// (which callers check with their own max_depth first).
inline constexpr int kJsonDepthCeiling = 1 << 16;

}  // namespace loam
