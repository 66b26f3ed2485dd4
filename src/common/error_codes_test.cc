#include "common/error_codes.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>

namespace loam {
namespace {

struct DocRow {
  int exit_code = -1;
  int http_status = -1;
};

// The rows of docs/errors.md's code table: `name` -> CLI exit, HTTP (the
// first status of the cell; notes may follow it).
std::map<std::string, DocRow> DocumentedCodes() {
  std::ifstream in(std::string(LOAM_TESTDATA_DIR) + "/../docs/errors.md");
  std::stringstream text;
  text << in.rdbuf();
  static const std::regex kRow(R"(^\| `([a-z_]+)` \|[^|]*\|[^|]*\|[^|]*\| (\d+) \| (\d+)[^|]*\|$)");
  std::map<std::string, DocRow> rows;
  for (std::string line; std::getline(text, line);) {
    std::smatch m;
    if (std::regex_match(line, m, kRow)) rows[m[1]] = {std::stoi(m[2]), std::stoi(m[3])};
  }
  return rows;
}

TEST(ErrorCodesTest, EveryCodeHasOneRowInDocsErrorsWithItsExitCodeAndHttpStatus) {
  std::map<std::string, DocRow> rows = DocumentedCodes();
  ASSERT_GT(rows.size(), 20u) << "docs/errors.md's table did not parse";
  for (int c = 1; c <= static_cast<int>(kLastErrorCode); ++c) {
    const ErrorCodeInfo& info = InfoOf(static_cast<ErrorCode>(c));
    const std::string name(info.name);
    ASSERT_TRUE(rows.count(name)) << name << " has no row in docs/errors.md";
    EXPECT_EQ(rows[name].exit_code, info.exit_code) << name;
    EXPECT_EQ(rows[name].http_status, info.http_status) << name;
    EXPECT_EQ(ErrorCodeFromName(name), info.code) << name;
    rows.erase(name);
  }
  for (const auto& [name, row] : rows) ADD_FAILURE() << name << " is documented but no ErrorCode";
}

TEST(ErrorCodesTest, AValueOutsideTheEnumReadsAsInternal) {
  EXPECT_EQ(InfoOf(static_cast<ErrorCode>(1000)).code, ErrorCode::kInternal);
  EXPECT_EQ(ErrorCodeName(static_cast<ErrorCode>(-1)), "internal");
}

}  // namespace
}  // namespace loam
