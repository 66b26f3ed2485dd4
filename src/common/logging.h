// Logging through spdlog. One process-wide logger named "loam"; level from
// LOAM_LOG_LEVEL (trace, debug, info, warn, error, off; default warn) so tests
// and CLI output stay quiet unless asked.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <string_view>

#include "loam/status.h"

namespace loam {

spdlog::logger& Log();

// A cleanup whose failure loses nothing (gc, a record sweep or a bucket
// lifecycle rule reclaims what it leaves): an error is logged at warn and counted, never returned.
// OK is ignored.
void NoteCleanupFailure(std::string_view what, const Status& status);
// Errors NoteCleanupFailure saw in this process (loam_cleanup_failures_total).
int64_t CleanupFailureCount();

}  // namespace loam

#define LOAM_LOG_DEBUG(...) ::loam::Log().debug(__VA_ARGS__)
#define LOAM_LOG_INFO(...) ::loam::Log().info(__VA_ARGS__)
#define LOAM_LOG_WARN(...) ::loam::Log().warn(__VA_ARGS__)
#define LOAM_LOG_ERROR(...) ::loam::Log().error(__VA_ARGS__)
