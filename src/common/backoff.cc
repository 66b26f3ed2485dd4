#include "common/backoff.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace loam {

int64_t Backoff::WaitMicros(int attempt, std::mt19937_64& rng) const {
  const int shift = std::clamp(attempt, 0, 30);
  const int64_t cap = std::max<int64_t>(0, base_micros > (max_micros >> shift)
                                               ? max_micros
                                               : std::min(max_micros, base_micros << shift));
  const auto least =
      std::min(cap, static_cast<int64_t>(std::clamp(floor, 0.0, 1.0) * static_cast<double>(cap)));
  return std::uniform_int_distribution<int64_t>(least, cap)(rng);
}

int64_t Backoff::WaitMicros(int attempt) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return WaitMicros(attempt, rng);
}

void Backoff::Sleep(int attempt) const {
  std::this_thread::sleep_for(std::chrono::microseconds(WaitMicros(attempt)));
}

}  // namespace loam
