#include "dataset/btree_index.h"

#include <algorithm>

#include "common/coding.h"
#include "common/hash.h"
#include "common/status_macros.h"
#include "io/memory_object_store.h"

namespace loam {
namespace {

enum PageKind : uint8_t { kLeaf = 1, kInternal = 2 };

struct PageRef {
  uint64_t offset = 0;
  uint32_t size = 0;
};

// A decoded page: leaf entries, or internal (first key, child) entries.
struct Page {
  PageKind kind = kLeaf;
  std::vector<std::string> keys;
  std::vector<uint64_t> row_addresses;  // leaf
  std::vector<PageRef> children;        // internal
  PageRef next;                         // leaf: right sibling (size 0 = none)
};

std::string EncodePage(const Page& p) {
  std::string out;
  PutFixed8(&out, p.kind);
  PutFixed32(&out, static_cast<uint32_t>(p.keys.size()));
  PutFixed64(&out, p.next.offset);
  PutFixed32(&out, p.next.size);
  for (size_t i = 0; i < p.keys.size(); ++i) {
    PutLengthPrefixed(&out, p.keys[i]);
    if (p.kind == kLeaf) {
      PutFixed64(&out, p.row_addresses[i]);
    } else {
      PutFixed64(&out, p.children[i].offset);
      PutFixed32(&out, p.children[i].size);
    }
  }
  PutFixed64(&out, Hash64(out));
  return out;
}

Result<Page> DecodePage(std::string_view bytes, const std::string& what) {
  if (bytes.size() < 8 ||
      (VerifyChecksums() && Hash64(bytes.substr(0, bytes.size() - 8)) !=
                               DecodeFixed(bytes.data() + bytes.size() - 8, 8))) {
    return Status::DataLoss(what + ": page checksum mismatch");
  }
  Decoder d(bytes.substr(0, bytes.size() - 8), what);
  Page p;
  ASSIGN_OR_RETURN(uint8_t kind, d.U8());
  if (kind != kLeaf && kind != kInternal) return d.Corrupt("unknown page kind");
  p.kind = static_cast<PageKind>(kind);
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  ASSIGN_OR_RETURN(p.next.offset, d.U64());
  ASSIGN_OR_RETURN(p.next.size, d.U32());
  if (n > d.remaining()) return d.Corrupt("entry count too large");
  for (uint32_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(std::string_view k, d.LengthPrefixed());
    p.keys.emplace_back(k);
    if (p.kind == kLeaf) {
      ASSIGN_OR_RETURN(uint64_t a, d.U64());
      p.row_addresses.push_back(a);
    } else {
      PageRef c;
      ASSIGN_OR_RETURN(c.offset, d.U64());
      ASSIGN_OR_RETURN(c.size, d.U32());
      p.children.push_back(c);
    }
  }
  if (!d.done()) return d.Corrupt("trailing bytes in page");
  return p;
}

// Pages lie inside the file; a child ends before its parent starts (pages
// are written bottom-up) and a leaf's right sibling starts after it ends, so
// every walk moves through the file in one direction and ends.
Status CheckPageRef(const std::string& key, const IndexMeta& meta, PageRef ref, uint64_t lowest,
                    uint64_t end) {
  if (ref.size < 8 || ref.size > meta.file_size || ref.offset > meta.file_size - ref.size ||
      ref.offset < lowest || ref.offset + ref.size > end) {
    return Status::DataLoss("index '" + key + "': page at " + std::to_string(ref.offset) + "+" +
                            std::to_string(ref.size) + " out of place");
  }
  return Status::OK();
}

Result<std::shared_ptr<const Page>> ReadPage(ObjectStore& store, const std::string& key,
                                             PageRef ref, IndexLookupStats* stats,
                                             LruCache* cache) {
  const std::string cache_key = "index:" + key + "@" + std::to_string(ref.offset);
  if (cache) {
    if (auto hit = cache->Get<Page>(cache_key)) return hit;
  }
  ASSIGN_OR_RETURN(std::string bytes,
                   store.GetRecordedRange(key, ref.offset, ref.size, "index page"));
  if (stats) ++stats->pages_read;
  ASSIGN_OR_RETURN(Page page, DecodePage(bytes, "index '" + key + "'"));
  auto shared = std::make_shared<const Page>(std::move(page));
  if (cache) cache->Put<Page>(cache_key, shared, ref.size * 2 + 64);
  return shared;
}

// The right sibling of `leaf` (read from `at`), or nullptr after the last.
Result<std::shared_ptr<const Page>> NextLeaf(ObjectStore& store, const std::string& key,
                                             const IndexMeta& meta, const Page& leaf, PageRef* at,
                                             IndexLookupStats* stats, LruCache* cache) {
  if (leaf.next.size == 0) return std::shared_ptr<const Page>();
  RETURN_NOT_OK(CheckPageRef(key, meta, leaf.next, at->offset + at->size, meta.file_size));
  *at = leaf.next;
  ASSIGN_OR_RETURN(std::shared_ptr<const Page> next, ReadPage(store, key, *at, stats, cache));
  if (next->kind != kLeaf) return Status::DataLoss("index '" + key + "': expected a leaf");
  return next;
}

// Descends from the root to the leftmost leaf that may hold keys >= lo.
// Sets `*at` to where the leaf was read.
Result<std::shared_ptr<const Page>> FindLeaf(ObjectStore& store, const std::string& key,
                                             const IndexMeta& meta,
                                             const std::optional<std::string>& lo, PageRef* at,
                                             IndexLookupStats* stats, LruCache* cache) {
  if (meta.levels == 0 || meta.levels > kMaxIndexLevels) {
    return Status::DataLoss("index '" + key + "' has " + std::to_string(meta.levels) + " levels");
  }
  PageRef ref{meta.root_offset, meta.root_size};
  RETURN_NOT_OK(CheckPageRef(key, meta, ref, 0, meta.file_size));
  for (uint32_t level = meta.levels; level > 1; --level) {
    ASSIGN_OR_RETURN(std::shared_ptr<const Page> page, ReadPage(store, key, ref, stats, cache));
    const Page& p = *page;
    if (p.kind != kInternal || p.children.empty())
      return Status::DataLoss("index '" + key + "': bad internal page");
    size_t child = 0;
    if (lo) {
      // The last child whose first key is < lo (equal keys may continue from
      // the previous child).
      auto it = std::lower_bound(p.keys.begin(), p.keys.end(), *lo);
      child = it == p.keys.begin() ? 0 : static_cast<size_t>(it - p.keys.begin()) - 1;
    }
    RETURN_NOT_OK(CheckPageRef(key, meta, p.children[child], 0, ref.offset));
    ref = p.children[child];
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const Page> leaf, ReadPage(store, key, ref, stats, cache));
  if (leaf->kind != kLeaf) return Status::DataLoss("index '" + key + "': expected a leaf");
  *at = ref;
  return leaf;
}

}  // namespace

bool IndexMeta::Covers(uint64_t fragment_id) const {
  return std::binary_search(fragments.begin(), fragments.end(), fragment_id);
}

bool IsIndexableType(const DataType& type) {
  switch (type.id) {
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kDate:
    case TypeId::kTimestamp:
    case TypeId::kString:
    case TypeId::kBinary:
      return true;
    default:
      return false;
  }
}

std::string EncodeIndexKey(const DataType& type, const Value& v) {
  if (type.id == TypeId::kString || type.id == TypeId::kBinary) return std::get<std::string>(v);
  const uint64_t biased = static_cast<uint64_t>(std::get<int64_t>(v)) ^ (uint64_t{1} << 63);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(biased >> (8 * (7 - i)));
  return out;
}

Status WriteBTreeIndex(ObjectStore& store, const std::string& key, std::vector<IndexEntry> entries,
                       uint32_t entries_per_page, IndexMeta* meta) {
  if (entries_per_page < 2) return Status::InvalidArgument("entries_per_page must be >= 2");
  std::sort(entries.begin(), entries.end(), [](const IndexEntry& a, const IndexEntry& b) {
    return a.key != b.key ? a.key < b.key : a.row_address < b.row_address;
  });
  std::string file;
  // Leaves, each pointing at the next (which starts where it ends).
  std::vector<std::pair<std::string, PageRef>> level;  // first key, page
  for (size_t start = 0; start < entries.size() || (start == 0 && entries.empty());
       start += entries_per_page) {
    const size_t end = std::min(entries.size(), start + entries_per_page);
    Page p;
    p.kind = kLeaf;
    for (size_t i = start; i < end; ++i) {
      p.keys.push_back(entries[i].key);
      p.row_addresses.push_back(entries[i].row_address);
    }
    std::string bytes = EncodePage(p);
    level.push_back({p.keys.empty() ? std::string() : p.keys[0],
                     {file.size(), static_cast<uint32_t>(bytes.size())}});
    file += bytes;
    if (entries.empty()) break;
  }
  // Patch the sibling links now that every leaf's position is known.
  for (size_t i = 0; i + 1 < level.size(); ++i) {
    const PageRef me = level[i].second, next = level[i + 1].second;
    std::string patched = file.substr(me.offset, me.size - 8);
    std::string link;
    PutFixed64(&link, next.offset);
    PutFixed32(&link, next.size);
    patched.replace(5, 12, link);
    PutFixed64(&patched, Hash64(patched));
    file.replace(me.offset, me.size, patched);
  }
  uint32_t levels = 1;
  while (level.size() > 1) {
    std::vector<std::pair<std::string, PageRef>> up;
    for (size_t start = 0; start < level.size(); start += entries_per_page) {
      Page p;
      p.kind = kInternal;
      for (size_t i = start; i < std::min(level.size(), start + entries_per_page); ++i) {
        p.keys.push_back(level[i].first);
        p.children.push_back(level[i].second);
      }
      std::string bytes = EncodePage(p);
      up.push_back({p.keys[0], {file.size(), static_cast<uint32_t>(bytes.size())}});
      file += bytes;
    }
    level = std::move(up);
    ++levels;
  }
  RETURN_NOT_OK(store.PutIfAbsent(key, file).status());
  meta->file_size = file.size();
  meta->root_offset = level[0].second.offset;
  meta->root_size = level[0].second.size;
  meta->levels = levels;
  meta->entries = entries.size();
  return Status::OK();
}

Result<std::vector<uint64_t>> LookupBTreeRange(ObjectStore& store, const std::string& key,
                                               const IndexMeta& meta,
                                               const std::optional<std::string>& lo,
                                               const std::optional<std::string>& hi,
                                               IndexLookupStats* stats, LruCache* cache) {
  std::vector<uint64_t> out;
  PageRef at;
  ASSIGN_OR_RETURN(std::shared_ptr<const Page> leaf,
                   FindLeaf(store, key, meta, lo, &at, stats, cache));
  while (leaf) {
    const auto& keys = leaf->keys;
    auto it = lo ? std::lower_bound(keys.begin(), keys.end(), *lo) : keys.begin();
    for (; it != keys.end(); ++it) {
      if (hi && *it > *hi) return out;
      out.push_back(leaf->row_addresses[it - keys.begin()]);
    }
    ASSIGN_OR_RETURN(leaf, NextLeaf(store, key, meta, *leaf, &at, stats, cache));
  }
  return out;
}

Result<std::vector<IndexEntry>> ReadAllBTreeEntries(ObjectStore& store, const std::string& key,
                                                    const IndexMeta& meta) {
  // Every page is wanted: one GET of the whole file, then pages from memory
  // (a request per page would grow with the index).
  ASSIGN_OR_RETURN(std::string bytes, store.Get(key));
  MemoryObjectStore whole;
  RETURN_NOT_OK(whole.Put(key, bytes).status());
  std::vector<IndexEntry> out;
  PageRef at;
  ASSIGN_OR_RETURN(std::shared_ptr<const Page> leaf,
                   FindLeaf(whole, key, meta, std::nullopt, &at, nullptr, nullptr));
  while (leaf) {
    for (size_t i = 0; i < leaf->keys.size(); ++i) {
      out.push_back({leaf->keys[i], leaf->row_addresses[i]});
    }
    ASSIGN_OR_RETURN(leaf, NextLeaf(whole, key, meta, *leaf, &at, nullptr, nullptr));
  }
  return out;
}

}  // namespace loam
