#include "loam/batch.h"

#include <algorithm>

#include "common/status_macros.h"

namespace loam {

Value Column::GetValue(int64_t i) const {
  if (IsNull(i)) return std::monostate{};
  switch (type_.id) {
    case TypeId::kBool:
      return GetBool(i);
    case TypeId::kInt32:
    case TypeId::kDate:
      return static_cast<int64_t>(GetInt32(i));
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return GetInt64(i);
    case TypeId::kFloat64:
      return GetFloat64(i);
    case TypeId::kDecimal:
      return GetInt128(i);
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kJson:
      return std::string(GetBytes(i));
  }
  return std::monostate{};
}

void Column::AppendNull() {
  if (validity_.empty()) validity_.assign(static_cast<size_t>(length_), 1);
  validity_.push_back(0);
  ++null_count_;
  ++length_;
  if (type_.IsVariableWidth()) {
    offsets_.push_back(data_.size());
  } else {
    data_.resize(data_.size() + type_.FixedWidth(), 0);
  }
}

void Column::Truncate(int64_t length) {
  if (length >= length_) return;
  if (!validity_.empty()) {
    for (int64_t i = length; i < length_; ++i) null_count_ -= validity_[i] == 0;
    validity_.resize(static_cast<size_t>(length));
  }
  if (type_.IsVariableWidth()) {
    offsets_.resize(static_cast<size_t>(length) + 1);
    data_.resize(offsets_.back());
  } else {
    data_.resize(static_cast<size_t>(length) * type_.FixedWidth());
  }
  length_ = length;
}

void Column::AppendBytes(std::string_view v) {
  const auto* p = reinterpret_cast<const uint8_t*>(v.data());  // memcpy, not a converting loop
  data_.insert(data_.end(), p, p + v.size());
  offsets_.push_back(data_.size());
  MarkValid();
}

Status Column::AppendValue(const Value& v) {
  auto mismatch = [&](std::string_view kind) {
    return Status::InvalidArgument("cannot store a " + std::string(kind) + " in a " +
                                   type_.ToString() + " column");
  };
  if (std::holds_alternative<std::monostate>(v)) {
    AppendNull();
    return Status::OK();
  }
  switch (type_.id) {
    case TypeId::kBool:
      if (!std::holds_alternative<bool>(v)) return mismatch("non-bool");
      AppendBool(std::get<bool>(v));
      return Status::OK();
    case TypeId::kInt32:
    case TypeId::kDate: {
      if (!std::holds_alternative<int64_t>(v)) return mismatch("non-integer");
      const int64_t x = std::get<int64_t>(v);
      if (x < INT32_MIN || x > INT32_MAX) return mismatch("out-of-range integer");
      AppendInt32(static_cast<int32_t>(x));
      return Status::OK();
    }
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      if (!std::holds_alternative<int64_t>(v)) return mismatch("non-integer");
      AppendInt64(std::get<int64_t>(v));
      return Status::OK();
    case TypeId::kFloat64:
      if (!std::holds_alternative<double>(v)) return mismatch("non-float");
      AppendFloat64(std::get<double>(v));
      return Status::OK();
    case TypeId::kDecimal:
      if (!std::holds_alternative<Int128>(v)) return mismatch("non-decimal");
      AppendInt128(std::get<Int128>(v));
      return Status::OK();
    case TypeId::kString:
    case TypeId::kBinary:
    case TypeId::kJson:
      if (!std::holds_alternative<std::string>(v)) return mismatch("non-text");
      AppendBytes(std::get<std::string>(v));
      return Status::OK();
  }
  return Status::Internal("unknown type");
}

void Column::Reserve(int64_t rows, int64_t var_bytes) {
  if (type_.IsVariableWidth()) {
    offsets_.reserve(offsets_.size() + rows);
    data_.reserve(data_.size() + var_bytes);
  } else {
    data_.reserve(data_.size() + rows * type_.FixedWidth());
  }
}

void Column::AppendFrom(const Column& other, int64_t offset, int64_t count) {
  if (count <= 0) return;
  if (other.null_count_ > 0 || !validity_.empty()) {
    if (validity_.empty()) validity_.assign(static_cast<size_t>(length_), 1);
    for (int64_t i = offset; i < offset + count; ++i) {
      const bool valid = !other.IsNull(i);
      validity_.push_back(valid ? 1 : 0);
      null_count_ += valid ? 0 : 1;
    }
  }
  if (type_.IsVariableWidth()) {
    const uint64_t begin = other.offsets_[offset];
    const uint64_t end = other.offsets_[offset + count];
    const uint64_t base = data_.size();
    data_.insert(data_.end(), other.data_.begin() + begin, other.data_.begin() + end);
    for (int64_t i = offset + 1; i <= offset + count; ++i) {
      offsets_.push_back(base + other.offsets_[i] - begin);
    }
  } else {
    const int w = type_.FixedWidth();
    data_.insert(data_.end(), other.data_.begin() + offset * w,
                 other.data_.begin() + (offset + count) * w);
  }
  length_ += count;
}

void Column::AppendRows(const Column& other, const std::vector<int64_t>& rows) {
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;
    AppendFrom(other, rows[i], static_cast<int64_t>(j - i));
    i = j;
  }
}

Column Column::Slice(int64_t offset, int64_t count) const {
  Column out(type_);
  out.AppendFrom(*this, offset, count);
  return out;
}

int64_t Column::ByteSize() const {
  return static_cast<int64_t>(validity_.size() + data_.size() + offsets_.size() * 8);
}

Result<Column> Column::FromBuffers(DataType type, int64_t length, std::vector<uint8_t> validity,
                                   std::vector<uint8_t> data, std::vector<uint64_t> offsets) {
  Column c(type);
  if (!validity.empty() && static_cast<int64_t>(validity.size()) != length) {
    return Status::InvalidArgument("validity buffer length does not match row count");
  }
  if (type.IsVariableWidth()) {
    if (static_cast<int64_t>(offsets.size()) != length + 1 || offsets.front() != 0 ||
        offsets.back() != data.size() || !std::is_sorted(offsets.begin(), offsets.end())) {
      return Status::InvalidArgument("malformed offsets buffer");
    }
  } else if (static_cast<int64_t>(data.size()) != length * type.FixedWidth() || !offsets.empty()) {
    return Status::InvalidArgument("value buffer size does not match row count");
  }
  c.length_ = length;
  c.null_count_ = static_cast<int64_t>(std::count(validity.begin(), validity.end(), 0));
  if (c.null_count_ == 0) validity.clear();
  c.validity_ = std::move(validity);
  c.data_ = std::move(data);
  if (type.IsVariableWidth()) c.offsets_ = std::move(offsets);
  return c;
}

bool operator==(const Column& a, const Column& b) {
  if (!(a.type_ == b.type_) || a.length_ != b.length_ || a.null_count_ != b.null_count_) {
    return false;
  }
  for (int64_t i = 0; i < a.length_; ++i) {
    if (a.IsNull(i) != b.IsNull(i)) return false;
    if (a.IsNull(i)) continue;
    if (a.type_.IsVariableWidth()) {
      if (a.GetBytes(i) != b.GetBytes(i)) return false;
    } else {
      const int w = a.type_.FixedWidth();
      if (std::memcmp(a.data_.data() + i * w, b.data_.data() + i * w, w) != 0) return false;
    }
  }
  return true;
}

RecordBatch::RecordBatch(Schema s) : schema(std::move(s)) {
  for (const Field& f : schema.fields) columns.emplace_back(f.type);
}

Status RecordBatch::Validate() const {
  if (columns.size() != schema.fields.size()) {
    return Status::InvalidArgument("batch has " + std::to_string(columns.size()) +
                                   " columns for a schema of " +
                                   std::to_string(schema.fields.size()));
  }
  for (size_t i = 0; i < columns.size(); ++i) {
    const Field& f = schema.fields[i];
    if (!(columns[i].type() == f.type)) {
      return Status::InvalidArgument("column '" + f.name + "' has type " +
                                     columns[i].type().ToString() + ", schema says " +
                                     f.type.ToString());
    }
    if (columns[i].length() != columns[0].length()) {
      return Status::InvalidArgument("column '" + f.name + "' has " +
                                     std::to_string(columns[i].length()) + " rows, expected " +
                                     std::to_string(columns[0].length()));
    }
    if (!f.nullable && columns[i].null_count() > 0) {
      return Status::InvalidArgument("column '" + f.name + "' is not nullable but holds " +
                                     std::to_string(columns[i].null_count()) + " nulls");
    }
  }
  return Status::OK();
}

Status RecordBatch::AppendRow(const std::vector<Value>& row) {
  if (row.size() != columns.size()) {
    return Status::InvalidArgument("row has " + std::to_string(row.size()) + " values for " +
                                   std::to_string(columns.size()) + " columns");
  }
  for (size_t i = 0; i < row.size(); ++i) {
    RETURN_NOT_OK_CTX(columns[i].AppendValue(row[i]), "column '" + schema.fields[i].name + "'");
  }
  return Status::OK();
}

RecordBatch RecordBatch::Slice(int64_t offset, int64_t count) const {
  RecordBatch out;
  out.schema = schema;
  for (const Column& c : columns) out.columns.push_back(c.Slice(offset, count));
  return out;
}

Result<RecordBatch> RecordBatch::Project(const std::vector<std::string>& names) const {
  RecordBatch out;
  for (const std::string& n : names) {
    const int i = schema.IndexOf(n);
    if (i < 0) return Status::InvalidArgument("no column named '" + n + "'");
    out.schema.fields.push_back(schema.fields[i]);
    out.columns.push_back(columns[i]);
  }
  return out;
}

Result<RecordBatch> ConcatenateBatches(const Schema& schema,
                                       const std::vector<RecordBatch>& parts) {
  RecordBatch out(schema);
  for (const RecordBatch& p : parts) {
    if (!(p.schema == schema)) {
      return Status::InvalidArgument("cannot concatenate batches of different schemas: " +
                                     p.schema.ToString() + " vs " + schema.ToString());
    }
    for (size_t i = 0; i < out.columns.size(); ++i) {
      out.columns[i].AppendFrom(p.columns[i], 0, p.num_rows());
    }
  }
  return out;
}

}  // namespace loam
