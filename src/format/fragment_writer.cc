#include "format/fragment_writer.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <cstring>

#include "common/hash.h"
#include "common/status_macros.h"

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
  for (size_t c = 0; c < batch->columns.size(); ++c) {
    RETURN_NOT_OK(ValidateColumnValues(footer_.schema.fields[c], batch->columns[c]));
  }
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

// Produces the next chunk of output: one row group, or the footer at the end.
Status FragmentEncoder::Refill() {
  while (true) {
    // Rows that fit one group, by the widest column's bytes per row.
    const int64_t rows = pending_->num_rows() - pending_start_;
    int64_t fit = std::min<int64_t>(rows, options_.max_rows_per_group);
    for (const Column& c : pending_->columns) {
      if (rows == 0 || c.ByteSize() == 0) continue;
      const double per_row = static_cast<double>(c.ByteSize()) / c.length();
      fit = std::min<int64_t>(fit, std::max<int64_t>(1, options_.target_page_bytes / per_row));
    }
    if (rows > 0 && (fit < rows || input_done_)) return FlushGroup(fit);
    if (input_done_) break;
    RETURN_NOT_OK(PullInput());
  }
  std::string tail = EncodeFooterAndTrailer(footer_, offset_);
  out_ = std::move(tail);
  offset_ += out_.size();
  finished_ = true;
  return Status::OK();
}

Status FragmentEncoder::EncodeColumnPage(const Column& column, int64_t offset, int64_t rows,
                                         std::string* raw, std::string* stored,
                                         PageEntry* page) const {
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

// Encodes the next `rows` pending rows as one row group, its columns in
// parallel (pages are independent), then lays them out in column order.
Status FragmentEncoder::FlushGroup(int64_t rows) {
  const size_t ncols = pending_->columns.size();
  raw_.resize(ncols);
  stored_.resize(ncols);
  std::vector<PageEntry> pages(ncols);
  std::vector<Status> results(ncols);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t c = next++; c < ncols; c = next++) {
      results[c] = EncodeColumnPage(pending_->columns[c], pending_start_, rows, &raw_[c],
                                    &stored_[c], &pages[c]);
    }
  };
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min<size_t>(ncols, options_.encode_threads > 0
                                                     ? static_cast<size_t>(options_.encode_threads)
                                                     : hw);
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) helpers.emplace_back(work);
  work();
  for (auto& h : helpers) h.join();
  RowGroupEntry group;
  group.rows = static_cast<uint32_t>(rows);
  for (size_t c = 0; c < ncols; ++c) {
    RETURN_NOT_OK(results[c]);
    pages[c].offset = offset_ + out_.size();
    out_ += stored_[c];
    group.pages.push_back(std::move(pages[c]));
  }
  pending_start_ += rows;
  footer_.num_rows += rows;
  footer_.groups.push_back(std::move(group));
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
