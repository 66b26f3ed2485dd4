// xxh3 hashing: checksums for file formats and stable partitioning keys.
// Values are part of on-disk formats; never change the algorithm or seed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loam {

uint64_t Hash64(std::string_view data, uint64_t seed = 0);

// Whether decoders compare stored checksums: always, except in a fuzzing
// build (LOAM_FUZZ=ON defines LOAM_FUZZING_NO_CHECKSUMS) and in the replay
// driver of the fuzz targets that ctest runs, which calls
// SkipChecksumsForFuzzing() before its first input, so that mutated bytes
// (and crash inputs kept from fuzzing builds) reach the decoding behind the
// checksums. Nothing else may call it.
bool VerifyChecksums();
void SkipChecksumsForFuzzing();

// 128-bit hash (xxh3-128): identity of values in memory-lean sets, where a
// collision is far less likely than a hardware fault.
struct Hash128Value {
  uint64_t lo = 0;
  uint64_t hi = 0;
  friend bool operator==(const Hash128Value&, const Hash128Value&) = default;
};
Hash128Value Hash128(std::string_view data);
struct Hash128ValueHasher {
  size_t operator()(const Hash128Value& h) const { return static_cast<size_t>(h.lo); }
};

// 128-bit hash as 32 lowercase hex digits.
std::string Hash128Hex(std::string_view data);

// Incremental xxh3-64: Update(a); Update(b) hashes the same as Hash64(a + b).
class Hasher64 {
 public:
  explicit Hasher64(uint64_t seed = 0);
  ~Hasher64();
  Hasher64(const Hasher64&) = delete;
  Hasher64& operator=(const Hasher64&) = delete;

  void Update(std::string_view data);
  uint64_t Digest() const;

 private:
  void* state_;  // XXH3_state_t*
};

}  // namespace loam
