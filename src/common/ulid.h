// ULIDs: 128-bit ids, 48-bit millisecond timestamp + 80 random bits, written as
// 26 Crockford base32 characters. Lexicographic order of the text equals
// creation order within one generator: ids minted in the same millisecond
// increment the random part instead of drawing a new one (monotonic ULIDs).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "loam/result.h"

namespace loam {

class Ulid {
 public:
  static constexpr size_t kTextLength = 26;

  Ulid() = default;
  static Ulid FromParts(uint64_t millis, const std::array<uint8_t, 10>& random);
  // Accepts exactly 26 Crockford base32 characters (case-insensitive).
  static Result<Ulid> Parse(std::string_view text);

  uint64_t millis() const;
  std::string ToString() const;
  const std::array<uint8_t, 16>& bytes() const { return bytes_; }

  friend bool operator==(const Ulid&, const Ulid&) = default;
  friend auto operator<=>(const Ulid&, const Ulid&) = default;

 private:
  std::array<uint8_t, 16> bytes_{};  // big-endian: 6 bytes time, 10 bytes random
};

// Thread-safe monotonic generator. Unseeded generators draw the random part
// from the OS (std::random_device) and restart their sequence in a forked
// child, so ids never repeat across processes; seeded ones are deterministic
// (tests).
class UlidGenerator {
 public:
  explicit UlidGenerator(const Clock* clock = Clock::System());
  UlidGenerator(const Clock* clock, uint64_t seed);

  // Fails only if 2^80 ids were requested within one millisecond.
  Result<Ulid> Next();

  // The process-wide generator on the system clock.
  static UlidGenerator& Default();

 private:
  const Clock* clock_;
  std::mutex mu_;
  const bool seeded_;
  std::mt19937_64 rng_;              // guarded by mu_; used when seeded_
  int pid_ = 0;                      // guarded by mu_; process that drew last_
  uint64_t last_millis_ = 0;         // guarded by mu_
  std::array<uint8_t, 10> last_{};   // guarded by mu_
  bool have_last_ = false;           // guarded by mu_
};

// Convenience: a fresh id from the default generator, as text.
std::string NewUlidString();

}  // namespace loam
