#include "sql/sql_value.h"

#include <cmath>
#include <optional>

#include "loam/scan.h"

namespace loam::sql {

const char* SqlTypeOf(const DataType& type) {
  switch (type.id) {
    case TypeId::kBool:
    case TypeId::kInt32:
    case TypeId::kInt64:
      return "INTEGER";
    case TypeId::kFloat64:
      return "REAL";
    case TypeId::kBinary:
      return "BLOB";
    default:
      return "TEXT";
  }
}

void ResultValue(sqlite3_context* ctx, const Column& c, int64_t row) {
  if (c.IsNull(row)) {
    sqlite3_result_null(ctx);
    return;
  }
  switch (c.type().id) {
    case TypeId::kBool:
      sqlite3_result_int64(ctx, c.GetBool(row) ? 1 : 0);
      return;
    case TypeId::kInt32:
      sqlite3_result_int64(ctx, c.GetInt32(row));
      return;
    case TypeId::kInt64:
      sqlite3_result_int64(ctx, c.GetInt64(row));
      return;
    case TypeId::kFloat64:
      sqlite3_result_double(ctx, c.GetFloat64(row));
      return;
    case TypeId::kString:
    case TypeId::kJson: {
      const std::string_view v = c.GetBytes(row);
      sqlite3_result_text64(ctx, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      return;
    }
    case TypeId::kBinary: {
      const std::string_view v = c.GetBytes(row);
      sqlite3_result_blob64(ctx, v.data(), v.size(), SQLITE_TRANSIENT);
      return;
    }
    default: {                        // date, timestamp, decimal: canonical text
      thread_local std::string text;  // SQLite copies it (SQLITE_TRANSIENT)
      text.clear();
      AppendCanonicalText(c, row, &text);
      sqlite3_result_text64(ctx, text.data(), text.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
      return;
    }
  }
}

std::string TimestampText(int64_t micros) {
  Column c(DataType::Timestamp());
  c.AppendInt64(micros);
  std::string out;
  AppendCanonicalText(c, 0, &out);
  return out;
}

bool IsDateLike(const DataType& type) {
  return type.id == TypeId::kDate || type.id == TypeId::kTimestamp;
}

int64_t DayStart(const DataType& type, int64_t day) {
  return type.id == TypeId::kTimestamp ? day * kMicrosPerDay : day;
}

namespace {

std::string_view TextOf(sqlite3_value* v) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return std::string_view(p == nullptr ? "" : p, static_cast<size_t>(sqlite3_value_bytes(v)));
}

// The Loam value an SQL value denotes in a column of `field`'s type when
// SQLite compares the two the way Loam does (same order, same equality).
std::optional<Value> ExactValue(const Field& field, sqlite3_value* v) {
  const int kind = sqlite3_value_type(v);
  switch (field.type.id) {
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kBool: {
      int64_t i;
      if (kind == SQLITE_INTEGER) {
        i = sqlite3_value_int64(v);
      } else if (kind == SQLITE_FLOAT) {
        const double d = sqlite3_value_double(v);
        if (!(std::abs(d) < 9.0e15) || std::trunc(d) != d) return std::nullopt;
        i = static_cast<int64_t>(d);
      } else {
        return std::nullopt;
      }
      if (field.type.id == TypeId::kBool) {
        if (i != 0 && i != 1) return std::nullopt;
        return Value(i == 1);
      }
      if (field.type.id == TypeId::kInt32 && (i < INT32_MIN || i > INT32_MAX)) return std::nullopt;
      return Value(i);
    }
    case TypeId::kFloat64: {
      if (kind == SQLITE_FLOAT) return Value(sqlite3_value_double(v));
      if (kind != SQLITE_INTEGER) return std::nullopt;
      const int64_t i = sqlite3_value_int64(v);
      if (i > (int64_t{1} << 53) || i < -(int64_t{1} << 53)) return std::nullopt;
      return Value(static_cast<double>(i));
    }
    case TypeId::kString:
      if (kind != SQLITE_TEXT) return std::nullopt;
      return Value(std::string(TextOf(v)));
    default:
      return std::nullopt;
  }
}

// A text that names a value of a decimal column by its canonical text.
std::optional<Value> CanonicalValue(const Field& field, sqlite3_value* v) {
  if (sqlite3_value_type(v) != SQLITE_TEXT) return std::nullopt;
  const std::string text(TextOf(v));
  Result<Value> value = ParseValue(field, text);
  if (!value.ok()) return std::nullopt;
  RecordBatch one(Schema{{field}});
  if (!one.columns[0].AppendValue(*value).ok()) return std::nullopt;
  std::string back;
  AppendCanonicalText(one.columns[0], 0, &back);
  if (back != text) return std::nullopt;
  return *value;
}

// The day a date or timestamp text starts with (its first ten bytes), if
// they are a date of years 0000 to 9999.
std::optional<int64_t> LeadingDay(sqlite3_value* v) {
  if (sqlite3_value_type(v) != SQLITE_TEXT) return std::nullopt;
  const std::string_view text = TextOf(v);
  if (text.size() < 10) return std::nullopt;
  Result<Value> day =
      ParseValue(Field{"d", DataType::Date(), true}, std::string(text.substr(0, 10)));
  if (!day.ok() || !std::holds_alternative<int64_t>(*day)) return std::nullopt;
  const int64_t d = std::get<int64_t>(*day);
  if (d < kFirstDay || d >= kEndDay) return std::nullopt;
  return d;
}

// Text order is value order on whole days: a text comparison with `v`
// bounds the rows' day by v's leading day (widened, never exact).
Pushdown DatePushdown(const Field& field, SqlOp op, sqlite3_value* v) {
  const std::optional<int64_t> day = LeadingDay(v);
  if (!day) return {};
  const DataType& t = field.type;
  const Value from(DayStart(t, *day)), next(DayStart(t, *day + 1));
  switch (op) {
    case SqlOp::kEq:
      return {{Predicate::Ge(field.name, from), Predicate::Lt(field.name, next)}, false};
    case SqlOp::kLt:
    case SqlOp::kLe:
      return {{Predicate::Lt(field.name, next)}, false};
    case SqlOp::kGt:
    case SqlOp::kGe:
      return {{Predicate::Ge(field.name, from)}, false};
    default:
      return {};
  }
}

Predicate Compare(const std::string& column, SqlOp op, Value v) {
  switch (op) {
    case SqlOp::kLt:
      return Predicate::Lt(column, std::move(v));
    case SqlOp::kLe:
      return Predicate::Le(column, std::move(v));
    case SqlOp::kGt:
      return Predicate::Gt(column, std::move(v));
    case SqlOp::kGe:
      return Predicate::Ge(column, std::move(v));
    default:
      return Predicate::Eq(column, std::move(v));
  }
}

}  // namespace

Pushdown PushdownOf(const Field& field, SqlOp op, const std::vector<sqlite3_value*>& values) {
  const DataType& t = field.type;
  if (op == SqlOp::kIsNull) {
    // SQLite reads a float NaN as NULL; Loam holds it as a value.
    if (t.id == TypeId::kFloat64) return {};
    return {{Predicate::IsNull(field.name)}, true};
  }
  if (op == SqlOp::kIn) {
    std::vector<Value> list;
    for (sqlite3_value* v : values) {
      std::optional<Value> x = ExactValue(field, v);
      if (!x) return {};
      list.push_back(std::move(*x));
    }
    if (list.empty()) return {};
    return {{Predicate::In(field.name, std::move(list))}, false};
  }
  if (values.size() != 1) return {};
  if (IsDateLike(t)) return DatePushdown(field, op, values[0]);
  if (t.id == TypeId::kDecimal) {
    if (op != SqlOp::kEq) return {};  // text order is not numeric order
    std::optional<Value> x = CanonicalValue(field, values[0]);
    if (!x) return {};
    return {{Predicate::Eq(field.name, std::move(*x))}, true};
  }
  std::optional<Value> x = ExactValue(field, values[0]);
  if (!x) return {};
  // bool columns hold 0 and 1 only; other integers compare fine but are
  // not values of the column.
  return {{Compare(field.name, op, std::move(*x))}, true};
}

}  // namespace loam::sql
