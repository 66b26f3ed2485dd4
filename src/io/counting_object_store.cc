#include "io/counting_object_store.h"

#include "common/status_macros.h"

namespace loam {
namespace {

class CountingSink final : public ByteSink {
 public:
  explicit CountingSink(ByteSink& inner) : inner_(inner) {}
  Status Append(std::string_view data) override {
    bytes += data.size();
    return inner_.Append(data);
  }
  uint64_t bytes = 0;

 private:
  ByteSink& inner_;
};

class CountingSource final : public ByteSource {
 public:
  explicit CountingSource(ByteSource& inner) : inner_(inner) {}
  Result<size_t> Read(char* dst, size_t n) override {
    Result<size_t> r = inner_.Read(dst, n);
    if (r.ok()) bytes += *r;
    return r;
  }
  std::optional<uint64_t> SizeHint() const override { return inner_.SizeHint(); }
  uint64_t bytes = 0;

 private:
  ByteSource& inner_;
};

}  // namespace

uint64_t IoCounters::total_requests() const {
  uint64_t n = 0;
  for (uint64_t r : requests) n += r;
  return n;
}

uint64_t IoCounters::reads() const {
  return count(ObjectOp::kGet) + count(ObjectOp::kGetRange) + count(ObjectOp::kHead) +
         count(ObjectOp::kList);
}

uint64_t IoCounters::writes() const { return total_requests() - reads(); }

IoCounters& IoCounters::operator+=(const IoCounters& o) {
  for (int i = 0; i < kObjectOpCount; ++i) requests[i] += o.requests[i];
  bytes_read += o.bytes_read;
  bytes_written += o.bytes_written;
  errors += o.errors;
  return *this;
}

std::string IoCounters::ToString() const {
  std::string out;
  for (int i = 0; i < kObjectOpCount; ++i) {
    if (requests[i] == 0) continue;
    out += std::string(ObjectOpName(static_cast<ObjectOp>(i))) + "=" + std::to_string(requests[i]) +
           " ";
  }
  out += "read=" + std::to_string(bytes_read) + "B written=" + std::to_string(bytes_written) + "B";
  if (errors) out += " errors=" + std::to_string(errors);
  return out;
}

std::string CountingObjectStore::PrefixOf(std::string_view key) const {
  size_t pos = 0;
  for (int i = 0; i < prefix_depth_; ++i) {
    size_t slash = key.find('/', pos);
    if (slash == std::string_view::npos) break;
    pos = slash + 1;
  }
  return std::string(key.substr(0, pos));
}

void CountingObjectStore::Record(std::string_view key, ObjectOp op, bool ok, uint64_t read,
                                 uint64_t written) {
  IoCounters c;
  c.requests[static_cast<int>(op)] = 1;
  c.bytes_read = read;
  c.bytes_written = written;
  c.errors = ok ? 0 : 1;
  std::string prefix = PrefixOf(key);
  std::lock_guard<std::mutex> lock(mu_);
  snap_.total += c;
  snap_.by_prefix[prefix] += c;
}

IoSnapshot CountingObjectStore::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snap_;
}

void CountingObjectStore::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  snap_ = IoSnapshot{};
}

Result<ObjectMeta> CountingObjectStore::Read(std::string_view key, std::optional<ByteRange> range,
                                             ByteSink& sink) {
  CountingSink counting(sink);
  Result<ObjectMeta> r = base_->Read(key, range, counting);
  Record(key, range ? ObjectOp::kGetRange : ObjectOp::kGet, r.ok(), counting.bytes, 0);
  return r;
}

Result<ObjectMeta> CountingObjectStore::Head(std::string_view key) {
  Result<ObjectMeta> r = base_->Head(key);
  Record(key, ObjectOp::kHead, r.ok(), 0, 0);
  return r;
}

Result<ObjectMeta> CountingObjectStore::Write(std::string_view key, ByteSource& source,
                                              const PutOptions& options) {
  CountingSource counting(source);
  Result<ObjectMeta> r = base_->Write(key, counting, options);
  Record(key, PutOpOf(options), r.ok(), 0, counting.bytes);
  return r;
}

Result<ListPage> CountingObjectStore::List(std::string_view prefix, std::string_view start_after,
                                           size_t limit) {
  Result<ListPage> r = base_->List(prefix, start_after, limit);
  Record(prefix, ObjectOp::kList, r.ok(), 0, 0);
  return r;
}

Status CountingObjectStore::Delete(std::string_view key) {
  Status s = base_->Delete(key);
  Record(key, ObjectOp::kDelete, s.ok(), 0, 0);
  return s;
}

Status CountingObjectStore::DeleteRelaxed(std::string_view key) {
  Status s = base_->DeleteRelaxed(key);
  Record(key, ObjectOp::kDelete, s.ok(), 0, 0);
  return s;
}

}  // namespace loam
