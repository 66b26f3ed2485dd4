// Fuzz target: a fragment file (docs/format/fragment.md) of any bytes,
// read as a reader would: trailer and footer, then every page of every
// column, then a checked decode of all pages. Errors are fine; a crash, a
// hang, a huge allocation or rows that disagree with the footer are not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/fragment_reader.h"
#include "io/memory_object_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  MemoryObjectStore store;
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  if (!store.Put("f.lfrag", bytes).ok()) std::abort();
  Result<std::unique_ptr<FragmentReader>> reader = FragmentReader::Open(&store, "f.lfrag", size);
  if (!reader.ok()) return 0;
  Result<RecordBatch> all = (*reader)->ReadAll();
  if (all.ok() && static_cast<uint64_t>(all->num_rows()) != (*reader)->num_rows()) std::abort();
  (void)(*reader)->Verify();
  return 0;
}
