// Fuzz target: bearer tokens. Any bytes verified under an HS256 key (the
// header, base64url and JSON parsing, the algorithm and claim checks before
// and after the signature): a crash or a hang is a bug, and so is a token
// that verifies without the principal and workspace it must carry. The seed
// corpus holds a token signed with this key, so mutations reach the claims.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "server/jwt.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam::server;
  static const auto hs =
      JwtVerifier::FromSecret("fuzz-secret-0123456789abcdef-0123456789", {}).value();
  const std::string_view token(reinterpret_cast<const char*>(data), size);
  const loam::Result<JwtClaims> claims = hs->Verify(token, 1'800'000'000);
  if (claims.ok() && (claims->subject.empty() || claims->workspace.empty())) std::abort();
  return 0;
}
