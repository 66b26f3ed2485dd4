#include "server/problem.h"

#include <charconv>

#include "common/error_codes.h"

namespace loam::server {

int HttpStatusFor(ErrorCode code) { return InfoOf(code).http_status; }

nlohmann::json ProblemDocument(const Status& s, int http_status) {
  const std::string code(ErrorCodeName(s.error_code()));
  nlohmann::json p = {{"type", "urn:loam:error:" + code},
                      {"title", std::string(StatusCodeName(s.code()))},
                      {"status", http_status},
                      {"detail", s.message()},
                      {"code", code}};
  for (const char* key :
       {"retryAfterMillis", "limit", "run", "oldestVersion", "table", "refused", "check"}) {
    const std::string_view v = s.detail(key);
    if (v.empty()) continue;
    const bool numeric =
        std::string_view(key) == "retryAfterMillis" || std::string_view(key) == "oldestVersion";
    int64_t number = 0;
    if (numeric && std::from_chars(v.data(), v.data() + v.size(), number).ec == std::errc()) {
      p[key] = number;
    } else {
      p[key] = std::string(v);
    }
  }
  return p;
}

}  // namespace loam::server
