// Writes fragment files: a stream of batches in, one immutable file out.
//
// FragmentEncoder is a pull-based ByteSource: each Read() encodes just enough
// row groups to satisfy it, so a fragment of any size streams into
// ObjectStore::Write holding at most kGroupsPerFlush row groups (each about
// target_page_bytes per column) plus their compressed pages in memory.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "format/compression.h"
#include "format/fragment_footer.h"
#include "loam/batch.h"
#include "loam/object_store.h"

namespace loam {

// A source of batches of one schema; nullptr at the end. A batch stays valid
// while the caller holds the pointer.
class BatchStream {
 public:
  virtual ~BatchStream() = default;
  virtual Result<std::shared_ptr<const RecordBatch>> Next() = 0;
};

// Streams batches held elsewhere (which must outlive the stream), without
// copying them.
class VectorBatchStream final : public BatchStream {
 public:
  explicit VectorBatchStream(const std::vector<RecordBatch>* batches) : batches_(batches) {}
  Result<std::shared_ptr<const RecordBatch>> Next() override;

 private:
  const std::vector<RecordBatch>* batches_;
  size_t next_ = 0;
};

struct FragmentWriteOptions {
  Codec codec = Codec::kZstd;
  int zstd_level = 1;
  // A row group closes when one of its column pages reaches this many bytes.
  size_t target_page_bytes = 1 << 20;
  uint32_t max_rows_per_group = 1 << 20;
  // Threads encoding pages (0 = one per core, from ThreadPool::Default()).
  int encode_threads = 0;
  std::vector<std::pair<std::string, std::string>> metadata;
};

class FragmentEncoder final : public ByteSource {
 public:
  FragmentEncoder(Schema schema, BatchStream* input, FragmentWriteOptions options);

  Result<size_t> Read(char* dst, size_t n) override;

  // Valid once Read() has returned 0.
  const FragmentFooter& footer() const { return footer_; }
  uint64_t bytes_written() const { return offset_; }

 private:
  Status Refill();
  Status PullInput();
  int64_t GroupRows(int64_t rows) const;
  Status FlushGroups(const std::vector<int64_t>& groups);

  // Compressed bytes of one column's page of the next group.
  Status EncodeColumnPage(const Column& column, int64_t offset, int64_t rows, std::string* stored,
                          PageEntry* page) const;
  size_t EncodeThreads() const;  // for ThreadPool::ParallelFor (0 = all)

  // Groups encoded together: enough pages per flush that both cores stay busy
  // despite uneven page costs, few enough to keep memory bounded.
  static constexpr size_t kGroupsPerFlush = 4;

  FragmentFooter footer_;
  BatchStream* input_;
  FragmentWriteOptions options_;
  // Rows [pending_start_, end) of pending_ are not yet encoded. pending_ is
  // the input batch itself when possible; leftovers of small batches are
  // concatenated with the next one.
  std::shared_ptr<const RecordBatch> pending_;
  int64_t pending_start_ = 0;
  bool input_done_ = false;
  bool finished_ = false;
  std::string out_;            // encoded bytes not yet handed out
  // Compressed pages of the groups being flushed, reused across flushes
  // (fresh large buffers cost a page fault per 4 KiB).
  std::vector<std::string> stored_;
  size_t out_pos_ = 0;
  uint64_t offset_ = 0;        // bytes produced so far, including all of out_
};

struct FragmentFileInfo {
  std::string key;
  uint64_t size = 0;
  uint64_t num_rows = 0;
};

// Writes a new fragment file at `key` with put-if-absent (fragment names are
// unique; an existing key is AlreadyExists and is left untouched).
Result<FragmentFileInfo> WriteFragmentFile(ObjectStore& store, const std::string& key,
                                           const Schema& schema, BatchStream& input,
                                           const FragmentWriteOptions& options = {});

}  // namespace loam
