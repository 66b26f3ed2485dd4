// Little-endian fixed-width encoding for on-disk formats (leveldb's coding.h,
// with bounds-checked decoding: a short or malformed buffer is DataLoss).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "loam/result.h"

namespace loam {

inline void PutFixed8(std::string* dst, uint8_t v) { dst->push_back(static_cast<char>(v)); }
inline void PutFixed16(std::string* dst, uint16_t v) {
  char b[2] = {static_cast<char>(v), static_cast<char>(v >> 8)};
  dst->append(b, 2);
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  dst->append(b, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  dst->append(b, 8);
}
// u32 length, then the bytes.
inline void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutFixed32(dst, static_cast<uint32_t>(s.size()));
  dst->append(s);
}

inline uint64_t DecodeFixed(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

// Reads fields in order from a buffer; every read is bounds-checked.
class Decoder {
 public:
  Decoder(std::string_view data, std::string what) : data_(data), what_(std::move(what)) {}

  Result<uint8_t> U8() { return Fixed<uint8_t>(1); }
  Result<uint16_t> U16() { return Fixed<uint16_t>(2); }
  Result<uint32_t> U32() { return Fixed<uint32_t>(4); }
  Result<uint64_t> U64() { return Fixed<uint64_t>(8); }
  Result<std::string_view> Bytes(size_t n) {
    if (n > data_.size() - pos_) return Truncated();
    std::string_view out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }
  Result<std::string_view> LengthPrefixed() {
    auto n = U32();
    if (!n.ok()) return n.status();
    return Bytes(*n);
  }
  size_t remaining() const { return data_.size() - pos_; }
  bool done() const { return pos_ == data_.size(); }
  Status Corrupt(std::string_view why) const {
    return Status::DataLoss(what_ + " is corrupt: " + std::string(why));
  }

 private:
  template <typename T>
  Result<T> Fixed(int bytes) {
    if (static_cast<size_t>(bytes) > data_.size() - pos_) return Truncated();
    T v = static_cast<T>(DecodeFixed(data_.data() + pos_, bytes));
    pos_ += bytes;
    return v;
  }
  Status Truncated() const { return Corrupt("truncated at byte " + std::to_string(pos_)); }

  std::string_view data_;
  size_t pos_ = 0;
  std::string what_;
};

}  // namespace loam
