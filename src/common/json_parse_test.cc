#include "common/json_parse.h"

#include <gtest/gtest.h>

#include <limits>

namespace loam {
namespace {

TEST(JsonParseTest, AKeyNamedTwiceInAnyObjectIsRefusedAndNamed) {
  for (const char* text : {R"({"sub":"alice","sub":"bob"})", R"({"a":{"x":1,"y":2,"x":3}})",
                           R"([1,{"k":[{"z":0,"z":0}]}])", R"({"a":1,"b":{},"a":{"c":1}})"}) {
    std::string problem;
    EXPECT_TRUE(ParseJson(text, &problem).is_discarded()) << text;
    EXPECT_NE(problem.find("appears twice in one object"), std::string::npos) << problem;
  }
  std::string problem;
  ParseJson(R"({"a":{"x":1,"y":2,"y":3},"x":0})", &problem);
  EXPECT_EQ(problem, R"(key "y" appears twice in one object)");
  Result<nlohmann::json> body = ParseJsonObject(R"({"uploads":[],"uploads":["u"]})", "run");
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().message(), R"(run: key "uploads" appears twice in one object)");
}

TEST(JsonParseTest, TheSameKeyInSiblingOrNestedObjectsIsFine) {
  const nlohmann::json j = ParseJson(R"({"a":{"a":1},"b":[{"a":2},{"a":3}],"c":{"a":{"a":4}}})");
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["b"][1]["a"], 3);
  EXPECT_EQ(j["c"]["a"]["a"], 4);
  EXPECT_EQ(ParseJson("[1,2,3]").size(), 3u);
  EXPECT_EQ(ParseJson("\"s\""), "s");
  EXPECT_EQ(ParseJson("{}").size(), 0u);
}

TEST(JsonParseTest, TextThatIsNotJsonIsNamedSo) {
  std::string problem;
  EXPECT_TRUE(ParseJson(R"({"a":)", &problem).is_discarded());
  EXPECT_EQ(problem, "not valid JSON");
  Result<nlohmann::json> array = ParseJsonObject("[]", "table");
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(), "table: not a JSON object");
}

TEST(JsonParseTest, IntegerAtTakesOnlyIntegersThatFitInt64) {
  const nlohmann::json j = ParseJson(
      R"({"a":-7,"b":9223372036854775807,"c":9223372036854775808,"d":1.0,"e":4.6e25,"f":"7"})");
  EXPECT_EQ(IntegerAt(j, "a"), -7);
  EXPECT_EQ(IntegerAt(j, "b"), std::numeric_limits<int64_t>::max());
  for (const char* key : {"c", "d", "e", "f", "missing"}) {
    EXPECT_EQ(IntegerAt(j, key), std::nullopt) << key;
  }
}

TEST(JsonParseTest, StringReadersNeverThrowOnAFieldOfTheWrongType) {
  const nlohmann::json j = ParseJson(R"({"s":"x","n":7,"o":{},"t":true})");
  EXPECT_EQ(OptionalStringAt(j, "s"), "x");
  EXPECT_EQ(StringAt(j, "s", "d"), "x");
  for (const char* key : {"n", "o", "t", "missing"}) {
    EXPECT_EQ(OptionalStringAt(j, key), std::nullopt) << key;
    EXPECT_EQ(StringAt(j, key, "d"), "d") << key;
  }
  EXPECT_TRUE(BoolAt(j, "t"));
  EXPECT_FALSE(BoolAt(j, "s"));
}

}  // namespace
}  // namespace loam
