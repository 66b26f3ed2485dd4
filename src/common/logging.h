// Logging through spdlog. One process-wide logger named "loam"; level from
// LOAM_LOG_LEVEL (trace, debug, info, warn, error, off; default warn) so tests
// and CLI output stay quiet unless asked.
#pragma once

#include <spdlog/spdlog.h>

namespace loam {

spdlog::logger& Log();

}  // namespace loam

#define LOAM_LOG_DEBUG(...) ::loam::Log().debug(__VA_ARGS__)
#define LOAM_LOG_INFO(...) ::loam::Log().info(__VA_ARGS__)
#define LOAM_LOG_WARN(...) ::loam::Log().warn(__VA_ARGS__)
#define LOAM_LOG_ERROR(...) ::loam::Log().error(__VA_ARGS__)
