// Fuzz target: a write sidecar (docs/format/manifest.md, "_recovery/") of
// any bytes, as recovery decodes one it finds. Errors are fine; a crash or
// a sidecar that does not survive its own encoding is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine/sidecar.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Result<Sidecar> s = DecodeSidecar(text, "_recovery/fuzz.json");
  if (!s.ok()) return 0;
  Result<Sidecar> again = DecodeSidecar(EncodeSidecar(*s), "_recovery/fuzz.json");
  if (!again.ok() || EncodeSidecar(*again) != EncodeSidecar(*s)) std::abort();
  return 0;
}
