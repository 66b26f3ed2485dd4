// Exponential backoff with jitter, the one shape of every retry loop in Loam
// (dataset commits, publish attempts, busy tables, conflicting loads, the S3
// client, the cleaner, `loam submit`): the n-th wait (n from 0) is drawn
// uniformly from [floor * cap_n, cap_n] with cap_n = min(max, base * 2^n). A
// floor below 1 keeps processes that collided once from retrying in step; 0
// is "full jitter".
#pragma once

#include <cstdint>
#include <random>

namespace loam {

struct Backoff {
  int64_t base_micros = 1'000;
  int64_t max_micros = 1'000'000;
  double floor = 0.5;  // the least wait, as a fraction of the cap

  // The n-th wait, drawn with `rng`, or with a generator of this thread.
  int64_t WaitMicros(int attempt, std::mt19937_64& rng) const;
  int64_t WaitMicros(int attempt) const;
  // Sleeps the n-th wait (a retry's pause, never a synchronisation).
  void Sleep(int attempt) const;
};

}  // namespace loam
