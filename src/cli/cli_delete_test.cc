// `loam delete` end to end: rows removed by filter or by a keys file as one
// run, and every refusal shown with its message and the table unchanged.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_test_util.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

class CliDeleteTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    File("rows.csv", "id,name,amount\n1,ann,5.00\n2,bob,7.50\n3,cy,1.25\n4,ann,9.00\n");
    Ok({"load", "events", "rows.csv"});
  }
  // The ids left, as "1 2 3".
  std::string Ids() {
    std::string ids;
    std::istringstream lines(Ok({"scan", "events", "--json"}).out);
    for (std::string line; std::getline(lines, line);) {
      ids += (ids.empty() ? "" : " ") + std::to_string(json::parse(line).at("id").get<int64_t>());
    }
    return ids;
  }
};

TEST_F(CliDeleteTest, FiltersDeleteTheMatchingRowsInOneRecordedRun) {
  CliResult r = Ok({"delete", "events", "--where", "name = ann", "--where", "amount > 6"});
  EXPECT_NE(r.out.find("deleted 1 rows"), std::string::npos) << r.out;
  EXPECT_EQ(Ids(), "1 2 3");
  const json runs = json::parse(Ok({"runs", "list", "--json"}).out);
  EXPECT_EQ(runs.at(0).at("request").at("mode"), "delete");
  EXPECT_EQ(runs.at(0).at("counters").at("deleted"), 1);
  const std::string log = Ok({"history", "events"}).out;
  EXPECT_NE(log.find(runs.at(0).at("commit").at("commitId").get<std::string>()), std::string::npos)
      << log;
}

TEST_F(CliDeleteTest, AKeysFileDeletesItsRowsOnceUnderAnIdempotencyKey) {
  File("keys.csv", "id\n2\n4\n9\n");
  CliResult first = Ok({"delete", "events", "--keys", "keys.csv", "--idempotency-key", "erase-1"});
  EXPECT_NE(first.out.find("3 keys read"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("deleted 2 rows"), std::string::npos) << first.out;
  CliResult again = Ok({"delete", "events", "--keys", "keys.csv", "--idempotency-key", "erase-1"});
  EXPECT_NE(again.out.find("nothing was done again"), std::string::npos) << again.out;
  EXPECT_EQ(Ids(), "1 3");
  CliResult dry =
      Ok({"delete", "events", "--where", "id >= 1", "--error-policy", "validationOnly"});
  EXPECT_NE(dry.out.find("would delete 2 rows"), std::string::npos) << dry.out;
  EXPECT_EQ(Ids(), "1 3");
}

TEST_F(CliDeleteTest, RefusalsNameTheRuleAndLeaveTheTable) {
  File("bad.csv", "id\n2\nx\ny\n");
  File("many.csv", "id\n1\n2\n3\n");
  File("wrong.csv", "name\nann\n");
  const auto before = TreeExceptRuns(ws());
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"delete", "events"}, 2, "by --where filters or by --keys files"},
      {{"delete", "events", "--where", "id = 1", "--keys", "bad.csv"}, 2, "one of the two"},
      {{"delete", "events", "--where", "size > 2"}, 1, "delete filter 'size > 2'"},
      {{"delete", "events", "--where", "id = x"}, 1, "delete filter 'id = x'"},
      {{"delete", "events", "--keys", "bad.csv"}, 1, "and 1 more invalid key row"},
      {{"delete", "events", "--keys", "wrong.csv"}, 1, "name"},
      {{"delete", "events", "--keys", "many.csv", "--max-keys", "2"}, 6, "keys-per-delete limit"},
      {{"delete", "events", "--where", "id = 1", "--error-policy", "skipRows"},
       2,
       "all or nothing"},
      {{"delete", "events", "--where", "id = 1", "--expect-version", "1"},
       3,
       "expectedTableVersion"},
      {{"delete", "nope", "--where", "id = 1"}, 4, "does not exist"},
  };
  for (const Case& c : cases) {
    CliResult r = Run(c.args);
    EXPECT_EQ(r.code, c.code) << ::testing::PrintToString(c.args) << "\n" << r.all();
    EXPECT_NE(r.all().find(c.message), std::string::npos)
        << ::testing::PrintToString(c.args) << "\n"
        << r.all();
  }
  EXPECT_EQ(TreeExceptRuns(ws()), before);
  EXPECT_EQ(Ids(), "1 2 3 4");
}

}  // namespace
}  // namespace loam::testing
