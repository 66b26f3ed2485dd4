// CountingObjectStore: wraps any store and counts what crosses it — requests
// per operation, bytes read and written — in total and per key prefix. Cost
// tests use it to prove that a read costs the same at any history depth.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/thread_annotations.h"
#include "io/forwarding_object_store.h"

namespace loam {

struct IoCounters {
  std::array<uint64_t, kObjectOpCount> requests{};  // indexed by ObjectOp
  uint64_t bytes_read = 0;
  uint64_t bytes_written = 0;
  uint64_t errors = 0;  // requests that returned a non-OK status

  uint64_t count(ObjectOp op) const { return requests[static_cast<int>(op)]; }
  uint64_t total_requests() const;
  uint64_t reads() const;   // get + get_range + head + list
  uint64_t writes() const;  // put variants + delete
  IoCounters& operator+=(const IoCounters& o);
  std::string ToString() const;  // "get=3 head=1 ... read=120B written=0B"
};

struct IoSnapshot {
  IoCounters total;
  // Keyed by the first `prefix_depth` segments of the key ("tables/"), or ""
  // for keys at the root.
  std::map<std::string, IoCounters> by_prefix;
};

class CountingObjectStore final : public ForwardingObjectStore {
 public:
  explicit CountingObjectStore(std::shared_ptr<ObjectStore> base, int prefix_depth = 1)
      : ForwardingObjectStore(std::move(base)), prefix_depth_(prefix_depth) {}

  IoSnapshot Snapshot() const;
  void Reset();

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  Status DeleteRelaxed(std::string_view key) override;
  std::string Describe() const override { return "counting(" + base_->Describe() + ")"; }

 private:
  std::string PrefixOf(std::string_view key) const;
  void Record(std::string_view key, ObjectOp op, bool ok, uint64_t read, uint64_t written);

  const int prefix_depth_;
  mutable std::mutex mu_;
  IoSnapshot snap_ LOAM_GUARDED_BY(mu_);
};

}  // namespace loam
