#include "loam/predicate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace loam {
namespace {

TEST(PredicateTest, ValueMatchesEachOperator) {
  const Value five = int64_t{5};
  EXPECT_TRUE(ValueMatches(Predicate::Eq("c", int64_t{5}), five));
  EXPECT_FALSE(ValueMatches(Predicate::Eq("c", int64_t{4}), five));
  EXPECT_TRUE(ValueMatches(Predicate::Lt("c", int64_t{6}), five));
  EXPECT_FALSE(ValueMatches(Predicate::Lt("c", int64_t{5}), five));
  EXPECT_TRUE(ValueMatches(Predicate::Le("c", int64_t{5}), five));
  EXPECT_TRUE(ValueMatches(Predicate::Gt("c", int64_t{4}), five));
  EXPECT_TRUE(ValueMatches(Predicate::Ge("c", int64_t{5}), five));
  EXPECT_TRUE(ValueMatches(Predicate::In("c", {int64_t{1}, int64_t{5}}), five));
  EXPECT_FALSE(ValueMatches(Predicate::In("c", {int64_t{1}}), five));
  EXPECT_FALSE(ValueMatches(Predicate::IsNull("c"), five));
  EXPECT_TRUE(ValueMatches(Predicate::IsNull("c"), std::monostate{}));
  EXPECT_FALSE(ValueMatches(Predicate::Eq("c", int64_t{5}), std::monostate{}));
  EXPECT_FALSE(ValueMatches(Predicate::Ge("c", 0.0), Value(std::nan(""))));
  EXPECT_TRUE(ValueMatches(Predicate::Lt("s", std::string("b")), Value(std::string("abc"))));
}

TEST(PredicateTest, RangeMayMatchPrunesOnlyWhenProven) {
  const Value lo = int64_t{10}, hi = int64_t{20};
  EXPECT_TRUE(RangeMayMatch(Predicate::Eq("c", int64_t{15}), lo, hi, 0, 100));
  EXPECT_FALSE(RangeMayMatch(Predicate::Eq("c", int64_t{21}), lo, hi, 0, 100));
  EXPECT_FALSE(RangeMayMatch(Predicate::Lt("c", int64_t{10}), lo, hi, 0, 100));
  EXPECT_TRUE(RangeMayMatch(Predicate::Le("c", int64_t{10}), lo, hi, 0, 100));
  EXPECT_FALSE(RangeMayMatch(Predicate::Gt("c", int64_t{20}), lo, hi, 0, 100));
  EXPECT_TRUE(RangeMayMatch(Predicate::Ge("c", int64_t{20}), lo, hi, 0, 100));
  EXPECT_FALSE(RangeMayMatch(Predicate::In("c", {int64_t{1}, int64_t{30}}), lo, hi, 0, 100));
  EXPECT_TRUE(RangeMayMatch(Predicate::In("c", {int64_t{1}, int64_t{12}}), lo, hi, 0, 100));
  EXPECT_FALSE(RangeMayMatch(Predicate::IsNull("c"), lo, hi, 0, 100));
  EXPECT_TRUE(RangeMayMatch(Predicate::IsNull("c"), lo, hi, 1, 100));
  // All-null page: only IS NULL can match.
  EXPECT_FALSE(RangeMayMatch(Predicate::Eq("c", int64_t{1}), std::monostate{}, std::monostate{}, 5, 5));
  // Unknown statistics never prune.
  EXPECT_TRUE(RangeMayMatch(Predicate::Eq("c", int64_t{1}), std::monostate{}, std::monostate{}, 0, 5));
}

TEST(PredicateTest, ValidateChecksColumnAndValueKinds) {
  Schema s{{{"i", DataType::Int32()}, {"t", DataType::String()}}};
  EXPECT_TRUE(Predicate::Eq("i", int64_t{1}).Validate(s).ok());
  EXPECT_TRUE(Predicate::Eq("x", int64_t{1}).Validate(s).IsInvalidArgument());
  EXPECT_TRUE(Predicate::Eq("i", std::string("1")).Validate(s).IsInvalidArgument());
  EXPECT_TRUE(Predicate::Eq("t", std::monostate{}).Validate(s).IsInvalidArgument());
  EXPECT_TRUE(Predicate::In("t", {}).Validate(s).IsInvalidArgument());
}

}  // namespace
}  // namespace loam
