#include "loam/object_store.h"

#include <algorithm>
#include <cstring>

#include "common/status_macros.h"
#include "common/utf8.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"
#include "io/s3_object_store.h"

namespace loam {

std::string_view ObjectOpName(ObjectOp op) {
  switch (op) {
    case ObjectOp::kGet:
      return "get";
    case ObjectOp::kGetRange:
      return "get_range";
    case ObjectOp::kHead:
      return "head";
    case ObjectOp::kPut:
      return "put";
    case ObjectOp::kPutIfAbsent:
      return "put_if_absent";
    case ObjectOp::kPutIfMatch:
      return "put_if_match";
    case ObjectOp::kList:
      return "list";
    case ObjectOp::kDelete:
      return "delete";
  }
  return "unknown";
}

ObjectOp PutOpOf(const PutOptions& options) {
  switch (options.condition) {
    case PutCondition::kIfAbsent:
      return ObjectOp::kPutIfAbsent;
    case PutCondition::kIfMatch:
      return ObjectOp::kPutIfMatch;
    case PutCondition::kNone:
      break;
  }
  return ObjectOp::kPut;
}

Result<size_t> StringSource::Read(char* dst, size_t n) {
  size_t k = std::min(n, data_.size() - pos_);
  std::memcpy(dst, data_.data() + pos_, k);
  pos_ += k;
  return k;
}

Result<std::string> ObjectStore::Get(std::string_view key) { return Get(key, nullptr); }

Result<std::string> ObjectStore::Get(std::string_view key, ObjectMeta* meta) {
  std::string out;
  StringSink sink(&out);
  ASSIGN_OR_RETURN(ObjectMeta m, Read(key, std::nullopt, sink));
  if (meta) *meta = std::move(m);
  return out;
}

Result<std::string> ObjectStore::PresignPut(
    std::string_view key, int64_t, const std::vector<std::pair<std::string, std::string>>&) const {
  return Status::Unimplemented(Describe() + " cannot presign a PUT of '" + std::string(key) +
                               "': only an S3 workspace signs upload URLs");
}

Result<std::string> ObjectStore::GetRange(std::string_view key, uint64_t offset, uint64_t length) {
  std::string out;
  StringSink sink(&out);
  RETURN_NOT_OK(Read(key, ByteRange{offset, length}, sink));
  return out;
}

Result<std::string> ObjectStore::GetRecordedRange(std::string_view key, uint64_t offset,
                                                  uint64_t length, std::string_view what) {
  Result<std::string> bytes = GetRange(key, offset, length);
  if (!bytes.ok() && bytes.status().IsInvalidArgument()) {
    // A range starting past the end; anything else (a refused request)
    // keeps its own error.
    Result<ObjectMeta> meta = Head(key);
    if (!meta.ok() || meta->size >= offset) return bytes.status();
  } else if (!bytes.ok() || bytes->size() == length) {
    return bytes;
  }
  return Status::DataLoss(std::string(what) + " is cut short: " + std::to_string(length) +
                          " bytes at " + std::to_string(offset) + " of '" + std::string(key) +
                          "' are not all there");
}

Result<ObjectMeta> ObjectStore::Put(std::string_view key, std::string_view data) {
  StringSource source(data);
  return Write(key, source, PutOptions{});
}

Result<ObjectMeta> ObjectStore::PutIfAbsent(std::string_view key, std::string_view data) {
  StringSource source(data);
  return Write(key, source, PutOptions{PutCondition::kIfAbsent, {}});
}

Result<ObjectMeta> ObjectStore::PutIfMatch(std::string_view key, std::string_view data,
                                           std::string_view etag) {
  StringSource source(data);
  return Write(key, source, PutOptions{PutCondition::kIfMatch, std::string(etag)});
}

Result<std::vector<ObjectInfo>> ObjectStore::ListAll(std::string_view prefix) {
  std::vector<ObjectInfo> all;
  std::string after;
  while (true) {
    ASSIGN_OR_RETURN(ListPage page, List(prefix, after, 0));
    for (auto& o : page.objects) all.push_back(std::move(o));
    if (!page.truncated || all.empty()) break;
    after = all.back().key;
  }
  return all;
}

namespace {

Status InvalidKey(std::string_view key, std::string_view why) {
  return Status::InvalidArgument("invalid object key '" + std::string(key) +
                                 "': " + std::string(why));
}

// Validates `key` as a sequence of segments; `allow_trailing_slash` for prefixes.
Status ValidateSegments(std::string_view key, bool allow_trailing_slash) {
  if (key.size() > 1024) return InvalidKey(key.substr(0, 64), "longer than 1024 bytes");
  if (key.front() == '/') return InvalidKey(key, "must be relative (no leading '/')");
  for (size_t i = 0; i < key.size();) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c < 0x20 || c == 0x7F) return InvalidKey(key, "contains a control character");
    const size_t n = Utf8SequenceLength(key, i);
    if (n == 0) return InvalidKey(key, "is not valid UTF-8");
    i += n;
  }
  size_t start = 0;
  while (start <= key.size()) {
    size_t end = key.find('/', start);
    if (end == std::string_view::npos) end = key.size();
    std::string_view seg = key.substr(start, end - start);
    const bool last = end == key.size();
    if (seg.empty()) {
      if (!(last && allow_trailing_slash && start > 0)) {
        return InvalidKey(key, last ? "ends with '/'" : "has an empty segment");
      }
    } else if (seg == "." || seg == "..") {
      return InvalidKey(key, "has a '.' or '..' segment");
    } else if (seg.front() == '.') {
      return InvalidKey(key, "has a segment starting with '.' (reserved)");
    } else if (seg.size() > 255) {
      return InvalidKey(key, "has a segment longer than 255 bytes");
    }
    start = end + 1;
  }
  return Status::OK();
}

}  // namespace

Status ValidateObjectKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("invalid object key '': empty");
  return ValidateSegments(key, /*allow_trailing_slash=*/false);
}

Status ValidateListPrefix(std::string_view prefix) {
  if (prefix.empty()) return Status::OK();
  return ValidateSegments(prefix, /*allow_trailing_slash=*/true);
}

Result<std::shared_ptr<ObjectStore>> OpenObjectStore(std::string_view uri) {
  constexpr std::string_view kFile = "file://";
  constexpr std::string_view kMem = "mem://";
  if (uri.starts_with("s3://")) {
    ASSIGN_OR_RETURN(S3Options options, S3Options::FromUri(uri));
    ASSIGN_OR_RETURN(auto store, S3ObjectStore::Open(std::move(options)));
    return std::shared_ptr<ObjectStore>(std::move(store));
  }
  if (uri.starts_with(kMem)) {
    std::string_view name = uri.substr(kMem.size());
    if (name.empty()) return Status::InvalidArgument("mem:// URI needs a name, e.g. mem://test");
    return std::shared_ptr<ObjectStore>(MemoryObjectStore::Named(name));
  }
  std::string_view path = uri;
  if (uri.starts_with(kFile)) {
    path = uri.substr(kFile.size());
    if (!path.starts_with("/")) {
      return Status::InvalidArgument("file:// URI needs an absolute path (file:///dir): '" +
                                     std::string(uri) + "'");
    }
  } else if (auto colon = uri.find("://"); colon != std::string_view::npos) {
    return Status::InvalidArgument("unsupported object store scheme '" +
                                   std::string(uri.substr(0, colon)) +
                                   "://'; use a path, file://, mem:// or s3://");
  }
  if (path.empty()) return Status::InvalidArgument("empty object store location");
  ASSIGN_OR_RETURN(auto store, LocalObjectStore::Open(std::string(path)));
  return std::shared_ptr<ObjectStore>(std::move(store));
}

}  // namespace loam
