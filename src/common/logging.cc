#include "common/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <atomic>
#include <cstdlib>

namespace loam {

spdlog::logger& Log() {
  static spdlog::logger* logger = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    auto* l = new spdlog::logger("loam", sink);
    const char* level = std::getenv("LOAM_LOG_LEVEL");
    l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return l;
  }();
  return *logger;
}

namespace {
std::atomic<int64_t> cleanup_failures{0};
}  // namespace

void NoteCleanupFailure(std::string_view what, const Status& status) {
  if (status.ok()) return;
  cleanup_failures.fetch_add(1, std::memory_order_relaxed);
  LOAM_LOG_WARN("{} failed (left for a later pass): {}", what, status.ToString());
}

int64_t CleanupFailureCount() { return cleanup_failures.load(std::memory_order_relaxed); }

}  // namespace loam
