#include "format/page.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/coding.h"
#include "common/status_macros.h"
#include "common/utf8.h"
#include "format/json_check.h"
#include "loam/predicate.h"

namespace loam {
namespace {

// Copies raw bytes into a byte vector as one memcpy (assign() from char
// iterators converts element by element).
void AssignBytes(std::string_view bytes, std::vector<uint8_t>* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  out->assign(p, p + bytes.size());
}

void PutBitmap(std::string* out, int64_t rows, const auto& bit) {
  const size_t at = out->size();
  out->resize(at + (rows + 7) / 8, 0);
  for (int64_t i = 0; i < rows; ++i) {
    if (bit(i)) (*out)[at + i / 8] |= static_cast<char>(1 << (i % 8));
  }
}

bool GetBit(std::string_view bitmap, int64_t i) {
  return (static_cast<uint8_t>(bitmap[i / 8]) >> (i % 8)) & 1;
}

// 10^p as a 128-bit magnitude bound for decimal precision checks.
Int128 PowerOfTen(int p) {
  __extension__ typedef unsigned __int128 U128;
  U128 v = 1;
  for (int i = 0; i < p; ++i) v *= 10;
  return Int128{static_cast<uint64_t>(v), static_cast<int64_t>(v >> 64)};
}

Int128 Negate(Int128 v) {
  uint64_t lo = ~v.lo + 1;
  int64_t hi = static_cast<int64_t>(~static_cast<uint64_t>(v.hi) + (lo == 0 ? 1 : 0));
  return {lo, hi};
}

}  // namespace

namespace {

// Min and max of get(i) over the non-null rows of [offset, offset + count)
// that `skip` does not exclude; false when there are none.
template <typename T, typename Get, typename Skip>
bool MinMax(const Column& c, int64_t offset, int64_t count, Get get, Skip skip, T* lo, T* hi) {
  bool any = false;
  for (int64_t i = offset; i < offset + count; ++i) {
    if (c.IsNull(i)) continue;
    const T v = get(i);
    if (skip(v)) continue;
    if (!any) {
      *lo = *hi = v;
      any = true;
    } else {
      if (v < *lo) *lo = v;
      if (*hi < v) *hi = v;
    }
  }
  return any;
}

template <typename T>
void MinMaxFixed(const Column& c, int64_t offset, int64_t count, PageStats* s) {
  const auto* data = c.data().data();
  auto get = [&](int64_t i) {
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    return v;
  };
  auto skip = [](const T& v) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
    return false;
  };
  T lo{}, hi{};
  if (!MinMax<T>(c, offset, count, get, skip, &lo, &hi)) return;
  if constexpr (std::is_same_v<T, uint8_t>) {
    s->min = lo != 0;
    s->max = hi != 0;
  } else if constexpr (std::is_integral_v<T>) {
    s->min = static_cast<int64_t>(lo);
    s->max = static_cast<int64_t>(hi);
  } else {
    s->min = lo;
    s->max = hi;
  }
}

void MinMaxBytes(const Column& c, int64_t offset, int64_t count, PageStats* s) {
  std::string_view lo, hi;
  auto get = [&](int64_t i) { return c.GetBytes(i); };
  auto skip = [](std::string_view) { return false; };
  if (!MinMax<std::string_view>(c, offset, count, get, skip, &lo, &hi)) return;
  if (lo.size() > PageStats::kMaxStatBytes || hi.size() > PageStats::kMaxStatBytes) return;
  s->min = std::string(lo);
  s->max = std::string(hi);
}

int64_t CountNulls(const Column& c, int64_t offset, int64_t count) {
  if (c.null_count() == 0) return 0;
  int64_t n = 0;
  for (int64_t i = offset; i < offset + count; ++i) n += c.IsNull(i) ? 1 : 0;
  return n;
}

}  // namespace

PageStats ComputePageStats(const Column& column, int64_t offset, int64_t count) {
  PageStats s;
  s.null_count = CountNulls(column, offset, count);
  switch (column.type().id) {
    case TypeId::kBool:
      MinMaxFixed<uint8_t>(column, offset, count, &s);
      break;
    case TypeId::kInt32:
    case TypeId::kDate:
      MinMaxFixed<int32_t>(column, offset, count, &s);
      break;
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      MinMaxFixed<int64_t>(column, offset, count, &s);
      break;
    case TypeId::kFloat64:
      MinMaxFixed<double>(column, offset, count, &s);
      break;
    case TypeId::kDecimal:
      MinMaxFixed<Int128>(column, offset, count, &s);
      break;
    case TypeId::kString:
    case TypeId::kBinary:
      MinMaxBytes(column, offset, count, &s);
      break;
    case TypeId::kJson:
      break;
  }
  return s;
}

void EncodePagePayload(const Column& column, int64_t offset, int64_t rows, std::string* out) {
  const int64_t nulls = CountNulls(column, offset, rows);
  PutFixed32(out, static_cast<uint32_t>(rows));
  PutFixed32(out, static_cast<uint32_t>(nulls));
  if (nulls > 0) {
    PutBitmap(out, rows, [&](int64_t i) { return !column.IsNull(offset + i); });
  }
  const auto& data = column.data();
  if (column.type().id == TypeId::kBool) {
    PutBitmap(out, rows, [&](int64_t i) { return data[offset + i] != 0; });
  } else if (column.type().IsVariableWidth()) {
    const auto& offsets = column.offsets();
    const uint64_t base = offsets[offset];
    const size_t at = out->size();
    out->resize(at + 4 * (rows + 1));
    char* p = out->data() + at;
    for (int64_t i = 0; i <= rows; ++i) {
      const uint32_t v = static_cast<uint32_t>(offsets[offset + i] - base);
      for (int b = 0; b < 4; ++b) p[4 * i + b] = static_cast<char>(v >> (8 * b));
    }
    out->append(reinterpret_cast<const char*>(data.data()) + base, offsets[offset + rows] - base);
  } else {
    const int w = column.type().FixedWidth();
    out->append(reinterpret_cast<const char*>(data.data()) + offset * w, rows * w);
  }
}

Result<Column> DecodePagePayload(const DataType& type, int64_t rows, std::string_view payload) {
  Decoder d(payload, "page");
  ASSIGN_OR_RETURN(uint32_t n, d.U32());
  ASSIGN_OR_RETURN(uint32_t nulls, d.U32());
  if (n != rows || nulls > n) return d.Corrupt("row or null count disagrees with the footer");
  std::vector<uint8_t> validity;
  if (nulls > 0) {
    ASSIGN_OR_RETURN(std::string_view bits, d.Bytes((rows + 7) / 8));
    validity.resize(rows);
    uint32_t seen_nulls = 0;
    for (int64_t i = 0; i < rows; ++i) {
      validity[i] = GetBit(bits, i) ? 1 : 0;
      seen_nulls += validity[i] ? 0 : 1;
    }
    if (seen_nulls != nulls) return d.Corrupt("validity bitmap disagrees with null count");
  }
  std::vector<uint8_t> data;
  std::vector<uint64_t> offsets;
  if (type.id == TypeId::kBool) {
    ASSIGN_OR_RETURN(std::string_view bits, d.Bytes((rows + 7) / 8));
    data.resize(rows);
    for (int64_t i = 0; i < rows; ++i) data[i] = GetBit(bits, i) ? 1 : 0;
  } else if (type.IsVariableWidth()) {
    ASSIGN_OR_RETURN(std::string_view raw_offsets, d.Bytes(4 * (rows + 1)));
    offsets.resize(rows + 1);
    for (int64_t i = 0; i <= rows; ++i) {
      offsets[i] = DecodeFixed(raw_offsets.data() + 4 * i, 4);
      if (i > 0 && offsets[i] < offsets[i - 1]) return d.Corrupt("offsets decrease");
    }
    if (offsets[0] != 0) return d.Corrupt("first offset is not zero");
    ASSIGN_OR_RETURN(std::string_view bytes, d.Bytes(offsets[rows]));
    AssignBytes(bytes, &data);
  } else {
    ASSIGN_OR_RETURN(std::string_view bytes, d.Bytes(rows * type.FixedWidth()));
    AssignBytes(bytes, &data);
  }
  if (!d.done()) return d.Corrupt("trailing bytes after the values");
  auto col =
      Column::FromBuffers(type, rows, std::move(validity), std::move(data), std::move(offsets));
  if (!col.ok()) return d.Corrupt(col.status().message());
  return col;
}

namespace {

void StoreLittleEndian(char* dst, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) dst[i] = static_cast<char>(v >> (8 * i));
}

}  // namespace

void AppendRowKey(const std::vector<const Column*>& cols, int64_t row, std::string* key) {
  // The bytes of EncodeStatValue, read straight from the buffers (no boxing):
  // per column 0 (null) or 1, then the value length-prefixed. A fixed-width
  // value is assembled on the stack and appended once (the hot path of
  // upsert key matching).
  for (const Column* c : cols) {
    if (c->IsNull(row)) {
      PutFixed8(key, 0);
      continue;
    }
    char fixed[1 + 4 + 16];
    uint32_t n = 8;
    switch (c->type().id) {
      case TypeId::kBool:
        n = 1;
        fixed[5] = c->GetBool(row) ? 1 : 0;
        break;
      case TypeId::kInt32:
      case TypeId::kDate:
        StoreLittleEndian(fixed + 5, static_cast<uint64_t>(int64_t{c->GetInt32(row)}), 8);
        break;
      case TypeId::kInt64:
      case TypeId::kTimestamp:
        StoreLittleEndian(fixed + 5, static_cast<uint64_t>(c->GetInt64(row)), 8);
        break;
      case TypeId::kFloat64: {
        uint64_t bits;
        const double d = c->GetFloat64(row);
        std::memcpy(&bits, &d, 8);
        StoreLittleEndian(fixed + 5, bits, 8);
        break;
      }
      case TypeId::kDecimal: {
        const Int128 v = c->GetInt128(row);
        n = 16;
        StoreLittleEndian(fixed + 5, v.lo, 8);
        StoreLittleEndian(fixed + 13, static_cast<uint64_t>(v.hi), 8);
        break;
      }
      case TypeId::kString:
      case TypeId::kBinary:
      case TypeId::kJson:
        PutFixed8(key, 1);
        PutLengthPrefixed(key, c->GetBytes(row));
        continue;
    }
    fixed[0] = 1;
    StoreLittleEndian(fixed + 1, n, 4);
    key->append(fixed, 5 + n);
  }
}

std::string EncodeRowKey(const std::vector<const Column*>& cols, int64_t row) {
  std::string key;
  AppendRowKey(cols, row, &key);
  return key;
}

std::string EncodeStatValue(const DataType& type, const Value& v) {
  std::string out;
  switch (type.id) {
    case TypeId::kBool:
      PutFixed8(&out, std::get<bool>(v) ? 1 : 0);
      break;
    case TypeId::kInt32:
    case TypeId::kDate:
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      PutFixed64(&out, static_cast<uint64_t>(std::get<int64_t>(v)));
      break;
    case TypeId::kFloat64: {
      uint64_t bits;
      const double d = std::get<double>(v);
      std::memcpy(&bits, &d, 8);
      PutFixed64(&out, bits);
      break;
    }
    case TypeId::kDecimal:
      PutFixed64(&out, std::get<Int128>(v).lo);
      PutFixed64(&out, static_cast<uint64_t>(std::get<Int128>(v).hi));
      break;
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kJson:
      out = std::get<std::string>(v);
      break;
  }
  return out;
}

Result<Value> DecodeStatValue(const DataType& type, std::string_view bytes) {
  Decoder d(bytes, "page statistic");
  Value v;
  switch (type.id) {
    case TypeId::kBool: {
      ASSIGN_OR_RETURN(uint8_t b, d.U8());
      if (b > 1) return d.Corrupt("bool statistic is not 0 or 1");
      v = b == 1;
      break;
    }
    case TypeId::kInt32:
    case TypeId::kDate:
    case TypeId::kInt64:
    case TypeId::kTimestamp: {
      ASSIGN_OR_RETURN(uint64_t x, d.U64());
      v = static_cast<int64_t>(x);
      break;
    }
    case TypeId::kFloat64: {
      ASSIGN_OR_RETURN(uint64_t bits, d.U64());
      double x;
      std::memcpy(&x, &bits, 8);
      v = x;
      break;
    }
    case TypeId::kDecimal: {
      ASSIGN_OR_RETURN(uint64_t lo, d.U64());
      ASSIGN_OR_RETURN(uint64_t hi, d.U64());
      v = Int128{lo, static_cast<int64_t>(hi)};
      break;
    }
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kJson:
      return Value(std::string(bytes));
  }
  if (!d.done()) return d.Corrupt("statistic has trailing bytes");
  return v;
}

Status ValidateColumnValues(const Field& field, const Column& column) {
  auto bad = [&](int64_t row, const std::string& why) {
    return Status::InvalidArgument("column '" + field.name + "' row " + std::to_string(row) + ": " +
                                   why);
  };
  switch (field.type.id) {
    case TypeId::kBool:
      for (int64_t i = 0; i < column.length(); ++i) {
        if (column.data()[i] > 1) return bad(i, "bool byte is not 0 or 1");
      }
      break;
    case TypeId::kString:
      for (int64_t i = 0; i < column.length(); ++i) {
        if (!column.IsNull(i) && !IsValidUtf8(column.GetBytes(i))) return bad(i, "invalid UTF-8");
      }
      break;
    case TypeId::kJson:
      for (int64_t i = 0; i < column.length(); ++i) {
        if (!column.IsNull(i) && !CheckJsonDocument(column.GetBytes(i), kJsonDepthCeiling).ok()) {
          return bad(i, "not valid JSON");
        }
      }
      break;
    case TypeId::kDecimal: {
      const Int128 limit = PowerOfTen(field.type.precision);
      const Int128 neg_limit = Negate(limit);
      for (int64_t i = 0; i < column.length(); ++i) {
        if (column.IsNull(i)) continue;
        const Int128 v = column.GetInt128(i);
        if (!(v < limit) || !(neg_limit < v)) {
          return bad(i, "value does not fit " + field.type.ToString());
        }
      }
      break;
    }
    default:
      break;
  }
  return Status::OK();
}

}  // namespace loam
