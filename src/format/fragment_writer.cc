#include "format/fragment_writer.h"

#include <algorithm>
#include <cstring>

#include "common/hash.h"
#include "common/status_macros.h"
#include "common/thread_pool.h"

namespace loam {

Result<std::shared_ptr<const RecordBatch>> VectorBatchStream::Next() {
  if (next_ >= batches_->size()) return std::shared_ptr<const RecordBatch>();
  // Non-owning: the vector outlives the stream.
  return std::shared_ptr<const RecordBatch>(std::shared_ptr<void>(), &(*batches_)[next_++]);
}

FragmentEncoder::FragmentEncoder(Schema schema, BatchStream* input, FragmentWriteOptions options)
    : input_(input),
      options_(std::move(options)),
      pending_(std::make_shared<const RecordBatch>(schema)) {
  footer_.schema = std::move(schema);
  footer_.metadata = options_.metadata;
}

Result<size_t> FragmentEncoder::Read(char* dst, size_t n) {
  while (out_pos_ == out_.size() && !finished_) {
    out_.clear();
    out_pos_ = 0;
    RETURN_NOT_OK(Refill());
  }
  const size_t k = std::min(n, out_.size() - out_pos_);
  std::memcpy(dst, out_.data() + out_pos_, k);
  out_pos_ += k;
  return k;
}

// Appends the next input batch to `pending_`, validating it.
Status FragmentEncoder::PullInput() {
  ASSIGN_OR_RETURN(std::shared_ptr<const RecordBatch> batch, input_->Next());
  if (!batch) {
    input_done_ = true;
    return Status::OK();
  }
  if (!(batch->schema == footer_.schema)) {
    return Status::InvalidArgument("batch schema " + batch->schema.ToString() +
                                   " does not match the fragment schema " +
                                   footer_.schema.ToString());
  }
  RETURN_NOT_OK(batch->Validate());
  std::vector<Status> checks(batch->columns.size());
  ThreadPool::Default().ParallelFor(
      checks.size(),
      [&](size_t c) { checks[c] = ValidateColumnValues(footer_.schema.fields[c], batch->columns[c]); },
      EncodeThreads());
  for (const Status& st : checks) RETURN_NOT_OK(st);
  const int64_t left = pending_->num_rows() - pending_start_;
  if (left == 0) {
    pending_ = std::move(batch);
  } else {
    auto merged = std::make_shared<RecordBatch>(pending_->Slice(pending_start_, left));
    for (size_t c = 0; c < batch->columns.size(); ++c) {
      merged->columns[c].AppendFrom(batch->columns[c], 0, batch->num_rows());
    }
    pending_ = std::move(merged);
  }
  pending_start_ = 0;
  return Status::OK();
}

// Rows in the next group when `rows` are pending: at most max_rows_per_group,
// and few enough that the widest column's page stays near target_page_bytes.
int64_t FragmentEncoder::GroupRows(int64_t rows) const {
  int64_t fit = std::min<int64_t>(rows, options_.max_rows_per_group);
  for (const Column& c : pending_->columns) {
    if (rows == 0 || c.ByteSize() == 0) continue;
    const double per_row = static_cast<double>(c.ByteSize()) / c.length();
    fit = std::min<int64_t>(fit, std::max<int64_t>(1, options_.target_page_bytes / per_row));
  }
  return fit;
}

// Produces the next chunk of output: up to kGroupsPerFlush row groups, or the
// footer at the end. A group is cut only when it is full or the input ended.
Status FragmentEncoder::Refill() {
  while (true) {
    int64_t rows = pending_->num_rows() - pending_start_;
    const int64_t fit = GroupRows(rows);
    if (rows > 0 && (fit < rows || input_done_)) {
      std::vector<int64_t> groups;
      while (rows > 0 && groups.size() < kGroupsPerFlush && (fit < rows || input_done_)) {
        groups.push_back(std::min(fit, rows));
        rows -= groups.back();
      }
      return FlushGroups(groups);
    }
    if (input_done_) break;
    RETURN_NOT_OK(PullInput());
  }
  std::string tail = EncodeFooterAndTrailer(footer_, offset_);
  out_ = std::move(tail);
  offset_ += out_.size();
  finished_ = true;
  return Status::OK();
}

size_t FragmentEncoder::EncodeThreads() const {
  return options_.encode_threads > 0 ? static_cast<size_t>(options_.encode_threads) : 0;
}

Status FragmentEncoder::EncodeColumnPage(const Column& column, int64_t offset, int64_t rows,
                                         std::string* stored, PageEntry* page) const {
  // Per-thread scratch for the uncompressed page, reused by every encoder:
  // fresh megabyte buffers cost a page fault per 4 KiB.
  thread_local std::string scratch;
  std::string* raw = &scratch;
  raw->clear();
  stored->clear();
  EncodePagePayload(column, offset, rows, raw);
  page->raw_size = static_cast<uint32_t>(raw->size());
  page->codec = options_.codec;
  RETURN_NOT_OK(Compress(options_.codec, *raw, options_.zstd_level, stored));
  if (stored->size() >= raw->size() && options_.codec != Codec::kNone) {
    stored->swap(*raw);  // incompressible: store raw
    page->codec = Codec::kNone;
  }
  page->stored_size = static_cast<uint32_t>(stored->size());
  page->checksum = Hash64(*stored);
  page->stats = ComputePageStats(column, offset, rows);
  return Status::OK();
}

// Encodes the next groups (sizes in `groups`) of pending rows. Every page is
// independent, so all (group, column) pages are encoded in parallel, largest
// first to keep the cores evenly busy; they are then laid out group by group
// in column order.
Status FragmentEncoder::FlushGroups(const std::vector<int64_t>& groups) {
  const size_t ncols = pending_->columns.size();
  const size_t npages = groups.size() * ncols;
  stored_.resize(std::max(stored_.size(), npages));
  std::vector<int64_t> starts(groups.size());
  for (size_t g = 0, at = pending_start_; g < groups.size(); at += groups[g++]) starts[g] = at;
  std::vector<size_t> order(npages);
  std::vector<double> weight(npages);
  for (size_t p = 0; p < npages; ++p) {
    const Column& c = pending_->columns[p % ncols];
    order[p] = p;
    weight[p] = c.length() ? static_cast<double>(c.ByteSize()) / c.length() * groups[p / ncols] : 0;
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weight[a] > weight[b]; });
  std::vector<PageEntry> pages(npages);
  std::vector<Status> results(npages);
  ThreadPool::Default().ParallelFor(
      npages,
      [&](size_t i) {
        const size_t p = order[i], g = p / ncols, c = p % ncols;
        results[p] =
            EncodeColumnPage(pending_->columns[c], starts[g], groups[g], &stored_[p], &pages[p]);
      },
      EncodeThreads());
  for (const Status& st : results) RETURN_NOT_OK(st);
  for (size_t g = 0; g < groups.size(); ++g) {
    RowGroupEntry group;
    group.rows = static_cast<uint32_t>(groups[g]);
    for (size_t c = 0; c < ncols; ++c) {
      const size_t p = g * ncols + c;
      pages[p].offset = offset_ + out_.size();
      out_ += stored_[p];
      group.pages.push_back(std::move(pages[p]));
    }
    pending_start_ += groups[g];
    footer_.num_rows += groups[g];
    footer_.groups.push_back(std::move(group));
  }
  offset_ += out_.size();
  return Status::OK();
}

Result<FragmentFileInfo> WriteFragmentFile(ObjectStore& store, const std::string& key,
                                           const Schema& schema, BatchStream& input,
                                           const FragmentWriteOptions& options) {
  RETURN_NOT_OK(schema.Validate());
  FragmentEncoder encoder(schema, &input, options);
  ASSIGN_OR_RETURN(ObjectMeta meta,
                   store.Write(key, encoder, PutOptions{PutCondition::kIfAbsent, {}}));
  if (meta.size != encoder.bytes_written()) {
    return Status::Internal("fragment '" + key + "' stored " + std::to_string(meta.size) +
                            " bytes, encoder produced " + std::to_string(encoder.bytes_written()));
  }
  return FragmentFileInfo{key, meta.size, encoder.footer().num_rows};
}

}  // namespace loam
