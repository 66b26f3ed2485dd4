// SHA-256, HMAC-SHA-256, hex, base64url and constant-time comparison: one
// implementation, on OpenSSL's primitives, for every signature Loam makes or
// checks (S3 requests and presigned URLs, bearer tokens, upload tokens) and
// every content digest (uploads, inline data, idempotency fingerprints).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loam {

// The 32 bytes of SHA-256(data), raw and as lower-case hex.
std::string Sha256(std::string_view data);
std::string Sha256Hex(std::string_view data);
// True for exactly 64 lower-case hex digits (a Sha256Hex).
bool IsSha256Hex(std::string_view text);

// The 32 bytes of HMAC-SHA-256(key, data).
std::string HmacSha256(std::string_view key, std::string_view data);

// Equal bytes, compared in time that depends only on the sizes (for MACs).
bool ConstantTimeEqual(std::string_view a, std::string_view b);

// Lower-case hex of `bytes`; its inverse, nullopt unless `text` is an even
// number of lower-case hex digits.
std::string HexEncode(std::string_view bytes);
std::optional<std::string> HexDecode(std::string_view text);

// Base64url without padding (RFC 4648 section 5); its inverse, nullopt unless
// `text` is the canonical encoding of some bytes (no padding, no other
// alphabet, unused trailing bits zero), so no two texts decode alike.
std::string Base64UrlEncode(std::string_view bytes);
std::optional<std::string> Base64UrlDecode(std::string_view text);

// SHA-256 of data fed in pieces.
class Sha256Hasher {
 public:
  Sha256Hasher();
  ~Sha256Hasher();
  Sha256Hasher(const Sha256Hasher&) = delete;
  Sha256Hasher& operator=(const Sha256Hasher&) = delete;
  void Update(std::string_view data);
  // Lower-case hex of everything fed; the hasher is spent after it.
  std::string HexDigest();

 private:
  void* ctx_;  // EVP_MD_CTX*
};

}  // namespace loam
