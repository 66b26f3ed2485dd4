// RFC 3339 timestamps with an explicit offset (2026-11-30T05:10:00+01:00,
// 2026-11-30T04:10:00.25Z), as loads coerce them (iso8601ToTimestamp) and as
// the HTTP API writes its times (an upload ticket's expiresAt).
#pragma once

#include <cstdint>
#include <string_view>

#include "loam/result.h"

namespace loam {

// µs since the epoch, UTC. Years 0001 to 9999; a time without an offset is
// ambiguous and refused, as are digits past the microsecond that are not 0.
Result<int64_t> ParseRfc3339Micros(std::string_view text);

}  // namespace loam
