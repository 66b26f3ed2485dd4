// Fuzz target: a deletion file (docs/format/dataset.md, "Deletion file") of
// any bytes, as every read of a fragment with deletions decodes it. Errors
// are fine; a crash, rows out of order or past the fragment's bound, or a
// vector that does not survive either encoding is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dataset/deletion_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  constexpr uint64_t kFragmentRows = 1 << 20;  // as a fragment's bound
  Result<DeletionVector> dv = DeletionVector::Decode(bytes, "fuzz", kFragmentRows);
  if (!dv.ok()) return 0;
  for (size_t i = 0; i < dv->rows().size(); ++i) {
    if (dv->rows()[i] >= kFragmentRows) std::abort();
    if (i > 0 && dv->rows()[i - 1] >= dv->rows()[i]) std::abort();
  }
  for (const std::string& encoded : {dv->Encode(), dv->EncodeSorted()}) {
    Result<DeletionVector> again = DeletionVector::Decode(encoded, "fuzz", kFragmentRows);
    if (!again.ok() || !(*again == *dv)) std::abort();
  }
  return 0;
}
