#include "common/clock.h"

#include <chrono>

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

}  // namespace loam
