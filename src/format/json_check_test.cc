#include "format/json_check.h"

#include <gtest/gtest.h>

#include <string>

namespace loam {
namespace {

TEST(JsonCheckTest, AcceptsEveryValidShape) {
  for (std::string doc :
       {"{}", "[]", "0", "-0", "1.5e+10", "-12.25E-3", "\"\"", "true", "false", "null",
        " \t\r\n{ \"a\" : [1, {\"b\": null}, \"\\u00e9\\n\"] } \n", "\"caf\xc3\xa9\"", "[[[[]]]]",
        "{\"\":{\"\":{}}}", "\"\\ud83d\\ude00\""}) {
    EXPECT_TRUE(CheckJsonDocument(doc, 64).ok()) << doc << ": " << CheckJsonDocument(doc, 64).what;
  }
}

TEST(JsonCheckTest, RefusesEveryInvalidDocument) {
  struct Bad {
    std::string doc, what;
  };
  const Bad bad[] = {
      {"", "a value is missing"},
      {"   ", "a value is missing"},
      {"{", "an object key must be a string"},
      {"[1,]", "unexpected character"},
      {"{\"a\":1,}", "an object key must be a string"},
      {"{a:1}", "an object key must be a string"},
      {"{\"a\" 1}", "':' expected"},
      {"[1 2]", "',' or ']' expected"},
      {"01", "content follows"},
      {"1.", "malformed number"},
      {".5", "unexpected character"},
      {"+1", "unexpected character"},
      {"-", "malformed number"},
      {"1e", "malformed number"},
      {"tru", "unexpected character"},
      {"nul", "unexpected character"},
      {"NaN", "unexpected character"},
      {"\"abc", "unterminated string"},
      {"\"a\tb\"", "control byte"},
      {std::string("\"a") + '\0' + "b\"", "control byte"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12g4\"", "bad \\u escape"},
      {"\"\\u12\"", "bad \\u escape"},
      {"{} {}", "content follows"},
      {"1 x", "content follows"},
      {"[1]]", "content follows"},
      {"\"\xff\"", "not valid UTF-8"},
      {"\"\xc0\xaf\"", "not valid UTF-8"},
      {"'a'", "unexpected character"},
      {"[1,2", "',' or ']' expected"},
      {"\"\\ud800\"", "without its low surrogate"},
      {"\"\\ud800\\u0041\"", "without its low surrogate"},
      {"\"\\udc00\"", "lone low surrogate"},
  };
  for (const Bad& b : bad) {
    JsonCheck c = CheckJsonDocument(b.doc, 64);
    EXPECT_EQ(c.outcome, JsonCheck::Outcome::kMalformed) << b.doc;
    EXPECT_NE(c.what.find(b.what), std::string::npos) << b.doc << ": " << c.what;
  }
}

TEST(JsonCheckTest, DepthIsLimitedWithoutRecursion) {
  EXPECT_TRUE(CheckJsonDocument("[[1]]", 2).ok());
  JsonCheck deep = CheckJsonDocument("[[[1]]]", 2);
  EXPECT_EQ(deep.outcome, JsonCheck::Outcome::kTooDeep);
  EXPECT_EQ(deep.offset, 2u);  // the first container beyond the limit
  // A million levels neither overflow the stack nor pass.
  const std::string million = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_TRUE(CheckJsonDocument(million, kJsonDepthCeiling * 16).ok());
  EXPECT_EQ(CheckJsonDocument(million, 64).outcome, JsonCheck::Outcome::kTooDeep);
  EXPECT_EQ(CheckJsonDocument(std::string(1'000'000, '['), 1 << 21).outcome,
            JsonCheck::Outcome::kMalformed);
}

}  // namespace
}  // namespace loam
