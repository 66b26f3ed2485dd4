#include "common/clock.h"

#include <chrono>
#include <ctime>

namespace loam {
namespace {

class SystemClock final : public Clock {
 public:
  int64_t NowMicros() const override {
    using namespace std::chrono;
    return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
  }
};

}  // namespace

Clock* Clock::System() {
  static SystemClock* clock = new SystemClock();
  return clock;
}

std::string FormatUtcSeconds(int64_t micros) {
  const std::time_t secs = static_cast<std::time_t>(micros / 1'000'000);
  char buf[32];
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace loam
