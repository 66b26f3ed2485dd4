// Helpers over ascending sequences.
#pragma once

namespace loam {

// Whether two ascending sequences share an element (one merge pass).
template <typename A, typename B>
bool SortedIntersect(const A& a, const B& b) {
  auto x = a.begin();
  auto y = b.begin();
  while (x != a.end() && y != b.end()) {
    if (*x == *y) return true;
    if (*x < *y) {
      ++x;
    } else {
      ++y;
    }
  }
  return false;
}

}  // namespace loam
