// Reads fragment files: footer once, then only the requested columns of the
// row groups that survive pruning, by range requests.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/lru_cache.h"
#include "format/fragment_footer.h"
#include "loam/batch.h"
#include "loam/object_store.h"
#include "loam/predicate.h"

namespace loam {

struct FragmentScanOptions {
  std::vector<std::string> columns;   // empty: all, in schema order
  std::vector<Predicate> predicates;  // ANDed; rows that fail are dropped
  bool with_row_offsets = false;      // add an int64 "_rowoffset" column (row within file)
};

struct FragmentScanStats {
  int groups_total = 0;
  int groups_pruned = 0;  // skipped by min/max/null statistics
  int pages_read = 0;
};

// Where a fragment's bytes are: [offset, offset + size) of object `key`. A
// fragment file has offset 0; a fragment embedded in a dataset version file
// (docs/format/dataset.md, "Inline fragments") starts after that file's header.
// Offsets inside the fragment are relative to its first byte either way.
struct FragmentLocation {
  std::string key;
  uint64_t offset = 0;
  uint64_t size = 0;
};

class FragmentReader {
 public:
  // Reads the tail of the fragment (one range request when the footer fits
  // the speculative read). A fragment no larger than kSpeculativeTailBytes is
  // read whole by that request, and its pages need no further requests. With
  // `cache`, the decoded footer is looked up there first and stored after a
  // miss (objects are immutable, so a cached footer is valid for any store
  // holding the object).
  static Result<std::unique_ptr<FragmentReader>> OpenAt(ObjectStore* store, FragmentLocation where,
                                                        LruCache* cache = nullptr);
  // A fragment file on its own: OpenAt offset 0, after a HEAD when `file_size`
  // is not known.
  static Result<std::unique_ptr<FragmentReader>> Open(ObjectStore* store, std::string key,
                                                      std::optional<uint64_t> file_size = {});
  // A fragment held in memory (encoded, not yet in any object), named `name`
  // in messages; it makes no request.
  static Result<std::unique_ptr<FragmentReader>> OpenBytes(std::shared_ptr<const std::string> bytes,
                                                           std::string name);

  const Schema& schema() const { return footer_->schema; }
  uint64_t num_rows() const { return footer_->num_rows; }
  const FragmentFooter& footer() const { return *footer_; }
  uint64_t file_size() const { return where_.size; }

  // Matching rows, one batch per surviving row group.
  Result<std::vector<RecordBatch>> Scan(const FragmentScanOptions& options,
                                        FragmentScanStats* stats = nullptr) const;
  // All rows of the requested columns as one batch.
  Result<RecordBatch> ReadAll(const std::vector<std::string>& columns = {}) const;
  // Rows at `offsets` (ascending, within the file) of `columns` (empty =
  // all), plus the "_rowoffset" column. Reads only the row groups involved;
  // with a cache, decoded pages are kept there for later point reads.
  Result<RecordBatch> Take(const std::vector<uint64_t>& offsets,
                           const std::vector<std::string>& columns,
                           FragmentScanStats* stats = nullptr, LruCache* cache = nullptr) const;
  // Checks every page checksum and decodes every page.
  Status Verify() const;

  static constexpr const char* kRowOffsetColumn = "_rowoffset";
  static constexpr uint64_t kSpeculativeTailBytes = 64 << 10;

 private:
  FragmentReader(ObjectStore* store, FragmentLocation where,
                 std::shared_ptr<const FragmentFooter> footer)
      : store_(store), where_(std::move(where)), footer_(std::move(footer)) {}

  // Reads, uncached, and decodes the footer; from `whole` when given.
  static Result<std::unique_ptr<FragmentReader>> Load(
      ObjectStore* store, FragmentLocation where,
      std::shared_ptr<const std::string> whole = nullptr);
  // Bytes [offset, offset + n) of the fragment.
  Result<std::string> ReadRange(uint64_t offset, uint64_t n) const;
  // "'key'" or "'key' at byte N", for messages and cache keys.
  std::string Describe() const;

  // Fetches and decodes the pages of `cols` in group `g` (adjacent pages in
  // one request; large pages decoded in parallel).
  Result<std::vector<Column>> ReadGroupColumns(int g, const std::vector<int>& cols,
                                               FragmentScanStats* stats) const;
  // As ReadGroupColumns, through `cache`; the columns are shared, read-only.
  Result<std::vector<std::shared_ptr<const Column>>> ReadGroupColumnsCached(
      int g, const std::vector<int>& cols, FragmentScanStats* stats, LruCache* cache) const;
  Result<std::vector<int>> ResolveColumns(const std::vector<std::string>& names) const;
  Result<Column> DecodePage(const PageEntry& page, const Field& field, uint32_t rows,
                            std::string_view stored) const;

  ObjectStore* store_;
  FragmentLocation where_;
  std::shared_ptr<const FragmentFooter> footer_;
  // The file, when one read fetched all of it or it is held in memory.
  std::shared_ptr<const std::string> whole_;
};

}  // namespace loam
