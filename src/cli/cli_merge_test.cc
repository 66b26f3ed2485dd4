// `loam branch merge` end to end: write, audit, publish; and every refusal
// shown with its message, its exit code and main unchanged.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

class CliMergeTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    File("day.csv", "id,name,amount\n1,ann,5.00\n2,bob,7.50\n3,cy,1.25\n4,ann,9.00\n");
    Ok({"branch", "create", "today"});
    Ok({"load", "events", "day.csv", "--branch", "today"});
  }
  std::string Count(const std::string& branch = "main") {
    return Ok({"count", "events", "--branch", branch}).out;
  }
};

TEST_F(CliMergeTest, ALoadCheckedOnABranchIsPublishedOnMainAtOnce) {
  EXPECT_EQ(Count(), "0\n");  // main sees nothing of the day yet
  EXPECT_EQ(Count("today"), "4\n");
  CliResult r = Ok({"branch", "merge", "today", "--expect-rows", "events=1..", "--expect-unique",
                    "events=id", "--id", "day-1"});
  EXPECT_NE(r.out.find("merged branch today"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("events: updated"), std::string::npos) << r.out;
  EXPECT_EQ(Count(), "4\n");
  const json again = json::parse(Ok({"--json", "branch", "merge", "today", "--id", "day-1"}).out);
  EXPECT_TRUE(again.at("alreadyMerged").get<bool>());
  EXPECT_EQ(again.at("tables").at(0).at("rowCount"), 4);
  EXPECT_NE(Ok({"log"}).out.find("merge:day-1"), std::string::npos);
  Ok({"branch", "delete", "today"});
  Ok({"gc"});
  EXPECT_EQ(Count(), "4\n");  // main's copy outlives the branch
  EXPECT_NE(Ok({"branch", "merge", "--help"}).out.find("--expect-unique"), std::string::npos);
}

// A merge undone as one unit; a revert blocked by a later load says so and
// changes nothing; a retry answers the first revert.
TEST_F(CliMergeTest, AMergeIsRevertedAsOneUnit) {
  Ok({"branch", "merge", "today", "--id", "day-1"});
  EXPECT_EQ(Count(), "4\n");
  File("more.csv", "id,name,amount\n9,zed,1.00\n");
  Ok({"load", "events", "more.csv"});
  const auto before = TreeExceptRuns(ws());
  CliResult blocked = Run({"--json", "branch", "revert-merge", "day-1"});
  EXPECT_EQ(blocked.code, 3) << blocked.all();
  EXPECT_NE(blocked.out.find("\"code\":\"revert_blocked\""), std::string::npos) << blocked.all();
  EXPECT_NE(blocked.all().find("table(s) events changed on branch 'main' since merge 'day-1'"),
            std::string::npos)
      << blocked.all();
  CliResult unknown = Run({"branch", "revert-merge", "day-9"});
  EXPECT_EQ(unknown.code, 4) << unknown.all();
  EXPECT_NE(unknown.all().find("no merge 'day-9' was committed on branch 'main'"),
            std::string::npos)
      << unknown.all();
  EXPECT_EQ(TreeExceptRuns(ws()), before);
  EXPECT_EQ(Count(), "5\n");

  Ok({"branch", "create", "fix"});
  File("fix.csv", "id,name,amount\n10,ada,2.00\n");
  Ok({"load", "events", "fix.csv", "--branch", "fix"});
  Ok({"branch", "merge", "fix", "--id", "fix-1"});
  EXPECT_EQ(Count(), "6\n");
  CliResult r = Ok({"branch", "revert-merge", "fix-1"});
  EXPECT_NE(r.out.find("reverted merge fix-1 on main"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("events: restored"), std::string::npos) << r.out;
  EXPECT_EQ(Count(), "5\n");
  const json again = json::parse(Ok({"--json", "branch", "revert-merge", "fix-1"}).out);
  EXPECT_TRUE(again.at("alreadyReverted").get<bool>());
  EXPECT_EQ(again.at("tables").at(0).at("rowCount"), 5);
  EXPECT_NE(Ok({"log"}).out.find("merge-revert:fix-1"), std::string::npos);
  EXPECT_EQ(Count(), "5\n");
}

TEST_F(CliMergeTest, AProtectedMainTakesMergesOnly) {
  Ok({"branch", "protect", "main", "on"});
  EXPECT_EQ(Ok({"branch", "list"}).out, "main (protected)\ntoday\n");
  CliResult refused = Run({"load", "events", "day.csv"});
  EXPECT_EQ(refused.code, 5) << refused.all();  // the run fails: permission_denied
  EXPECT_NE(refused.all().find("is protected: its tables change only through merges"),
            std::string::npos)
      << refused.all();
  CliResult drop = Run({"table", "drop", "events"});
  EXPECT_EQ(drop.code, 5) << drop.all();
  EXPECT_EQ(Count(), "0\n");
  Ok({"branch", "merge", "today"});
  EXPECT_EQ(Count(), "4\n");
  CliResult other = Run({"branch", "protect", "main", "off"}, {{"LOAM_PRINCIPAL", "mallory"}});
  EXPECT_EQ(other.code, 5) << other.all();
  Ok({"branch", "protect", "main", "off"});
  File("more.csv", "id,name,amount\n9,zed,1.00\n");
  Ok({"load", "events", "more.csv"});
  EXPECT_EQ(Count(), "5\n");
}

TEST_F(CliMergeTest, RefusalsNameTheRuleAndLeaveMainUnchanged) {
  File("main.csv", "id,name,amount\n9,zed,1.00\n");
  Ok({"branch", "create", "other"});
  Ok({"load", "events", "main.csv", "--branch", "other"});
  const auto before = TreeExceptRuns(ws());
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"branch", "merge", "today", "--expect-rows", "events=..2"},
       1,
       "merge check 'rows of events' failed: table 'events' has 4 rows, more than 2"},
      {{"branch", "merge", "today", "--expect-unique", "events=name"},
       1,
       "merge check 'unique (name) in events' failed: table 'events' has 1 rows repeating"},
      {{"branch", "merge", "today", "--expect-rows", "nope=1"}, 1, "table 'nope' does not exist"},
      {{"branch", "merge", "today", "--expect-empty", "SELECT 1 WHERE 0", "--expect-empty",
        "SELECT id, name FROM events WHERE amount > 8"},
       1,
       "merge check 'sql 2' failed: the statement returned a row, {id: 4, name: \"ann\"}"},
      {{"branch", "merge", "today", "--expect-empty", "DELETE FROM events"}, 5, "sql 1"},
      {{"branch", "merge", "today", "--expect-rows", "events=x"}, 2, "is not a row count"},
      {{"branch", "merge", "today", "--expect-rows", "events=5..1"}, 2, "minimum is above"},
      {{"branch", "merge", "today", "--expect-unique", "events"}, 2, "TABLE=COL"},
      {{"branch", "merge", "today", "--into", "other"}, 2, "merges only into it"},
      {{"branch", "merge", "main"}, 2, "main is merged into nothing"},
      {{"branch", "merge", "nope"}, 4, "nope"},
  };
  for (const Case& c : cases) {
    CliResult r = Run(c.args);
    EXPECT_EQ(r.code, c.code) << ::testing::PrintToString(c.args) << "\n" << r.all();
    EXPECT_NE(r.all().find(c.message), std::string::npos)
        << ::testing::PrintToString(c.args) << "\n"
        << r.all();
  }
  EXPECT_EQ(TreeExceptRuns(ws()), before);
  // Both branches loaded events: the second merge is a conflict naming it.
  Ok({"branch", "merge", "other"});
  CliResult conflict = Run({"branch", "merge", "today"});
  EXPECT_EQ(conflict.code, 3) << conflict.all();
  EXPECT_NE(conflict.all().find("conflicts on table(s) events"), std::string::npos)
      << conflict.all();
  EXPECT_EQ(Count(), "1\n");
}

}  // namespace
}  // namespace loam::testing
