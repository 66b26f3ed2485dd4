#include "common/hash.h"

#include <xxhash.h>

#include <atomic>
#include <cstdio>

namespace loam {
namespace {

#ifdef LOAM_FUZZING_NO_CHECKSUMS
std::atomic<bool> verify_checksums{false};
#else
std::atomic<bool> verify_checksums{true};
#endif

}  // namespace

bool VerifyChecksums() { return verify_checksums.load(std::memory_order_relaxed); }
void SkipChecksumsForFuzzing() { verify_checksums.store(false, std::memory_order_relaxed); }

uint64_t Hash64(std::string_view data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

Hash128Value Hash128(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  return {h.low64, h.high64};
}

std::string Hash128Hex(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return std::string(buf, 32);
}

Hasher64::Hasher64(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}

Hasher64::~Hasher64() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

void Hasher64::Update(std::string_view data) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}

uint64_t Hasher64::Digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace loam
