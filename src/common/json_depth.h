// The nesting depth of JSON text, found without parsing it: limits on depth
// are checked before a parser (or a printer that recurses) sees the text.
#pragma once

#include <algorithm>
#include <string_view>

namespace loam {

// Deepest nesting of brackets in `json` outside strings: {"a":[1]} is 2.
inline int JsonNestingDepth(std::string_view json) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return deepest;
}

}  // namespace loam
