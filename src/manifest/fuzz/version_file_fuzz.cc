// Fuzz target: a version file (docs/format/dataset.md) of any bytes, as
// every open decodes it, and its application section as a manifest head
// directory (docs/format/manifest.md). Errors are fine; a crash, a hang or a
// huge allocation is not, nor a directory that encodes differently than it
// decoded.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dataset/version_file.h"
#include "manifest/directory.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)DecodeVersionHeader(bytes, "fuzz");
  Result<DatasetVersion> v = DecodeVersionFile(bytes, "fuzz");
  const std::string_view section = v.ok() ? std::string_view(v->app_section) : bytes;
  Result<HeadDirectory> dir = DecodeHeadDirectory(section);
  if (dir.ok()) {
    Result<HeadDirectory> again = DecodeHeadDirectory(EncodeHeadDirectory(*dir));
    if (!again.ok() || EncodeHeadDirectory(*again) != EncodeHeadDirectory(*dir)) std::abort();
  }
  return 0;
}
