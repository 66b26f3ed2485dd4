// Fuzz target: a deletion file (docs/format/dataset.md, "Deletion file") of
// any bytes, as every read of a fragment with deletions decodes it. Errors
// are fine; a crash, rows out of order or a vector that does not survive
// its own encoding is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "dataset/deletion_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  Result<DeletionVector> dv = DeletionVector::Decode(bytes, "fuzz");
  if (!dv.ok()) return 0;
  for (size_t i = 1; i < dv->rows().size(); ++i) {
    if (dv->rows()[i - 1] >= dv->rows()[i]) std::abort();
  }
  Result<DeletionVector> again = DeletionVector::Decode(dv->Encode(), "fuzz");
  if (!again.ok() || !(*again == *dv)) std::abort();
  return 0;
}
