// Logical column types and schemas shared by every layer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loam/result.h"

namespace loam {

// Values are stored on disk; never renumber.
enum class TypeId : uint8_t {
  kBool = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat64 = 4,
  kString = 5,     // UTF-8 text
  kBinary = 6,     // arbitrary bytes
  kDate = 7,       // days since 1970-01-01, int32
  kTimestamp = 8,  // microseconds since the epoch, UTC, int64
  kDecimal = 9,    // 128-bit two's-complement unscaled value with precision and scale
  kJson = 10,      // validated JSON text
};

struct DataType {
  TypeId id = TypeId::kInt64;
  uint8_t precision = 0;  // decimal only, 1..38
  uint8_t scale = 0;      // decimal only, 0..precision

  static DataType Bool() { return {TypeId::kBool}; }
  static DataType Int32() { return {TypeId::kInt32}; }
  static DataType Int64() { return {TypeId::kInt64}; }
  static DataType Float64() { return {TypeId::kFloat64}; }
  static DataType String() { return {TypeId::kString}; }
  static DataType Binary() { return {TypeId::kBinary}; }
  static DataType Date() { return {TypeId::kDate}; }
  static DataType Timestamp() { return {TypeId::kTimestamp}; }
  static DataType Decimal(uint8_t precision, uint8_t scale) {
    return {TypeId::kDecimal, precision, scale};
  }
  static DataType Json() { return {TypeId::kJson}; }

  // "int64", "decimal(10,2)", ...; Parse accepts exactly these spellings.
  std::string ToString() const;
  static Result<DataType> Parse(std::string_view text);
  Status Validate() const;

  // Bytes per value for fixed-width types; 0 for variable width.
  int FixedWidth() const;
  bool IsVariableWidth() const { return FixedWidth() == 0; }

  friend bool operator==(const DataType&, const DataType&) = default;
};

struct Field {
  std::string name;
  DataType type;
  bool nullable = true;

  friend bool operator==(const Field&, const Field&) = default;
};

struct Schema {
  std::vector<Field> fields;

  // Index of the field named `name`, or -1.
  int IndexOf(std::string_view name) const;
  // Names non-empty and unique, types valid.
  Status Validate() const;
  std::string ToString() const;

  friend bool operator==(const Schema&, const Schema&) = default;
};

// What a principal may do with a table: read; also append and upsert rows;
// also replace its rows, change its schema, grants and name, and drop it.
// Stored; never renumber.
enum class Role { kReader = 1, kWriter = 2, kAdmin = 3 };

// A 128-bit two's-complement integer (the unscaled value of a decimal).
struct Int128 {
  uint64_t lo = 0;
  int64_t hi = 0;

  static Int128 FromInt64(int64_t v) { return {static_cast<uint64_t>(v), v < 0 ? -1 : 0}; }
  friend bool operator==(const Int128&, const Int128&) = default;
  friend auto operator<=>(const Int128& a, const Int128& b) {
    if (auto c = a.hi <=> b.hi; c != 0) return c;
    return a.lo <=> b.lo;
  }
};

}  // namespace loam
