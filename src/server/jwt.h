// JWT bearer tokens (RFC 7519) verified with OpenSSL (docs/server.md,
// "Authentication"). Only the configured key's algorithm is accepted:
// HS256 with a shared secret of 32+ bytes, or RS256 (RSA 2048+), ES256
// (P-256) and EdDSA (Ed25519) with public keys from a PEM file or a JWKS.
// `alg: none`, any other algorithm and HS/RS confusion are refused before a
// signature is checked. `exp` is required; `nbf`, `iss` and `aud` are
// honoured with a small leeway for clock skew.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loam/result.h"

namespace loam::server {

struct JwtClaims {
  std::string subject;    // sub: the principal
  std::string workspace;  // loam_workspace
  int64_t expires = 0;    // exp, seconds since the epoch
};

struct JwtPolicy {
  std::string issuer;             // "" = not checked
  std::string audience;           // "" = not checked
  int64_t leeway_seconds = 60;    // on exp and nbf
  size_t max_token_bytes = 8192;  // longer tokens are refused unread
};

class JwtVerifier {
 public:
  // HS256; InvalidArgument for a secret under 32 bytes.
  static Result<std::shared_ptr<JwtVerifier>> FromSecret(std::string secret, JwtPolicy policy);
  // One public key (PEM "PUBLIC KEY"): its type picks RS256, ES256 or EdDSA.
  static Result<std::shared_ptr<JwtVerifier>> FromPublicKeyPem(std::string_view pem,
                                                               JwtPolicy policy);
  // A JSON Web Key Set of RSA, EC P-256 and OKP Ed25519 public keys.
  static Result<std::shared_ptr<JwtVerifier>> FromJwks(std::string_view jwks, JwtPolicy policy);
  ~JwtVerifier();

  // Unauthenticated, saying why, unless `token` is valid at `now_seconds`.
  Result<JwtClaims> Verify(std::string_view token, int64_t now_seconds) const;

  struct Key;

 private:
  JwtVerifier(std::vector<std::unique_ptr<Key>> keys, JwtPolicy policy);
  Status CheckClaims(const std::string& payload, int64_t now, JwtClaims* out) const;

  std::vector<std::unique_ptr<Key>> keys_;
  JwtPolicy policy_;
};

// Signs `payload_json` (a JSON object) as a compact JWS. `key` is the HS256
// secret, or a PEM private key (RSA, EC P-256, Ed25519) whose type picks the
// algorithm. `header_extra` (a JSON object, may be "") is merged into the
// header. For `loam token` and tests.
Result<std::string> SignJwt(std::string_view key, std::string_view payload_json, bool hs256,
                            std::string_view header_extra = "");

}  // namespace loam::server
