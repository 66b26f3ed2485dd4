// Router: matches a request's method and path against route patterns such as
// "/v1/runs/{id}/cancel" and percent-decodes the captured segments. A
// captured segment never holds NUL or another control character, nor '/' or
// '\', so an id cannot smuggle a path ("%2F", "%00" are refused as not
// found). A {principal} is a name, never part of a path: it is passed on as
// decoded ("repo:org/app" is a real subject) and the service checks it
// against the one definition of a principal (400 when it is not one).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"

namespace loam::server {

struct Target {
  std::string path;                          // as sent, before decoding
  std::map<std::string, std::string> query;  // decoded; each name once
};
// Splits and decodes a request target ("/v1/runs?state=queued"). A query
// parameter named twice is InvalidArgument: parsers disagree on which one
// counts (the first, the last, both), so Loam takes neither.
Result<Target> ParseTarget(std::string_view target);
// InvalidArgument naming the first parameter of `query` not in `allowed`.
Status CheckQueryNames(const std::map<std::string, std::string>& query,
                       const std::vector<std::string>& allowed);
// A query parameter's integer: decimal digits only (no sign, no spaces),
// from `min` to `max`; InvalidArgument naming `name` and the range otherwise
// (a value too large for 64 bits is out of range, never clamped).
Result<int64_t> ParseQueryInt(std::string_view name, std::string_view value, int64_t min,
                              int64_t max);
Result<std::string> PercentDecode(std::string_view text, bool plus_is_space);

template <typename Handler>
class Router {
 public:
  struct Match {
    const Handler* handler = nullptr;
    std::string pattern;
    std::map<std::string, std::string> params;
    bool path_known = false;  // some route has this path (405 rather than 404)
  };

  void Add(std::string method, std::string pattern, Handler h) {
    routes_.push_back({std::move(method), Split(pattern), pattern, std::move(h)});
  }

  Match Find(std::string_view method, const std::string& path) const {
    Match m;
    const std::vector<std::string> parts = Split(path);
    for (const Route& r : routes_) {
      std::map<std::string, std::string> params;
      if (!Matches(r.parts, parts, &params)) continue;
      m.path_known = true;
      if (r.method != method) continue;
      m.handler = &r.handler;
      m.pattern = r.pattern;
      m.params = std::move(params);
      return m;
    }
    return m;
  }

  // The methods some route accepts for `path` (the Allow header of a 405).
  std::string Allowed(const std::string& path) const {
    std::string out;
    const std::vector<std::string> parts = Split(path);
    for (const Route& r : routes_) {
      std::map<std::string, std::string> params;
      if (Matches(r.parts, parts, &params) && out.find(r.method) == std::string::npos) {
        out += (out.empty() ? "" : ", ") + r.method;
      }
    }
    return out;
  }

 private:
  struct Route {
    std::string method;
    std::vector<std::string> parts;
    std::string pattern;
    Handler handler;
  };

  static std::vector<std::string> Split(std::string_view path) {
    std::vector<std::string> parts;
    size_t at = 0;
    while (at < path.size()) {
      if (path[at] == '/') {
        ++at;
        continue;
      }
      const size_t end = std::min(path.find('/', at), path.size());
      parts.emplace_back(path.substr(at, end - at));
      at = end;
    }
    // A trailing or doubled slash is a different path.
    if (path.empty() || path.back() == '/' || path.find("//") != std::string_view::npos) {
      parts.emplace_back("\x01");
    }
    return parts;
  }

  static bool Matches(const std::vector<std::string>& pattern,
                      const std::vector<std::string>& parts,
                      std::map<std::string, std::string>* params) {
    if (pattern.size() != parts.size()) return false;
    for (size_t i = 0; i < pattern.size(); ++i) {
      const std::string& p = pattern[i];
      if (p.size() > 2 && p.front() == '{' && p.back() == '}') {
        Result<std::string> v = PercentDecode(parts[i], /*plus_is_space=*/false);
        const bool name = p == "{principal}";
        if (!v.ok() || v->empty() || (!name && !SafeSegment(*v))) return false;
        (*params)[p.substr(1, p.size() - 2)] = std::move(*v);
      } else if (p != parts[i]) {
        return false;
      }
    }
    return true;
  }

  static bool SafeSegment(const std::string& v) {
    if (v == "." || v == "..") return false;
    for (unsigned char c : v) {
      if (c < 0x20 || c == 0x7f || c == '/' || c == '\\') return false;
    }
    return true;
  }

  std::vector<Route> routes_;
};

}  // namespace loam::server
