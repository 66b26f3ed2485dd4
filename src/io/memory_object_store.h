// MemoryObjectStore: a thread-safe in-process store with the same semantics
// as the durable backends. Named instances ("mem://name") live for the
// process, so a test can reopen a workspace by URI.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "loam/object_store.h"

namespace loam {

class MemoryObjectStore final : public ObjectStore {
 public:
  explicit MemoryObjectStore(std::string name = "anonymous", const Clock* clock = Clock::System())
      : name_(std::move(name)), clock_(clock) {}

  // The process-wide store registered under `name`, created on first use.
  static std::shared_ptr<MemoryObjectStore> Named(std::string_view name);

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override;
  Result<ObjectMeta> Head(std::string_view key) override;
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override;
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override;
  Status Delete(std::string_view key) override;
  std::string Describe() const override { return "mem://" + name_; }

 private:
  struct Object {
    std::shared_ptr<const std::string> data;
    ObjectMeta meta;
  };

  const std::string name_;
  const Clock* const clock_;
  mutable std::mutex mu_;
  std::map<std::string, Object, std::less<>> objects_ LOAM_GUARDED_BY(mu_);
  uint64_t generation_ LOAM_GUARDED_BY(mu_) = 0;  // source of unique etags
};

}  // namespace loam
