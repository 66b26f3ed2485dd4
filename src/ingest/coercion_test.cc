#include "ingest/coercion.h"

#include <gtest/gtest.h>

#include "common/status_macros.h"

namespace loam::ingest {
namespace {

// The value `text` in `form` becomes under `kind` for a column of `type`, or the error.
Result<Value> Coerce(DataType type, std::optional<CoercionKind> kind, std::string_view text,
                     ValueForm form = ValueForm::kCsvField) {
  Field f{"c", type, true};
  Column col(type);
  Coercion c{"c", "c", kind.value_or(CoercionKind::kIntToFloat)};
  RETURN_NOT_OK(AppendValue(f, kind ? &c : nullptr, text, form, &col));
  if (col.length() != 1) return Status::Internal("no value appended");
  return col.GetValue(0);
}

void ExpectError(const Result<Value>& r, std::string_view message) {
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  EXPECT_NE(r.status().message().find(message), std::string::npos) << r.status();
}

TEST(Coercion, IntToFloatOnlyWhenExact) {
  ExpectError(Coerce(DataType::Float64(), std::nullopt, "3"), "declare the intToFloat coercion");
  EXPECT_EQ(std::get<double>(Coerce(DataType::Float64(), CoercionKind::kIntToFloat, "3").value()),
            3.0);
  EXPECT_EQ(std::get<double>(
                Coerce(DataType::Float64(), CoercionKind::kIntToFloat, "9007199254740992").value()),
            9007199254740992.0);
  ExpectError(Coerce(DataType::Float64(), CoercionKind::kIntToFloat, "9007199254740993"),
              "not exactly representable");
  EXPECT_EQ(std::get<double>(Coerce(DataType::Float64(), CoercionKind::kIntToFloat, "2.5").value()),
            2.5);
  ExpectError(
      Coerce(DataType::Float64(), CoercionKind::kIntToFloat, "\"3\"", ValueForm::kJsonString),
      "a number");
}

TEST(Coercion, Iso8601NeedsAnExplicitOffsetAndLosesNothing) {
  const int64_t utc = 1'764'475'800'000'000;  // 2025-11-30T04:10:00Z
  EXPECT_EQ(std::get<int64_t>(Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp,
                                     "2025-11-30T05:10:00+01:00")
                                  .value()),
            utc);
  EXPECT_EQ(std::get<int64_t>(Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp,
                                     "2025-11-29T23:40:00-04:30")
                                  .value()),
            utc);
  EXPECT_EQ(std::get<int64_t>(Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp,
                                     "2025-11-30T04:10:00.123456000Z")
                                  .value()),
            utc + 123456);
  ExpectError(Coerce(DataType::Timestamp(), std::nullopt, "2025-11-30T05:10:00+01:00"),
              "declare the iso8601ToTimestamp coercion");
  ExpectError(
      Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp, "2025-11-30T05:10:00"),
      "no UTC offset, so it is ambiguous");
  ExpectError(Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp,
                     "2025-11-30T05:10:00.1234567Z"),
              "sub-microsecond digits would be lost");
  ExpectError(
      Coerce(DataType::Timestamp(), CoercionKind::kIso8601ToTimestamp, "2025-11-30 05:10:00Z"),
      "RFC 3339");
}

TEST(Coercion, StringToIntAndDecimalAreExact) {
  EXPECT_EQ(
      std::get<int64_t>(Coerce(DataType::Int64(), CoercionKind::kStringToInt, " +007 ").value()),
      7);
  EXPECT_EQ(std::get<int64_t>(
                Coerce(DataType::Int32(), CoercionKind::kStringToInt, "-12", ValueForm::kJsonString)
                    .value()),
            -12);
  ExpectError(Coerce(DataType::Int32(), CoercionKind::kStringToInt, "3000000000"), "out of range");
  ExpectError(Coerce(DataType::Int64(), CoercionKind::kStringToInt, "1.0"), "stringToInt");
  ExpectError(Coerce(DataType::Int64(), std::nullopt, "7", ValueForm::kJsonString),
              "declare the stringToInt coercion");
  const Int128 cents =
      std::get<Int128>(Coerce(DataType::Decimal(10, 2), CoercionKind::kStringToDecimal,
                              "+0012.5000", ValueForm::kJsonString)
                           .value());
  EXPECT_EQ(cents, Int128::FromInt64(1250));
  ExpectError(Coerce(DataType::Decimal(10, 2), CoercionKind::kStringToDecimal, "1.005"),
              "does not fit");
  ExpectError(Coerce(DataType::Decimal(10, 2), std::nullopt, "1.5", ValueForm::kJsonString),
              "declare the stringToDecimal coercion");
}

TEST(Coercion, EpochMillis) {
  EXPECT_EQ(std::get<int64_t>(Coerce(DataType::Timestamp(), CoercionKind::kEpochMillisToTimestamp,
                                     "1500", ValueForm::kJsonNumber)
                                  .value()),
            1'500'000);
  ExpectError(Coerce(DataType::Timestamp(), CoercionKind::kEpochMillisToTimestamp, "1.5"),
              "integer");
  ExpectError(
      Coerce(DataType::Timestamp(), CoercionKind::kEpochMillisToTimestamp, "99999999999999999"),
      "out of range");
}

TEST(Coercion, JsonRepresentations) {
  EXPECT_EQ(
      std::get<bool>(Coerce(DataType::Bool(), std::nullopt, "true", ValueForm::kJsonBool).value()),
      true);
  ExpectError(Coerce(DataType::Bool(), std::nullopt, "true", ValueForm::kJsonString),
              "expected true or false, got a JSON string");
  ExpectError(Coerce(DataType::String(), std::nullopt, "1", ValueForm::kJsonNumber),
              "expected a JSON string, got a JSON number");
  EXPECT_EQ(
      std::get<std::string>(
          Coerce(DataType::Json(), std::nullopt, "[1,{\"a\":2}]", ValueForm::kJsonRaw).value()),
      "[1,{\"a\":2}]");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(
      Coerce(DataType::Int64(), std::nullopt, "null", ValueForm::kJsonNull).value()));
}

TEST(SchemaPolicy, ParsesFlagsAndJsonAndChecksTheTable) {
  SchemaPolicy p =
      SchemaPolicy::FromJson(
          R"({"mode":"strict","coercions":[{"sourceColumn":"at","targetColumn":"at","kind":"iso8601ToTimestamp"}]})")
          .value();
  ASSERT_EQ(p.coercions.size(), 1u);
  ASSERT_TRUE(p.AddFlag("n:intToFloat").ok());
  EXPECT_EQ(SchemaPolicy::FromJson(p.ToJson()).value().coercions, p.coercions);
  Schema s{{{"at", DataType::Timestamp()}, {"n", DataType::Float64()}, {"i", DataType::Int64()}}};
  EXPECT_TRUE(p.CheckAgainst(s).ok());
  EXPECT_NE(p.For("at"), nullptr);
  EXPECT_EQ(p.For("i"), nullptr);

  auto fails = [&](std::string_view json, std::string_view message) {
    Result<SchemaPolicy> r = SchemaPolicy::FromJson(json);
    Status st = r.ok() ? r->CheckAgainst(s) : r.status();
    EXPECT_TRUE(st.IsInvalidArgument()) << json;
    EXPECT_NE(st.message().find(message), std::string::npos) << st;
  };
  fails(R"({"mode":"lenient"})", "\"mode\" must be \"strict\"");
  fails(R"({"mode":"strict","coercions":[{"sourceColumn":"i","targetColumn":"i","kind":"guess"}]})",
        "unknown coercion kind 'guess'");
  fails(
      R"({"mode":"strict","coercions":[{"sourceColumn":"i","targetColumn":"i","kind":"intToFloat"}]})",
      "intToFloat applies to float64 columns; 'i' is int64");
  fails(
      R"({"mode":"strict","coercions":[{"sourceColumn":"x","targetColumn":"zz","kind":"stringToInt"}]})",
      "not in the table");
  fails(
      R"({"mode":"strict","coercions":[{"sourceColumn":"zz","targetColumn":"zz","kind":"stringToInt"}]})",
      "not in the table");
  SchemaPolicy bad;
  EXPECT_NE(bad.AddFlag("nocolon").message().find("COLUMN:KIND"), std::string::npos);
}

// Input columns load table columns of other names: a "columnMap" entry, or
// a coercion whose source differs from its target.
TEST(SchemaPolicy, MapsInputColumnsToTableColumnsOfOtherNames) {
  const Schema s{{{"id", DataType::Int64()}, {"amount", DataType::Decimal(10, 2)}}};
  SchemaPolicy p =
      SchemaPolicy::FromJson(
          R"({"mode":"strict","columnMap":[{"sourceColumn":"Order ID","targetColumn":"id"}],)"
          R"("coercions":[{"sourceColumn":"Amount","targetColumn":"amount","kind":"stringToDecimal"}]})")
          .value();
  ASSERT_TRUE(p.CheckAgainst(s).ok()) << p.CheckAgainst(s);
  EXPECT_EQ(p.TargetOf("Order ID"), "id");
  EXPECT_EQ(p.TargetOf("Amount"), "amount");
  EXPECT_EQ(p.TargetOf("id"), "id");  // an unmapped name is its own
  EXPECT_NE(p.For("amount"), nullptr);
  const SchemaPolicy back = SchemaPolicy::FromJson(p.ToJson()).value();
  EXPECT_EQ(back.renames, p.renames);
  EXPECT_EQ(back.coercions, p.coercions);
  // Written only when present: a policy without it keeps its text.
  EXPECT_EQ(SchemaPolicy{}.ToJson(), R"({"coercions":[],"mode":"strict"})");

  const auto refused = [&s](std::string_view map) {
    Result<SchemaPolicy> r =
        SchemaPolicy::FromJson(R"({"mode":"strict","columnMap":)" + std::string(map) + "}");
    return r.ok() ? r->CheckAgainst(s).message() : r.status().message();
  };
  EXPECT_EQ(refused(R"([{"sourceColumn":"a","targetColumn":"nope"}])"),
            "column map: 'a' maps to 'nope', which is not in the table");
  EXPECT_EQ(
      refused(
          R"([{"sourceColumn":"a","targetColumn":"id"},{"sourceColumn":"a","targetColumn":"amount"}])"),
      "column map: input column 'a' is mapped twice; map it once");
  EXPECT_EQ(
      refused(
          R"([{"sourceColumn":"a","targetColumn":"id"},{"sourceColumn":"b","targetColumn":"id"}])"),
      "column map: 'a' and 'b' both map to column 'id'; map one of them");
  EXPECT_NE(refused(R"([{"sourceColumn":"a"}])").find("each column mapping needs exactly"),
            std::string::npos);
  EXPECT_NE(refused(R"({"a":"id"})").find("\"columnMap\" must be an array"), std::string::npos);
  SchemaPolicy flags;
  ASSERT_TRUE(flags.AddRenameFlag("Order ID=id").ok());
  EXPECT_EQ(flags.renames, (std::vector<ColumnRename>{{"Order ID", "id"}}));
  EXPECT_NE(flags.AddRenameFlag("=id").message().find("--map takes SOURCE=TARGET"),
            std::string::npos);
}

}  // namespace
}  // namespace loam::ingest
