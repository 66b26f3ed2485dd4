// Fuzz target: the records `loam migrate` and every open read before
// trusting a workspace (docs/format/manifest.md, "_migration/"): the migration claim
// `_migration/claim.json` and the format stamp `_control/format.json`, of
// any bytes. Errors are fine; a crash, a throw or a claim without its token
// is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/format_stamp.h"
#include "engine/migration_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<migration_internal::ClaimState> claim =
      migration_internal::ParseClaim("_migration/claim.json", text);
  if (claim.ok() && (claim->token.empty() || claim->owner.empty())) std::abort();
  Result<FormatStamp> stamp = DecodeFormatStamp("_control/format.json", text);
  if (stamp.ok() && stamp->format < 0) std::abort();
  return 0;
}
