#include "ingest/input_source.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>

#include "common/status_macros.h"

namespace loam::ingest {
namespace {

constexpr size_t kInputChunk = 1 << 16;
constexpr uint64_t kRatioCheckAfter = 1 << 20;

}  // namespace

Result<std::unique_ptr<ObjectByteSource>> ObjectByteSource::Open(std::shared_ptr<ObjectStore> store,
                                                                 std::string key) {
  ASSIGN_OR_RETURN(ObjectMeta meta, store->Head(key));
  return std::make_unique<ObjectByteSource>(std::move(store), std::move(key), meta.size);
}

Result<size_t> ObjectByteSource::Read(char* dst, size_t n) {
  if (pos_ == buffer_.size()) {
    offset_ += buffer_.size();
    buffer_.clear();
    pos_ = 0;
    if (offset_ >= size_) return size_t{0};
    // Into the same buffer every time: no fresh pages per chunk.
    struct Into final : ByteSink {
      std::string* out;
      Status Append(std::string_view data) override {
        out->append(data);
        return Status::OK();
      }
    } sink;
    sink.out = &buffer_;
    RETURN_NOT_OK(
        store_->Read(key_, ByteRange{offset_, std::min(chunk_size_, size_ - offset_)}, sink)
            .status());
    if (buffer_.empty()) {
      return Status::DataLoss("'" + key_ + "' ended at byte " + std::to_string(offset_) +
                              " although it had " + std::to_string(size_) +
                              " bytes; it changed while being read");
    }
  }
  const size_t take = std::min(n, buffer_.size() - pos_);
  std::memcpy(dst, buffer_.data() + pos_, take);
  pos_ += take;
  return take;
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone:
      return "none";
    case Compression::kGzip:
      return "gzip";
    case Compression::kZstd:
      return "zstd";
  }
  return "unknown";
}

Result<std::unique_ptr<DecodedSource>> DecodedSource::Open(std::unique_ptr<ByteSource> raw,
                                                           std::string name, DecodeLimits limits) {
  std::unique_ptr<DecodedSource> s(new DecodedSource(std::move(raw), std::move(name), limits));
  // Peek the magic bytes (a short input is plain).
  s->peeked_.resize(4);
  size_t got = 0;
  while (got < 4) {
    ASSIGN_OR_RETURN(size_t n, s->raw_->Read(s->peeked_.data() + got, 4 - got));
    if (n == 0) break;
    got += n;
  }
  s->peeked_.resize(got);
  s->raw_bytes_ = got;
  const auto* b = reinterpret_cast<const unsigned char*>(s->peeked_.data());
  if (got >= 2 && b[0] == 0x1f && b[1] == 0x8b) {
    s->compression_ = Compression::kGzip;
    auto* z = new z_stream{};
    if (inflateInit2(z, 15 + 16) != Z_OK) {
      delete z;
      return Status::Internal("zlib initialisation failed");
    }
    s->z_ = z;
  } else if (got == 4 && b[0] == 0x28 && b[1] == 0xb5 && b[2] == 0x2f && b[3] == 0xfd) {
    s->compression_ = Compression::kZstd;
    s->zstd_ = ZSTD_createDStream();
    if (s->zstd_ == nullptr) return Status::Internal("zstd initialisation failed");
  }
  if (s->compression_ != Compression::kNone) {
    s->in_ = std::move(s->peeked_);
    s->peeked_.clear();
  }
  return s;
}

DecodedSource::~DecodedSource() {
  if (z_ != nullptr) {
    inflateEnd(static_cast<z_stream*>(z_));
    delete static_cast<z_stream*>(z_);
  }
  if (zstd_ != nullptr) ZSTD_freeDStream(static_cast<ZSTD_DStream*>(zstd_));
}

Result<size_t> DecodedSource::ReadRaw(char* dst, size_t n) {
  if (peeked_pos_ < peeked_.size()) {
    const size_t take = std::min(n, peeked_.size() - peeked_pos_);
    std::memcpy(dst, peeked_.data() + peeked_pos_, take);
    peeked_pos_ += take;
    return take;
  }
  ASSIGN_OR_RETURN(size_t got, raw_->Read(dst, n));
  raw_bytes_ += got;
  return got;
}

Result<bool> DecodedSource::RefillInput() {
  if (in_pos_ < in_.size()) return true;
  if (raw_eof_) return false;
  in_.resize(kInputChunk);
  in_pos_ = 0;
  ASSIGN_OR_RETURN(size_t got, raw_->Read(in_.data(), in_.size()));
  raw_bytes_ += got;
  in_.resize(got);
  if (got == 0) raw_eof_ = true;
  return got > 0;
}

Status DecodedSource::Truncated() const {
  return Status::InvalidArgument(name_ + ": the " + std::string(CompressionName(compression_)) +
                                 " input ends inside its compressed stream (a truncated file); "
                                 "upload the complete file");
}

Status DecodedSource::Count(size_t produced) {
  decoded_bytes_ += produced;
  if (decoded_bytes_ > limits_.max_decoded_bytes) {
    return Status::ResourceExhausted(name_ + ": the input decodes to more than the limit of " +
                                     std::to_string(limits_.max_decoded_bytes) +
                                     " bytes; split it or raise the decoded-bytes limit");
  }
  if (compression_ != Compression::kNone && decoded_bytes_ >= kRatioCheckAfter &&
      static_cast<double>(decoded_bytes_) >
          limits_.max_expansion_ratio * static_cast<double>(std::max<uint64_t>(raw_bytes_, 1))) {
    return Status::ResourceExhausted(
        name_ + ": the " + std::string(CompressionName(compression_)) +
        " input expands more than " +
        std::to_string(static_cast<int64_t>(limits_.max_expansion_ratio)) + "x after " +
        std::to_string(raw_bytes_) +
        " compressed bytes (a decompression bomb?); raise the expansion-ratio limit if it is "
        "genuine");
  }
  return Status::OK();
}

Result<size_t> DecodedSource::Read(char* dst, size_t n) {
  size_t got = 0;
  switch (compression_) {
    case Compression::kNone: {
      ASSIGN_OR_RETURN(got, ReadRaw(dst, n));
      break;
    }
    case Compression::kGzip: {
      ASSIGN_OR_RETURN(got, Inflate(dst, n));
      break;
    }
    case Compression::kZstd: {
      ASSIGN_OR_RETURN(got, Unzstd(dst, n));
      break;
    }
  }
  RETURN_NOT_OK(Count(got));
  return got;
}

Result<size_t> DecodedSource::Inflate(char* dst, size_t n) {
  auto* z = static_cast<z_stream*>(z_);
  while (true) {
    // Without new input the decoder may still hold output: run it anyway.
    ASSIGN_OR_RETURN(bool more, RefillInput());
    if (!more && stream_done_) return size_t{0};
    if (stream_done_) {  // another gzip member follows (RFC 1952 allows several)
      if (inflateReset(z) != Z_OK) return Status::Internal("zlib reset failed");
      stream_done_ = false;
    }
    z->next_in = reinterpret_cast<Bytef*>(in_.data() + in_pos_);
    z->avail_in = static_cast<uInt>(in_.size() - in_pos_);
    z->next_out = reinterpret_cast<Bytef*>(dst);
    z->avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const int rc = inflate(z, Z_NO_FLUSH);
    in_pos_ = in_.size() - z->avail_in;
    const size_t produced = static_cast<size_t>(reinterpret_cast<char*>(z->next_out) - dst);
    if (rc == Z_STREAM_END) {
      stream_done_ = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      return Status::InvalidArgument(name_ + ": corrupt gzip data (" +
                                     std::string(z->msg ? z->msg : "inflate failed") +
                                     "); re-create the file");
    }
    if (produced > 0) return produced;
    if (!more && !stream_done_) return Truncated();
  }
}

Result<size_t> DecodedSource::Unzstd(char* dst, size_t n) {
  auto* d = static_cast<ZSTD_DStream*>(zstd_);
  while (true) {
    ASSIGN_OR_RETURN(bool more, RefillInput());
    if (!more && stream_done_) return size_t{0};
    ZSTD_inBuffer in{in_.data(), in_.size(), in_pos_};
    ZSTD_outBuffer out{dst, n, 0};
    const size_t rc = ZSTD_decompressStream(d, &out, &in);
    in_pos_ = in.pos;
    if (ZSTD_isError(rc)) {
      return Status::InvalidArgument(name_ + ": corrupt zstd data (" +
                                     std::string(ZSTD_getErrorName(rc)) + "); re-create the file");
    }
    stream_done_ = rc == 0;  // a frame ended; another may follow
    if (out.pos > 0) return out.pos;
    if (!more && !stream_done_) return Truncated();
  }
}

}  // namespace loam::ingest
