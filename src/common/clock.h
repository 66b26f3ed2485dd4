// Clock: the single source of wall time, injectable so tests control it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace loam {

class Clock {
 public:
  virtual ~Clock() = default;
  // Microseconds since the Unix epoch, UTC.
  virtual int64_t NowMicros() const = 0;
  int64_t NowMillis() const { return NowMicros() / 1000; }

  // The process-wide real clock. Never null, never destroyed.
  static Clock* System();
};

// A clock that only moves when told to. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_micros = 0) : now_(start_micros) {}
  int64_t NowMicros() const override { return now_.load(std::memory_order_acquire); }
  void SetMicros(int64_t t) { now_.store(t, std::memory_order_release); }
  void AdvanceMicros(int64_t delta) { now_.fetch_add(delta, std::memory_order_acq_rel); }

 private:
  std::atomic<int64_t> now_;
};

// "2026-12-02T03:28:13Z": UTC, whole seconds (for messages and listings).
std::string FormatUtcSeconds(int64_t micros);

}  // namespace loam
