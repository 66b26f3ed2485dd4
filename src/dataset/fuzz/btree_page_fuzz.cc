// Fuzz target: a B+tree index file (docs/format/dataset.md, "Index file")
// of any bytes, looked up and read whole as scans and index merges do. The
// input is [levels: u8][root page size: u32 LE][file]; the root is the
// file's last page, as the writer places it. Errors are fine; a crash, a
// hang, a huge allocation or more row addresses than the file has bytes for
// is not.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/coding.h"
#include "dataset/btree_index.h"
#include "io/memory_object_store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  if (size < 5) return 0;
  const std::string file(reinterpret_cast<const char*>(data) + 5, size - 5);
  IndexMeta meta;
  meta.key_type = DataType{TypeId::kString};
  meta.path = "i.lidx";
  meta.levels = data[0];
  meta.root_size = static_cast<uint32_t>(DecodeFixed(reinterpret_cast<const char*>(data) + 1, 4));
  meta.file_size = file.size();
  meta.root_offset = meta.root_size <= file.size() ? file.size() - meta.root_size : 0;
  MemoryObjectStore store;
  if (!store.Put(meta.path, file).ok()) std::abort();
  const size_t most = file.size() / 12 + 1;  // a leaf entry takes >= 12 bytes
  Result<std::vector<uint64_t>> all =
      LookupBTreeRange(store, meta.path, meta, std::nullopt, std::nullopt);
  if (all.ok() && all->size() > most) std::abort();
  (void)LookupBTreeRange(store, meta.path, meta, std::string("m"), std::string("t"));
  Result<std::vector<IndexEntry>> entries = ReadAllBTreeEntries(store, meta.path, meta);
  if (entries.ok() && entries->size() > most) std::abort();
  return 0;
}
