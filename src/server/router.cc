#include "server/router.h"

#include <algorithm>
#include <charconv>

#include "common/percent_decode.h"

namespace loam::server {

Result<std::string> PercentDecode(std::string_view text, bool plus_is_space) {
  std::optional<std::string> decoded = loam::PercentDecode(text, plus_is_space);
  if (!decoded) return Status::InvalidArgument("malformed percent-encoding in the request target");
  return *std::move(decoded);
}

Result<Target> ParseTarget(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return Status::InvalidArgument("the request target must be a path starting with '/'");
  }
  Target t;
  const size_t q = target.find('?');
  t.path = std::string(target.substr(0, q));
  if (q == std::string_view::npos) return t;
  std::string_view rest = target.substr(q + 1);
  while (!rest.empty()) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    const size_t eq = pair.find('=');
    Result<std::string> name = PercentDecode(pair.substr(0, eq), true);
    Result<std::string> value = PercentDecode(
        eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
    if (!name.ok()) return name.status();
    if (!value.ok()) return value.status();
    if (!t.query.emplace(*name, std::move(*value)).second) {
      return Status::InvalidArgument("query parameter '" + *name + "' is given twice");
    }
  }
  return t;
}

Status CheckQueryNames(const std::map<std::string, std::string>& query,
                       const std::vector<std::string>& allowed) {
  for (const auto& [name, value] : query) {
    if (std::find(allowed.begin(), allowed.end(), name) != allowed.end()) continue;
    std::string known;
    for (const std::string& a : allowed) known += (known.empty() ? "" : ", ") + a;
    return Status::InvalidArgument("unknown query parameter '" + name + "' (" +
                                   (known.empty() ? "this route takes none" : known) + ")");
  }
  return Status::OK();
}

Result<int64_t> ParseQueryInt(std::string_view name, std::string_view value, int64_t min,
                              int64_t max) {
  int64_t v = 0;
  const char* end = value.data() + value.size();
  const bool digits = !value.empty() && std::all_of(value.begin(), value.end(),
                                                    [](char c) { return c >= '0' && c <= '9'; });
  auto [at, ec] = std::from_chars(value.data(), end, v);
  if (!digits || ec != std::errc() || at != end || v < min || v > max) {
    return Status::InvalidArgument(std::string(name) + " must be an integer from " +
                                   std::to_string(min) + " to " + std::to_string(max));
  }
  return v;
}

}  // namespace loam::server
