// Sorting fixed-size records that may not fit in memory: records are kept
// up to a byte budget; each full buffer is sorted and written as one run to
// a scratch store, and Finish merges the runs back block by block. Used by
// the stager's key checks once a run's keys outgrow their memory bound.
//
// Memory: a sorter holds at most its budget of records; a merged stream
// holds one block per run inside its read budget (runs are first merged in
// groups when there are too many for that). MemoryMeter counts both.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <queue>
#include <string>
#include <type_traits>
#include <vector>

#include "common/status_macros.h"
#include "loam/object_store.h"

namespace loam::ingest {

// The bytes one run's key checks hold, now and at most.
class MemoryMeter {
 public:
  void Add(size_t n) {
    const size_t now = now_.fetch_add(n) + n;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
  }
  void Sub(size_t n) { now_.fetch_sub(n); }
  size_t now() const { return now_.load(); }
  size_t peak() const { return peak_.load(); }

 private:
  std::atomic<size_t> now_{0}, peak_{0};
};

// A directory of its own under the system's temporary directory (or
// `parent`), holding runs as objects; removed with its contents when
// destroyed. Scratch objects are not durable: they live for one run.
class ScratchSpace {
 public:
  static Result<std::unique_ptr<ScratchSpace>> Create(const std::string& parent);
  ~ScratchSpace();
  ScratchSpace(const ScratchSpace&) = delete;
  ScratchSpace& operator=(const ScratchSpace&) = delete;

  Status Put(const std::string& key, std::string_view bytes);
  // Streams `source` into a new object.
  Status Put(const std::string& key, ByteSource& source);
  Result<std::string> Read(const std::string& key, uint64_t offset, uint64_t length);
  void Delete(const std::string& key);
  std::string NewKey();  // unique within this space
  const std::string& dir() const { return dir_; }

 private:
  ScratchSpace(std::string dir, std::shared_ptr<ObjectStore> store)
      : dir_(std::move(dir)), store_(std::move(store)) {}
  std::string dir_;
  std::shared_ptr<ObjectStore> store_;
  std::atomic<uint64_t> next_{0};
};

// Records in sorted order, one at a time (leveldb's iterator shape).
template <typename T>
class SortedStream {
 public:
  virtual ~SortedStream() = default;
  virtual bool Valid() const = 0;
  virtual const T& Get() const = 0;
  virtual Status Next() = 0;
};

namespace sorter_internal {

// A sorted buffer that stayed in memory.
template <typename T>
class VectorStream final : public SortedStream<T> {
 public:
  VectorStream(std::vector<T> v, MemoryMeter* meter)
      : v_(std::move(v)), meter_(meter), held_(v_.capacity() * sizeof(T)) {}
  ~VectorStream() override { meter_->Sub(held_); }
  bool Valid() const override { return i_ < v_.size(); }
  const T& Get() const override { return v_[i_]; }
  Status Next() override {
    ++i_;
    return Status::OK();
  }

 private:
  std::vector<T> v_;
  MemoryMeter* meter_;
  size_t held_;
  size_t i_ = 0;
};

// One written run, read `block` bytes at a time.
template <typename T>
class RunStream final : public SortedStream<T> {
 public:
  RunStream(ScratchSpace* scratch, std::string key, uint64_t records, size_t block,
            MemoryMeter* meter)
      : scratch_(scratch), key_(std::move(key)), left_(records), block_(block), meter_(meter) {
    meter_->Add(block_);
  }
  ~RunStream() override {
    meter_->Sub(block_);
    scratch_->Delete(key_);
  }
  Status Start() { return Fill(); }
  bool Valid() const override { return valid_; }
  const T& Get() const override { return cur_; }
  Status Next() override {
    pos_ += sizeof(T);
    return Fill();
  }

 private:
  Status Fill() {
    if (pos_ == buf_.size()) {
      buf_.clear();
      if (left_ == 0) {
        valid_ = false;
        return Status::OK();
      }
      const uint64_t n = std::min<uint64_t>(left_, block_ / sizeof(T));
      ASSIGN_OR_RETURN(buf_, scratch_->Read(key_, offset_, n * sizeof(T)));
      if (buf_.size() != n * sizeof(T)) return Status::DataLoss("a sort run is shorter: " + key_);
      offset_ += buf_.size();
      left_ -= n;
      pos_ = 0;
    }
    std::memcpy(&cur_, buf_.data() + pos_, sizeof(T));
    valid_ = true;
    return Status::OK();
  }

  ScratchSpace* scratch_;
  std::string key_;
  uint64_t left_, offset_ = 0;
  size_t block_, pos_ = 0;
  MemoryMeter* meter_;
  std::string buf_;
  T cur_{};
  bool valid_ = false;
};

// Several sorted streams as one.
template <typename T, typename Less>
class MergeStream final : public SortedStream<T> {
 public:
  explicit MergeStream(std::vector<std::unique_ptr<SortedStream<T>>> in, Less less)
      : in_(std::move(in)), heap_(Greater{this, less}) {
    for (size_t i = 0; i < in_.size(); ++i) {
      if (in_[i]->Valid()) heap_.push(i);
    }
  }
  bool Valid() const override { return !heap_.empty(); }
  const T& Get() const override { return in_[heap_.top()]->Get(); }
  Status Next() override {
    const size_t i = heap_.top();
    heap_.pop();
    RETURN_NOT_OK(in_[i]->Next());
    if (in_[i]->Valid()) heap_.push(i);
    return Status::OK();
  }

 private:
  struct Greater {
    const MergeStream* self;
    Less less;
    bool operator()(size_t a, size_t b) const {
      return less(self->in_[b]->Get(), self->in_[a]->Get());
    }
  };
  std::vector<std::unique_ptr<SortedStream<T>>> in_;
  std::priority_queue<size_t, std::vector<size_t>, Greater> heap_;
};

// A stream's records as bytes, for writing a merged run.
template <typename T>
class StreamSource final : public ByteSource {
 public:
  explicit StreamSource(SortedStream<T>* in) : in_(in) {}
  Result<size_t> Read(char* dst, size_t n) override {
    size_t done = 0;
    while (done + sizeof(T) <= n && in_->Valid()) {
      std::memcpy(dst + done, &in_->Get(), sizeof(T));
      done += sizeof(T);
      ++records_;
      RETURN_NOT_OK(in_->Next());
    }
    return done;
  }
  uint64_t records() const { return records_; }

 private:
  SortedStream<T>* in_;
  uint64_t records_ = 0;
};

}  // namespace sorter_internal

template <typename T, typename Less>
class ExternalSorter {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  // Holds at most `budget` bytes of records (room for at least kMinRecords):
  // its buffer grows to half of that, then each full one is a run.
  ExternalSorter(ScratchSpace* scratch, size_t budget, MemoryMeter* meter, Less less = Less())
      : scratch_(scratch),
        cap_(std::max<size_t>(budget / sizeof(T), kMinRecords)),
        meter_(meter),
        less_(less) {}
  ~ExternalSorter() {
    meter_->Sub(buf_.capacity() * sizeof(T));
    for (const Run& r : runs_) scratch_->Delete(r.key);
  }
  ExternalSorter(const ExternalSorter&) = delete;
  ExternalSorter& operator=(const ExternalSorter&) = delete;

  Status Add(const T& r) {
    if (buf_.size() == buf_.capacity() && !Grow()) RETURN_NOT_OK(WriteRun());
    buf_.push_back(r);
    ++added_;
    return Status::OK();
  }
  uint64_t size() const { return added_; }

  // Every record added, in order, in at most `read_budget` bytes: a buffer
  // that fits (and never wrote a run) is handed over; otherwise the runs
  // are merged, each read in blocks that together take the budget. Call once.
  Result<std::unique_ptr<SortedStream<T>>> Finish(size_t read_budget) {
    if (runs_.empty() && buf_.capacity() * sizeof(T) <= read_budget) {
      std::sort(buf_.begin(), buf_.end(), less_);
      return std::unique_ptr<SortedStream<T>>(
          std::make_unique<sorter_internal::VectorStream<T>>(std::move(buf_), meter_));
    }
    if (!buf_.empty()) RETURN_NOT_OK(WriteRun());
    meter_->Sub(buf_.capacity() * sizeof(T));
    buf_ = std::vector<T>();
    // Too many runs for a useful block each: merge them in groups first.
    const size_t fan_in = std::max<size_t>(2, read_budget / kMinBlock);
    while (runs_.size() > fan_in) RETURN_NOT_OK(MergeFirst(fan_in, read_budget));
    return Merge(runs_.size(), read_budget);
  }

 private:
  static constexpr size_t kMinRecords = 256;
  static constexpr size_t kMinBlock = kMinRecords * sizeof(T);
  static constexpr size_t kMaxBlock = size_t{1} << 20;
  struct Run {
    std::string key;
    uint64_t records;
  };

  // Doubles the buffer while the old and the new one (both held while the
  // records move) fit the budget; false when it cannot grow.
  bool Grow() {
    const size_t before = buf_.capacity();
    const size_t after = std::min(std::max<size_t>(1024, before * 2), cap_ - before);
    if (after <= before) return false;
    meter_->Add(after * sizeof(T));
    buf_.reserve(after);
    meter_->Sub(before * sizeof(T));
    return true;
  }

  Status WriteRun() {
    std::sort(buf_.begin(), buf_.end(), less_);
    Run r{scratch_->NewKey(), buf_.size()};
    RETURN_NOT_OK(scratch_->Put(r.key, std::string_view(reinterpret_cast<const char*>(buf_.data()),
                                                        buf_.size() * sizeof(T))));
    runs_.push_back(std::move(r));
    buf_.clear();
    return Status::OK();
  }

  // A stream over the first `n` runs (which it then owns).
  Result<std::unique_ptr<SortedStream<T>>> Merge(size_t n, size_t read_budget) {
    // Blocks of at most kMaxBlock: larger reads gain nothing and fault in
    // memory the merge then holds.
    const size_t share = std::min(kMaxBlock, read_budget / n) / sizeof(T) * sizeof(T);
    const size_t block = std::max(kMinBlock, share);
    std::vector<std::unique_ptr<SortedStream<T>>> in;
    for (size_t i = 0; i < n; ++i) {
      auto s = std::make_unique<sorter_internal::RunStream<T>>(scratch_, runs_[i].key,
                                                               runs_[i].records, block, meter_);
      RETURN_NOT_OK(s->Start());
      in.push_back(std::move(s));
    }
    runs_.erase(runs_.begin(), runs_.begin() + static_cast<ptrdiff_t>(n));
    if (in.size() == 1) return std::move(in[0]);
    return std::unique_ptr<SortedStream<T>>(
        std::make_unique<sorter_internal::MergeStream<T, Less>>(std::move(in), less_));
  }

  // Merges the first `n` runs into one new run at the end.
  Status MergeFirst(size_t n, size_t read_budget) {
    ASSIGN_OR_RETURN(std::unique_ptr<SortedStream<T>> merged, Merge(n, read_budget));
    sorter_internal::StreamSource<T> source(merged.get());
    Run r{scratch_->NewKey(), 0};
    RETURN_NOT_OK(scratch_->Put(r.key, source));
    r.records = source.records();
    runs_.push_back(std::move(r));
    return Status::OK();
  }

  ScratchSpace* scratch_;
  const size_t cap_;
  MemoryMeter* meter_;
  Less less_;
  std::vector<T> buf_;
  std::vector<Run> runs_;
  uint64_t added_ = 0;
};

}  // namespace loam::ingest
