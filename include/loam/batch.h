// The in-memory columnar batch: the one batch type every layer passes around.
//
// A Column holds `length` values of one DataType:
//   validity  empty when no value is null, else one byte per row (1 = valid);
//   data      fixed-width types: little-endian values, FixedWidth() bytes each
//             (bool: one byte, 0 or 1); variable-width: the concatenated bytes;
//   offsets   variable-width only: length + 1 entries into `data`.
// Null slots hold zero bytes (fixed) or empty values (variable).
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "loam/types.h"

namespace loam {

// One value of any Loam type; monostate is null. Integer-like types (int32,
// int64, date, timestamp) use int64_t; string, binary and json use std::string.
using Value = std::variant<std::monostate, bool, int64_t, double, std::string, Int128>;

class Column {
 public:
  Column() = default;
  explicit Column(DataType type) : type_(type) {
    if (type_.IsVariableWidth()) offsets_.push_back(0);
  }

  const DataType& type() const { return type_; }
  int64_t length() const { return length_; }
  int64_t null_count() const { return null_count_; }
  bool IsNull(int64_t i) const { return !validity_.empty() && validity_[i] == 0; }

  // Typed reads; the caller matches the type.
  bool GetBool(int64_t i) const { return data_[i] != 0; }
  int32_t GetInt32(int64_t i) const { return Load<int32_t>(i); }
  int64_t GetInt64(int64_t i) const { return Load<int64_t>(i); }
  double GetFloat64(int64_t i) const { return Load<double>(i); }
  Int128 GetInt128(int64_t i) const { return Load<Int128>(i); }
  std::string_view GetBytes(int64_t i) const {
    return std::string_view(reinterpret_cast<const char*>(data_.data()) + offsets_[i],
                            offsets_[i + 1] - offsets_[i]);
  }
  // Any type, boxed (slow path: tests, predicates, printing).
  Value GetValue(int64_t i) const;

  // Appends; the value kind must match the column type (see Value).
  void AppendNull();
  void AppendBool(bool v) { AppendFixed(static_cast<uint8_t>(v ? 1 : 0)); }
  void AppendInt32(int32_t v) { AppendFixed(v); }
  void AppendInt64(int64_t v) { AppendFixed(v); }
  void AppendFloat64(double v) { AppendFixed(v); }
  void AppendInt128(Int128 v) { AppendFixed(v); }
  void AppendBytes(std::string_view v);
  // Fails with InvalidArgument when the kind does not fit the type.
  Status AppendValue(const Value& v);
  void Reserve(int64_t rows, int64_t var_bytes = 0);
  // Drops the rows from `length` on (length <= this->length()).
  void Truncate(int64_t length);

  // Rows [offset, offset + count) as a new column.
  Column Slice(int64_t offset, int64_t count) const;
  // Appends rows [offset, offset + count) of `other` (same type).
  void AppendFrom(const Column& other, int64_t offset, int64_t count);
  // Appends the rows of `other` at ascending `rows` (runs are copied at once).
  void AppendRows(const Column& other, const std::vector<int64_t>& rows);
  // Uncompressed size of the buffers.
  int64_t ByteSize() const;

  // Raw buffers, for encoders and decoders.
  const std::vector<uint8_t>& validity() const { return validity_; }
  const std::vector<uint8_t>& data() const { return data_; }
  const std::vector<uint64_t>& offsets() const { return offsets_; }
  // Builds a column from raw buffers; checks their shapes (not their values).
  static Result<Column> FromBuffers(DataType type, int64_t length, std::vector<uint8_t> validity,
                                    std::vector<uint8_t> data, std::vector<uint64_t> offsets);

  friend bool operator==(const Column& a, const Column& b);

 private:
  template <typename T>
  T Load(int64_t i) const {
    T v;
    std::memcpy(&v, data_.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void AppendFixed(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);  // no zero-fill before the copy
    data_.insert(data_.end(), p, p + sizeof(T));
    MarkValid();
  }
  void MarkValid() {
    if (!validity_.empty()) validity_.push_back(1);
    ++length_;
  }

  DataType type_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  std::vector<uint8_t> validity_;
  std::vector<uint8_t> data_;
  std::vector<uint64_t> offsets_;
};

struct RecordBatch {
  Schema schema;
  std::vector<Column> columns;  // one per schema field, equal lengths

  RecordBatch() = default;
  explicit RecordBatch(Schema s);

  int64_t num_rows() const { return columns.empty() ? 0 : columns[0].length(); }
  // Columns match the schema in count, type and length; non-nullable
  // columns hold no nulls.
  Status Validate() const;
  // Appends one row of boxed values (tests, small inputs).
  Status AppendRow(const std::vector<Value>& row);
  RecordBatch Slice(int64_t offset, int64_t count) const;
  // The columns named in `names`, in that order.
  Result<RecordBatch> Project(const std::vector<std::string>& names) const;

  friend bool operator==(const RecordBatch&, const RecordBatch&) = default;
};

// Concatenates batches of one schema.
Result<RecordBatch> ConcatenateBatches(const Schema& schema, const std::vector<RecordBatch>& parts);

}  // namespace loam
