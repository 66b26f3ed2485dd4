// ObjectStore: the only way Loam touches durable bytes.
//
// Keys are relative, '/'-separated paths (see ValidateObjectKey). Objects are
// immutable blobs replaced whole; there are no partial writes and a reader never
// observes a partially written object. Conditional writes (put-if-absent,
// put-if-match) are the only coordination primitive between processes.
//
// Implementations must be thread-safe. Every backend passes the conformance
// suite in src/io/object_store_conformance_test.cc.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "loam/result.h"
#include "loam/status.h"

namespace loam {

struct ObjectMeta {
  uint64_t size = 0;
  // Opaque; changes whenever the object's content is replaced.
  std::string etag;
  int64_t mtime_micros = 0;
};

struct ObjectInfo {
  std::string key;
  ObjectMeta meta;
};

struct ListPage {
  std::vector<ObjectInfo> objects;  // ascending byte-wise key order
  // True when more keys matched; continue with start_after = objects.back().key.
  bool truncated = false;
};

// Pull-based producer of bytes for streaming puts.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Fills up to `n` bytes into `dst`; returns the count, 0 at end of data.
  virtual Result<size_t> Read(char* dst, size_t n) = 0;
  // The total bytes Read will yield, when known up front (for sizing).
  virtual std::optional<uint64_t> SizeHint() const { return std::nullopt; }
};

// Push-based consumer of bytes for streaming gets.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual Status Append(std::string_view data) = 0;
};

struct ByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

enum class PutCondition { kNone, kIfAbsent, kIfMatch };

struct PutOptions {
  PutCondition condition = PutCondition::kNone;
  std::string if_match_etag;  // with kIfMatch
  // false: visible to every reader at once, but may be lost in a machine
  // crash (no fsync on local disk). For hints whose loss is recoverable,
  // such as write sidecars; never for data or commits.
  bool durable = true;
};

// The kinds of request a store serves; used by the counting and fault wrappers.
enum class ObjectOp { kGet, kGetRange, kHead, kPut, kPutIfAbsent, kPutIfMatch, kList, kDelete };
inline constexpr int kObjectOpCount = 8;
std::string_view ObjectOpName(ObjectOp op);
// kPut, kPutIfAbsent or kPutIfMatch, by the options' condition.
ObjectOp PutOpOf(const PutOptions& options);
inline bool IsWriteOp(ObjectOp op) {
  return op == ObjectOp::kPut || op == ObjectOp::kPutIfAbsent || op == ObjectOp::kPutIfMatch ||
         op == ObjectOp::kDelete;
}

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  // --- The primitives each backend implements -------------------------------

  // Streams the object (or `range` of it) into `sink` and returns the whole
  // object's metadata. NotFound when absent. A range is clamped to the end of
  // the object; a range starting beyond the end is InvalidArgument.
  virtual Result<ObjectMeta> Read(std::string_view key, std::optional<ByteRange> range,
                                  ByteSink& sink) = 0;

  virtual Result<ObjectMeta> Head(std::string_view key) = 0;

  // Stores the bytes of `source` under `key`, replacing any previous object
  // unless a condition says otherwise:
  //   kIfAbsent: AlreadyExists when the key exists (nothing written);
  //   kIfMatch:  NotFound when absent, Aborted when the current etag differs.
  // Returns the new object's metadata.
  virtual Result<ObjectMeta> Write(std::string_view key, ByteSource& source,
                                   const PutOptions& options) = 0;

  // Keys starting with `prefix` and sorting strictly after `start_after`, in
  // ascending order, at most `limit` (0 = backend default of 1000).
  virtual Result<ListPage> List(std::string_view prefix, std::string_view start_after,
                                size_t limit) = 0;

  // Removes the object. Deleting a missing key succeeds.
  virtual Status Delete(std::string_view key) = 0;
  // As Delete, visible to every reader at once, but the object may come back
  // after a machine crash (local disk skips the directory fsync and keeps the
  // directory). For hints such as finished write sidecars, never for data.
  virtual Status DeleteRelaxed(std::string_view key) { return Delete(key); }

  // A short description for messages ("file:///data/ws", "mem://t").
  virtual std::string Describe() const = 0;

  // True when a List reads every entry of the prefix's directory whatever
  // its `limit` (local disk): a caller after the first key of a prefix that
  // grows without bound looks it up another way first.
  virtual bool ListReadsWholeDirectory() const { return false; }

  // Whether PresignPut can sign: only a store whose clients reach it without
  // Loam (S3) can. A store wrapping another answers for the wrapped one.
  virtual bool CanPresign() const { return false; }
  // A URL that lets its holder PUT `key` without credentials for
  // `expires_seconds`, sending exactly `headers` (lower-case names, signed,
  // e.g. content-length to bind the size). Unimplemented unless CanPresign().
  virtual Result<std::string> PresignPut(
      std::string_view key, int64_t expires_seconds,
      const std::vector<std::pair<std::string, std::string>>& headers) const;

  // --- Conveniences built on the primitives ---------------------------------

  Result<std::string> Get(std::string_view key);
  // Also returns the object's metadata (etag for a later put-if-match).
  Result<std::string> Get(std::string_view key, ObjectMeta* meta);
  // Virtual so a backend can read straight into the result (one copy less).
  virtual Result<std::string> GetRange(std::string_view key, uint64_t offset, uint64_t length);
  Result<ObjectMeta> Put(std::string_view key, std::string_view data);
  Result<ObjectMeta> PutIfAbsent(std::string_view key, std::string_view data);
  Result<ObjectMeta> PutIfMatch(std::string_view key, std::string_view data, std::string_view etag);
  // Every key under `prefix`, following pagination.
  Result<std::vector<ObjectInfo>> ListAll(std::string_view prefix);
  // Bytes [offset, offset + length) that stored metadata says `key` holds
  // (`what` names them): fewer bytes, or a range past the end, mean the
  // object was cut short, which is DataLoss rather than InvalidArgument.
  Result<std::string> GetRecordedRange(std::string_view key, uint64_t offset, uint64_t length,
                                       std::string_view what);
};

// Rejects keys that are empty, absolute, longer than 1024 bytes, contain
// empty, "." or ".." segments, segments starting with '.' (reserved for
// backend bookkeeping), a trailing '/', control characters or invalid UTF-8.
Status ValidateObjectKey(std::string_view key);
// As above, but a list prefix may be empty or end in '/'.
Status ValidateListPrefix(std::string_view prefix);

// Opens a store from a URI:
//   /abs/path, rel/path, file:///abs/path  local directory (created if missing)
//   mem://name                            process-wide in-memory store `name`
//   s3://bucket[/prefix][?options]        S3-compatible bucket (io/s3_object_store.h)
// Unknown schemes are InvalidArgument.
Result<std::shared_ptr<ObjectStore>> OpenObjectStore(std::string_view uri);

// A ByteSource over a string_view that must outlive it.
class StringSource final : public ByteSource {
 public:
  explicit StringSource(std::string_view data) : data_(data) {}
  Result<size_t> Read(char* dst, size_t n) override;
  std::optional<uint64_t> SizeHint() const override { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// A ByteSink appending to a string.
class StringSink final : public ByteSink {
 public:
  explicit StringSink(std::string* out) : out_(out) {}
  Status Append(std::string_view data) override {
    out_->append(data);
    return Status::OK();
  }

 private:
  std::string* out_;
};

}  // namespace loam
