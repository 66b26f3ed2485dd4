#include "common/ulid.h"

#include <sys/random.h>
#include <unistd.h>

namespace loam {
namespace {

__extension__ typedef unsigned __int128 Uint128;

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

int DecodeChar(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  for (int i = 0; i < 32; ++i) {
    if (kAlphabet[i] == c) return i;
  }
  return -1;
}

// Increments a big-endian 80-bit number; false on overflow.
bool Increment(std::array<uint8_t, 10>& r) {
  for (int i = 9; i >= 0; --i) {
    if (++r[i] != 0) return true;
  }
  return false;
}

// The kernel's CSPRNG in one syscall (a std::random_device costs an open
// and a close per ULID on some libstdc++ builds); false if unavailable.
bool FillFromOs(uint8_t* out, size_t n) {
  return ::getrandom(out, n, GRND_NONBLOCK) == static_cast<ssize_t>(n);
}

uint64_t SlowOsRandom() {
  std::random_device os_random;
  return (uint64_t{os_random()} << 32) | os_random();
}

}  // namespace

Ulid Ulid::FromParts(uint64_t millis, const std::array<uint8_t, 10>& random) {
  Ulid u;
  for (int i = 0; i < 6; ++i) u.bytes_[i] = static_cast<uint8_t>(millis >> (8 * (5 - i)));
  for (int i = 0; i < 10; ++i) u.bytes_[6 + i] = random[i];
  return u;
}

uint64_t Ulid::millis() const {
  uint64_t m = 0;
  for (int i = 0; i < 6; ++i) m = (m << 8) | bytes_[i];
  return m;
}

// 128 bits as 26 base32 digits: the first digit holds the top 3 bits (2 padding bits).
std::string Ulid::ToString() const {
  std::string out(kTextLength, '0');
  Uint128 v = 0;
  for (uint8_t b : bytes_) v = (v << 8) | b;
  for (int i = static_cast<int>(kTextLength) - 1; i >= 0; --i) {
    out[i] = kAlphabet[static_cast<int>(v & 31)];
    v >>= 5;
  }
  return out;
}

Result<Ulid> Ulid::Parse(std::string_view text) {
  if (text.size() != kTextLength) {
    return Status::InvalidArgument("ULID must be 26 characters, got " +
                                   std::to_string(text.size()));
  }
  Uint128 v = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    int d = DecodeChar(text[i]);
    if (d < 0)
      return Status::InvalidArgument("invalid ULID character '" + std::string(1, text[i]) + "'");
    if (i == 0 && d > 7) return Status::InvalidArgument("ULID out of range (first character > 7)");
    v = (v << 5) | static_cast<unsigned>(d);
  }
  Ulid u;
  for (int i = 15; i >= 0; --i) {
    u.bytes_[i] = static_cast<uint8_t>(v & 0xff);
    v >>= 8;
  }
  return u;
}

UlidGenerator::UlidGenerator(const Clock* clock) : clock_(clock), seeded_(false) {}

UlidGenerator::UlidGenerator(const Clock* clock, uint64_t seed)
    : clock_(clock), seeded_(true), rng_(seed) {}

Result<Ulid> UlidGenerator::Next() {
  const uint64_t now = static_cast<uint64_t>(clock_->NowMillis());
  std::lock_guard<std::mutex> lock(mu_);
  // A forked child must not continue its parent's sequence.
  if (!seeded_ && ::getpid() != pid_) {
    have_last_ = false;
    pid_ = ::getpid();
  }
  // A clock that steps backwards keeps the last timestamp, preserving order.
  if (have_last_ && now <= last_millis_) {
    if (!Increment(last_)) {
      return Status::ResourceExhausted("ULID random component overflowed within one millisecond");
    }
    return Ulid::FromParts(last_millis_, last_);
  }
  if (seeded_ || !FillFromOs(last_.data(), last_.size())) {
    for (size_t i = 0; i < last_.size(); i += 8) {
      const uint64_t r = seeded_ ? rng_() : SlowOsRandom();
      for (size_t j = 0; j < 8 && i + j < last_.size(); ++j)
        last_[i + j] = static_cast<uint8_t>(r >> (8 * j));
    }
  }
  last_[0] &=
      0x7f;  // leave headroom so increments within one millisecond never overflow in practice
  last_millis_ = now;
  have_last_ = true;
  return Ulid::FromParts(now, last_);
}

UlidGenerator& UlidGenerator::Default() {
  static UlidGenerator* gen = new UlidGenerator();
  return *gen;
}

std::string NewUlidString() { return UlidGenerator::Default().Next().value().ToString(); }

}  // namespace loam
