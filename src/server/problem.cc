#include "server/problem.h"

#include <charconv>

namespace loam::server {

int HttpStatusFor(ErrorCode code) {
  switch (code) {
    case ErrorCode::kNone:
      return 200;
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kIdempotencyKeyRequired:
      return 400;
    case ErrorCode::kUnauthenticated:
      return 401;
    case ErrorCode::kPermissionDenied:
      return 403;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kConflict:
    case ErrorCode::kSchemaConflict:
    case ErrorCode::kRequestInFlight:
    case ErrorCode::kRunAlreadyCommitted:
    case ErrorCode::kSourceAlreadyLoaded:
    case ErrorCode::kRevertBlocked:
      return 409;
    case ErrorCode::kMethodNotAllowed:
      return 405;
    case ErrorCode::kVersionExpired:
      return 410;
    case ErrorCode::kPreconditionFailed:
      return 412;
    case ErrorCode::kValidationFailed:
    case ErrorCode::kDuplicateKey:
    case ErrorCode::kLimitExceeded:
    case ErrorCode::kIdempotencyKeyReused:
      return 422;
    case ErrorCode::kOverloaded:
      return 429;
    case ErrorCode::kUnimplemented:
      return 501;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kUnsupportedFormat:
    case ErrorCode::kMigrationRequired:
    case ErrorCode::kDataLoss:
    case ErrorCode::kInternal:
      return 500;
  }
  return 500;
}

nlohmann::json ProblemDocument(const Status& s, int http_status) {
  const std::string code(ErrorCodeName(s.error_code()));
  nlohmann::json p = {{"type", "urn:loam:error:" + code},
                      {"title", std::string(StatusCodeName(s.code()))},
                      {"status", http_status},
                      {"detail", s.message()},
                      {"code", code}};
  for (const char* key : {"retryAfterMillis", "limit", "run", "oldestVersion"}) {
    const std::string_view v = s.detail(key);
    if (v.empty()) continue;
    const bool numeric = std::string_view(key) != "limit" && std::string_view(key) != "run";
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
