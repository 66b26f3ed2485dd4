// Errors on the wire: the HTTP status of each stable error code
// (docs/errors.md) and RFC 9457 problem documents carrying the code.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loam/result.h"

namespace loam::server {

// The HTTP status a failure answers with (the table in docs/errors.md).
int HttpStatusFor(ErrorCode code);

// {"type","title","status","detail","code"} plus the status's details
// (retryAfterMillis, limit, run) as extension members.
nlohmann::json ProblemDocument(const Status& s, int http_status);

}  // namespace loam::server
