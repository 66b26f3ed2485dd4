#include "loam/predicate.h"

#include <cmath>

namespace loam {

Status Predicate::Validate(const Schema& schema) const {
  const int idx = schema.IndexOf(column);
  if (idx < 0) return Status::InvalidArgument("predicate names unknown column '" + column + "'");
  const size_t want = op == CompareOp::kIsNull ? 0 : 1;
  if (op == CompareOp::kIn ? values.empty() : values.size() != want) {
    return Status::InvalidArgument("predicate on '" + column + "' has the wrong number of values");
  }
  Column probe(schema.fields[idx].type);
  for (const Value& v : values) {
    if (std::holds_alternative<std::monostate>(v)) {
      return Status::InvalidArgument("predicate on '" + column +
                                     "' compares with null; use IS NULL");
    }
    Status s = probe.AppendValue(v);
    if (!s.ok()) return std::move(s).WithContext("predicate on '" + column + "'");
  }
  return Status::OK();
}

std::optional<int> CompareValues(const Value& a, const Value& b) {
  if (a.index() != b.index() || std::holds_alternative<std::monostate>(a)) return std::nullopt;
  auto three_way = [](const auto& x, const auto& y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (a.index()) {
    case 1: return three_way(std::get<bool>(a), std::get<bool>(b));
    case 2: return three_way(std::get<int64_t>(a), std::get<int64_t>(b));
    case 3: {
      const double x = std::get<double>(a), y = std::get<double>(b);
      if (std::isnan(x) || std::isnan(y)) return std::nullopt;
      return three_way(x, y);
    }
    case 4: {
      const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case 5: return three_way(std::get<Int128>(a), std::get<Int128>(b));
  }
  return std::nullopt;
}

bool ValueMatches(const Predicate& p, const Value& v) {
  const bool is_null = std::holds_alternative<std::monostate>(v);
  if (p.op == CompareOp::kIsNull) return is_null;
  if (is_null) return false;
  if (p.op == CompareOp::kIn) {
    for (const Value& x : p.values) {
      if (CompareValues(v, x) == 0) return true;
    }
    return false;
  }
  const std::optional<int> c = CompareValues(v, p.values[0]);
  if (!c) return false;
  switch (p.op) {
    case CompareOp::kEq: return *c == 0;
    case CompareOp::kLt: return *c < 0;
    case CompareOp::kLe: return *c <= 0;
    case CompareOp::kGt: return *c > 0;
    case CompareOp::kGe: return *c >= 0;
    default: return false;
  }
}

bool RangeMayMatch(const Predicate& p, const Value& min, const Value& max, int64_t null_count,
                   int64_t rows) {
  if (p.op == CompareOp::kIsNull) return null_count > 0;
  if (null_count >= rows) return false;  // only nulls
  if (std::holds_alternative<std::monostate>(min) || std::holds_alternative<std::monostate>(max)) {
    return true;  // no statistics
  }
  auto in_range = [&](const Value& x) {
    const auto lo = CompareValues(x, min), hi = CompareValues(x, max);
    return !lo || !hi || (*lo >= 0 && *hi <= 0);
  };
  const Value& x = p.values.empty() ? min : p.values[0];
  switch (p.op) {
    case CompareOp::kEq: return in_range(x);
    case CompareOp::kIn:
      for (const Value& v : p.values) {
        if (in_range(v)) return true;
      }
      return false;
    case CompareOp::kLt: return CompareValues(min, x).value_or(-1) < 0;
    case CompareOp::kLe: return CompareValues(min, x).value_or(-1) <= 0;
    case CompareOp::kGt: return CompareValues(max, x).value_or(1) > 0;
    case CompareOp::kGe: return CompareValues(max, x).value_or(1) >= 0;
    case CompareOp::kIsNull: break;
  }
  return true;
}

}  // namespace loam
