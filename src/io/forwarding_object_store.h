// ForwardingObjectStore: the base of a store that wraps another (counting,
// latency, fault injection). Every primitive, presigning included, goes to
// the wrapped store; a wrapper overrides what it changes, so a primitive
// added to ObjectStore reaches the wrapped store without touching the
// wrappers. GetRange and DeleteRelaxed are not forwarded: they go through
// this store's Read and Delete (ObjectStore's defaults), so a wrapper that
// intercepts Read or Delete sees ranged reads and relaxed deletes too; a
// wrapper overrides them to keep the backend's one-copy read or relaxed
// durability.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "loam/object_store.h"

namespace loam {

class ForwardingObjectStore : public ObjectStore {
 public:
  explicit ForwardingObjectStore(std::shared_ptr<ObjectStore> base) : base_(std::move(base)) {}

  Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                          ByteSink& sink) override {
    return base_->Read(key, range, sink);
  }
  Result<ObjectMeta> Head(std::string_view key) override { return base_->Head(key); }
  Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                           const PutOptions& options) override {
    return base_->Write(key, source, options);
  }
  Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                        size_t limit) override {
    return base_->List(prefix, start_after, limit);
  }
  Status Delete(std::string_view key) override { return base_->Delete(key); }
  std::string Describe() const override { return base_->Describe(); }
  bool ListReadsWholeDirectory() const override { return base_->ListReadsWholeDirectory(); }
  bool CanPresign() const override { return base_->CanPresign(); }
  Result<std::string> PresignPut(
      std::string_view key, int64_t expires_seconds,
      const std::vector<std::pair<std::string, std::string>>& headers) const override {
    return base_->PresignPut(key, expires_seconds, headers);
  }

  ObjectStore& base() const { return *base_; }

 protected:
  const std::shared_ptr<ObjectStore> base_;
};

}  // namespace loam
