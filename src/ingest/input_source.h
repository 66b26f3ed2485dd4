// Input bytes for a run: an object read through the ObjectStore in ranged
// gets, and transparent gzip / zstd decoding detected by magic bytes, with
// the decoded-size and expansion-ratio (zip-bomb) guards.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "loam/object_store.h"

namespace loam::ingest {

// Reads `key` of `store` front to back, `chunk` bytes per ranged get.
class ObjectByteSource final : public ByteSource {
 public:
  ObjectByteSource(std::shared_ptr<ObjectStore> store, std::string key, uint64_t size,
                   uint64_t chunk = 4 << 20)
      : store_(std::move(store)), key_(std::move(key)), size_(size), chunk_size_(chunk) {}
  static Result<std::unique_ptr<ObjectByteSource>> Open(std::shared_ptr<ObjectStore> store,
                                                        std::string key);
  Result<size_t> Read(char* dst, size_t n) override;
  std::optional<uint64_t> SizeHint() const override { return size_; }

 private:
  std::shared_ptr<ObjectStore> store_;
  std::string key_;
  uint64_t size_;
  uint64_t chunk_size_;
  uint64_t offset_ = 0;  // of buffer_ in the object
  std::string buffer_;
  size_t pos_ = 0;
};

enum class Compression { kNone, kGzip, kZstd };
std::string_view CompressionName(Compression c);

struct DecodeLimits {
  uint64_t max_decoded_bytes = uint64_t{64} << 30;
  // Decoded bytes per compressed byte, checked once 1 MiB is decoded.
  double max_expansion_ratio = 200;
};

// The decoded bytes of `raw`. Plain input passes through (still counted
// against max_decoded_bytes). Errors name `name` and say how to fix it.
class DecodedSource : public ByteSource {
 public:
  static Result<std::unique_ptr<DecodedSource>> Open(std::unique_ptr<ByteSource> raw,
                                                     std::string name, DecodeLimits limits = {});
  ~DecodedSource() override;
  Compression compression() const { return compression_; }
  uint64_t compressed_bytes() const { return raw_bytes_; }
  uint64_t decoded_bytes() const { return decoded_bytes_; }
  Result<size_t> Read(char* dst, size_t n) override;

 private:
  DecodedSource(std::unique_ptr<ByteSource> raw, std::string name, DecodeLimits limits)
      : raw_(std::move(raw)), name_(std::move(name)), limits_(limits) {}
  Result<size_t> ReadRaw(char* dst, size_t n);  // the peeked bytes first
  Result<size_t> Inflate(char* dst, size_t n);
  Result<size_t> Unzstd(char* dst, size_t n);
  Status Count(size_t produced);
  Status Truncated() const;
  Result<bool> RefillInput();  // false at the end of the raw input

  std::unique_ptr<ByteSource> raw_;
  std::string name_;
  DecodeLimits limits_;
  Compression compression_ = Compression::kNone;
  std::string peeked_;
  size_t peeked_pos_ = 0;
  std::string in_;  // compressed bytes not yet consumed: in_[in_pos_..)
  size_t in_pos_ = 0;
  bool raw_eof_ = false;
  bool stream_done_ = false;
  uint64_t raw_bytes_ = 0;
  uint64_t decoded_bytes_ = 0;
  void* z_ = nullptr;     // z_stream*
  void* zstd_ = nullptr;  // ZSTD_DStream*
};

}  // namespace loam::ingest
