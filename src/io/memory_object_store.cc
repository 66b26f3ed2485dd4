#include "io/memory_object_store.h"

#include <algorithm>
#include <vector>

#include "common/status_macros.h"
#include "io/object_store_util.h"

namespace loam {

std::shared_ptr<MemoryObjectStore> MemoryObjectStore::Named(std::string_view name) {
  static std::mutex mu;
  static auto* registry =
      new std::map<std::string, std::shared_ptr<MemoryObjectStore>, std::less<>>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = registry->find(name);
  if (it == registry->end()) {
    it =
        registry->emplace(std::string(name), std::make_shared<MemoryObjectStore>(std::string(name)))
            .first;
  }
  return it->second;
}

Result<ObjectMeta> MemoryObjectStore::Read(std::string_view key, std::optional<ByteRange> range,
                                           ByteSink& sink) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  Object obj;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return Status::NotFound("no object '" + std::string(key) + "'");
    obj = it->second;
  }
  std::string_view bytes = *obj.data;
  if (range) {
    RETURN_NOT_OK(CheckRangeStart(key, range->offset, bytes.size()));
    bytes = bytes.substr(range->offset, range->length);
  }
  constexpr size_t kChunk = 1 << 20;
  for (size_t pos = 0; pos < bytes.size(); pos += kChunk) {
    RETURN_NOT_OK(sink.Append(bytes.substr(pos, kChunk)));
  }
  return obj.meta;
}

Result<ObjectMeta> MemoryObjectStore::Head(std::string_view key) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  if (it == objects_.end()) return Status::NotFound("no object '" + std::string(key) + "'");
  return it->second.meta;
}

Result<ObjectMeta> MemoryObjectStore::Write(std::string_view key, ByteSource& source,
                                            const PutOptions& options) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  auto data = std::make_shared<std::string>();
  // A buffer the object's size when known (one read, then the end; at most
  // 1 MiB), else 64 KiB: zeroing a fixed 1 MiB for every small put cost more
  // than the put.
  const std::optional<uint64_t> hint = source.SizeHint();
  if (hint) data->reserve(*hint);
  std::vector<char> buf(std::clamp<uint64_t>(hint.value_or(64 << 10), 1, 1 << 20));
  while (true) {
    ASSIGN_OR_RETURN(size_t n, source.Read(buf.data(), buf.size()));
    if (n == 0) break;
    data->append(buf.data(), n);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  switch (options.condition) {
    case PutCondition::kNone:
      break;
    case PutCondition::kIfAbsent:
      if (it != objects_.end()) {
        return Status::AlreadyExists("object '" + std::string(key) + "' already exists");
      }
      break;
    case PutCondition::kIfMatch:
      if (it == objects_.end()) {
        return Status::NotFound("put-if-match: no object '" + std::string(key) + "'");
      }
      if (it->second.meta.etag != options.if_match_etag) {
        return Status::Aborted("put-if-match: etag of '" + std::string(key) + "' is no longer '" +
                               options.if_match_etag + "'");
      }
      break;
  }
  Object obj;
  obj.meta.size = data->size();
  obj.meta.etag = "m" + std::to_string(++generation_);
  obj.meta.mtime_micros = clock_->NowMicros();
  obj.data = std::move(data);
  ObjectMeta meta = obj.meta;
  if (it == objects_.end()) {
    objects_.emplace(std::string(key), std::move(obj));
  } else {
    it->second = std::move(obj);
  }
  return meta;
}

Result<ListPage> MemoryObjectStore::List(std::string_view prefix, std::string_view start_after,
                                         size_t limit) {
  RETURN_NOT_OK(ValidateListPrefix(prefix));
  if (limit == 0) limit = 1000;
  ListPage page;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = start_after < prefix ? objects_.lower_bound(prefix) : objects_.upper_bound(start_after);
  for (; it != objects_.end() && std::string_view(it->first).starts_with(prefix); ++it) {
    if (page.objects.size() == limit) {
      page.truncated = true;
      break;
    }
    page.objects.push_back({it->first, it->second.meta});
  }
  return page;
}

Status MemoryObjectStore::Delete(std::string_view key) {
  RETURN_NOT_OK(ValidateObjectKey(key));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(key);
  if (it != objects_.end()) objects_.erase(it);
  return Status::OK();
}

}  // namespace loam
