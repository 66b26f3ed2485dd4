// Simple column predicates used for page pruning and row filtering.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "loam/batch.h"

namespace loam {

enum class CompareOp { kEq, kLt, kLe, kGt, kGe, kIn, kIsNull };

// `column OP value` (kIn: any of `values`; kIsNull: no value). Null column
// values never match anything but kIsNull. NaN never compares true.
struct Predicate {
  std::string column;
  CompareOp op = CompareOp::kEq;
  std::vector<Value> values;

  static Predicate Eq(std::string c, Value v) {
    return {std::move(c), CompareOp::kEq, {std::move(v)}};
  }
  static Predicate Lt(std::string c, Value v) {
    return {std::move(c), CompareOp::kLt, {std::move(v)}};
  }
  static Predicate Le(std::string c, Value v) {
    return {std::move(c), CompareOp::kLe, {std::move(v)}};
  }
  static Predicate Gt(std::string c, Value v) {
    return {std::move(c), CompareOp::kGt, {std::move(v)}};
  }
  static Predicate Ge(std::string c, Value v) {
    return {std::move(c), CompareOp::kGe, {std::move(v)}};
  }
  static Predicate In(std::string c, std::vector<Value> v) {
    return {std::move(c), CompareOp::kIn, std::move(v)};
  }
  static Predicate IsNull(std::string c) { return {std::move(c), CompareOp::kIsNull, {}}; }

  // The values fit the column type and the operator's arity.
  Status Validate(const Schema& schema) const;
};

// Three-way comparison of two non-null values of the same kind: <0, 0, >0;
// nullopt when incomparable (different kinds, or NaN involved).
std::optional<int> CompareValues(const Value& a, const Value& b);

// Whether `v` (possibly null) satisfies `p`.
bool ValueMatches(const Predicate& p, const Value& v);

// Whether some value in [min, max] (either may be null = unknown), in a page
// with `null_count` nulls out of `rows`, could satisfy `p`. False only when
// the statistics prove no row matches.
bool RangeMayMatch(const Predicate& p, const Value& min, const Value& max, int64_t null_count,
                   int64_t rows);

}  // namespace loam
