// The migration's guards: a lagging identity counter is advanced past every
// id in use, a migrator that was taken over cannot overwrite its successor's
// ledger, a commit that landed on a recreated branch is withdrawn, and a
// branch with nothing in it migrates to an empty branch.
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/migration_test_util.h"

namespace loam {
namespace {

using namespace migration_testing;  // NOLINT: the fixture's names

// Which branch commit of a migration (from 1) converts `branch`.
int TurnOf(const std::string& branch) {
  return static_cast<int>(std::find(kBranches.begin(), kBranches.end(), branch) -
                          kBranches.begin() + 1);
}

// A counter behind the ids in use (restored from an old copy) would mint one
// of them again: the migration advances it past every stored id first.
TEST_P(MigrationTest, ALaggingIdentityCounterIsAdvancedPastEveryIdInUse) {
  const std::string counter = "ws/_control/identity_counter.json";
  ASSERT_TRUE(store_->Delete(counter).ok());
  ASSERT_TRUE(store_->PutIfAbsent(counter, R"({"next":1})").ok());
  Result<MigrationReport> r = Migrate();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_TRUE(r->identity_counter_was.has_value());
  EXPECT_EQ(*r->identity_counter_was, 1);
  auto ws = Open().value();
  int64_t highest = 0;
  for (const std::string& b : kBranches) {
    std::vector<std::string> problems;
    FoldedHeads stored =
        ReadStoredHeads(ws->manifest(), ws->manifest().Current(b).value(), &problems);
    ASSERT_TRUE(problems.empty()) << problems.front();
    for (const auto& [sid, h] : stored.tables) highest = std::max({highest, sid, h.inc});
  }
  ASSERT_GT(highest, 1);
  ASSERT_TRUE(ws->CreateTable("fresh", EventSchema(), {"id"}).ok());
  const TableHead fresh = ws->Current("").value().Find("fresh")->head;
  EXPECT_GT(fresh.sid, highest);
  EXPECT_GT(fresh.inc, highest);
}

// A migrator that only stalled is taken over, and its successor finishes
// while it sleeps on after its first branch commit. When it wakes, its next
// ledger write is fenced (put-if-match on the etag it last saw): it stops
// with nothing of the successor's overwritten, and every record is the
// successor's.
// The stalled process wakes either where its next ledger write is one it
// made before (main's, after its commit) or a record it never wrote (the
// second branch's, after main is done): both are fenced.
TEST_P(MigrationTest, AMigratorTakenOverWhileStalledCannotOverwriteItsSuccessor) {
  bool first = true;
  for (std::string_view wake_at :
       {failpoint::kMigrateAfterBranchCommit, failpoint::kMigrateAfterBranch}) {
    SCOPED_TRACE(std::string(wake_at));
    if (!first) SetUp();  // a fresh history for the second case
    first = false;
    std::string token;
    Result<MigrationReport> successor = Status::Internal("not run");
    auto stall = [&](std::string_view at) {
      if (at == wake_at && token.empty()) {
        token = ClaimToken();
        successor = Migrate({}, token);  // runs while the first one is stalled here
      }
      return Status::OK();
    };
    Result<MigrationReport> stalled = Migrate(stall);
    ASSERT_TRUE(successor.ok()) << successor.status();
    EXPECT_TRUE(successor->took_over);
    ASSERT_FALSE(stalled.ok());
    EXPECT_EQ(stalled.status().error_code(), ErrorCode::kPreconditionFailed) << stalled.status();
    EXPECT_NE(stalled.status().message().find("this migration was taken over"), std::string::npos)
        << stalled.status();
    ExpectMigrated();
    // Every ledger record is done and names the successor's process.
    int records = 0;
    for (const ObjectInfo& o : store_->ListAll(MigrationPrefix("ws") + token + "/").value()) {
      if (o.key.find("/branch-") == std::string::npos) continue;
      ++records;
      const std::string text = store_->Get(o.key).value();
      EXPECT_NE(text.find("\"state\":\"done\""), std::string::npos) << text;
      EXPECT_EQ(text.find("\"owner\":\"" + token + "\""), std::string::npos) << text;
    }
    EXPECT_EQ(records, static_cast<int>(kBranches.size()));
  }
}

// The manifest version a "was deleted ... during its migration commit"
// message names.
uint64_t VersionIn(const Status& stopped) {
  const std::string from = "(manifest version ";
  const size_t at = stopped.message().find(from);
  return at == std::string::npos ? 0 : std::stoull(stopped.message().substr(at + from.size()));
}

// A Loam from before the stamp deletes and recreates a branch between the
// checks of the branch's migration commit and its put, so the commit lands on
// the new branch. It is withdrawn at once, or, when the migrator stops right
// after its commit, by the migration that takes over, found by the
// transaction id its version file carries (so also when the deletion
// removed the files holding its rows); the new branch then reads as it was
// made and is migrated as such. A stray the takeover cannot find (its
// ledger record gone) is refused when its marker would be confirmed. (Before
// the withdrawal, the takeover confirmed the landed commit's marker and
// stamped the new branch with the earlier branch's tables; before the
// transaction id, a landed commit whose rows were gone could not be
// identified and was left.)
TEST_P(MigrationTest, ACommitThatLandedOnARecreatedBranchIsWithdrawn) {
  enum class Then {
    kCaughtAtOnce,
    kStops,
    kStopsAndItsRowsAreGone,
    kStopsAndItsRecordIsGone,
    kStopsAndItsRecordIsGoneAboveTheFork,
  };
  bool first = true;
  for (Then then : {Then::kCaughtAtOnce, Then::kStops, Then::kStopsAndItsRowsAreGone,
                    Then::kStopsAndItsRecordIsGone, Then::kStopsAndItsRecordIsGoneAboveTheFork}) {
    SCOPED_TRACE(static_cast<int>(then));
    if (!first) SetUp();
    first = false;
    auto other = OpenAnyFormat();
    const std::string earlier = other->manifest().BranchId("lazy").value();
    const int lazy_at = TurnOf("lazy");
    int checked = 0;
    int committed = 0;
    std::optional<BranchState> made;
    auto race = [&](std::string_view at) -> Status {
      if (at == failpoint::kMigrateBranchCommitChecked && ++checked == lazy_at) {
        EXPECT_TRUE(other->DeleteBranch("lazy").ok());
        // From dev2, migrated just before: its fork point lies beyond the
        // version the commit lands at; from main (its migration commit, the
        // first), below it.
        Status made_again = then == Then::kStopsAndItsRecordIsGoneAboveTheFork
                                ? other->CreateBranch("lazy", "")
                                : other->CreateBranch("lazy", "dev2");
        EXPECT_TRUE(made_again.ok()) << made_again;
        made = Capture(*other, "lazy");
      }
      if (at == failpoint::kMigrateAfterBranchCommit && ++committed == lazy_at &&
          then != Then::kCaughtAtOnce) {
        return Status::Aborted("stopped after the commit");
      }
      return Status::OK();
    };
    Result<MigrationReport> r = Migrate(race);
    ASSERT_FALSE(r.ok());
    ASSERT_TRUE(made.has_value());
    ASSERT_NE(*made, before_["lazy"]);
    if (then == Then::kCaughtAtOnce) {
      EXPECT_EQ(r.status().error_code(), ErrorCode::kPreconditionFailed);
      EXPECT_NE(r.status().message().find("branch 'lazy' was deleted and recreated during its "
                                          "migration commit (manifest version "),
                std::string::npos)
          << r.status();
      EXPECT_NE(r.status().message().find("which landed on the new branch, was withdrawn"),
                std::string::npos)
          << r.status();
      EXPECT_EQ(Capture(*OpenAnyFormat(), "lazy"), *made);
      // The landed version is gone from the new branch's own directory.
      ASSERT_GT(VersionIn(r.status()), 0u);
      EXPECT_FALSE(
          OpenAnyFormat()->manifest().OwnVersionTxn("lazy", VersionIn(r.status())).value());
    }
    if (then == Then::kStopsAndItsRowsAreGone) {
      // The new branch has no files of its own but the landed commit's.
      const std::string data = "ws/__manifest/" + Dataset::BranchDir("lazy") + "data/";
      std::vector<ObjectInfo> files = store_->ListAll(data).value();
      ASSERT_FALSE(files.empty());
      for (const ObjectInfo& f : files) ASSERT_TRUE(store_->Delete(f.key).ok());
    }
    WorkspaceOptions o = testing::TestOptions();
    if (then == Then::kStopsAndItsRecordIsGone ||
        then == Then::kStopsAndItsRecordIsGoneAboveTheFork) {
      // The takeover cannot find the stray through its ledger. It is refused,
      // never migrated as the branch's state nor its marker confirmed, and
      // the workspace is not stamped: at or below the new branch's fork point
      // by its number, above it (the branch's tip) by whose commit it is.
      const std::string token = ClaimToken();
      const uint64_t landed = OpenAnyFormat()->manifest().Current("lazy").value().version;
      const std::string record = MigrationPrefix("ws") + token + "/branch-" + earlier + ".json";
      ASSERT_TRUE(store_->Delete(record).ok());
      Result<MigrationReport> refused =
          MigrateWorkspace(store_, "ws", o, MigrateOptions{token, true});
      ASSERT_FALSE(refused.ok());
      EXPECT_EQ(refused.status().error_code(), ErrorCode::kPreconditionFailed);
      const std::string says =
          then == Then::kStopsAndItsRecordIsGone
              ? "branch 'lazy' holds version " + std::to_string(landed) +
                    " in its own directory, at or below its fork point (version "
              : "branch 'lazy' holds migration " + token + "'s commit (manifest version " +
                    std::to_string(landed) + ") of an earlier branch of that name";
      EXPECT_NE(refused.status().message().find(says), std::string::npos) << refused.status();
      EXPECT_FALSE(Stamped());
      continue;
    }
    Result<MigrationReport> taken =
        MigrateWorkspace(store_, "ws", o, MigrateOptions{ClaimToken(), true});
    ASSERT_TRUE(taken.ok()) << taken.status();
    auto lazy = std::find_if(taken->branches.begin(), taken->branches.end(),
                             [](const BranchMigration& b) { return b.branch == "lazy"; });
    ASSERT_NE(lazy, taken->branches.end());
    EXPECT_EQ(lazy->withdrawn_version.has_value(), then != Then::kCaughtAtOnce);
    ASSERT_TRUE(Stamped());
    auto ws = Open().value();
    EXPECT_EQ(Capture(*ws, "lazy"), *made);
    ExpectHeadsMatchFold(*ws, "lazy");
    for (const std::string& b : {std::string(), std::string("dev"), std::string("dev2")}) {
      EXPECT_EQ(Capture(*ws, b), before_[b]) << b;
    }
  }
}

// The same race with a branch deleted and not made again: the commit lands
// in the deleted branch's directory. It is withdrawn at once, or by the
// takeover (from the directory of a branch its ledger names and the
// workspace no longer has), so a branch made later under that name starts
// from its own fork, not from the earlier branch's heads.
TEST_P(MigrationTest, ACommitThatLandedInADeletedBranchsDirectoryIsWithdrawn) {
  bool first = true;
  for (bool stop_after_commit : {false, true}) {
    SCOPED_TRACE(stop_after_commit ? "the migrator stops after its commit" : "caught at once");
    if (!first) SetUp();
    first = false;
    auto other = OpenAnyFormat();
    const int lazy_at = TurnOf("lazy");
    int checked = 0;
    int committed = 0;
    auto race = [&](std::string_view at) -> Status {
      if (at == failpoint::kMigrateBranchCommitChecked && ++checked == lazy_at) {
        EXPECT_TRUE(other->DeleteBranch("lazy").ok());
      }
      if (at == failpoint::kMigrateAfterBranchCommit && ++committed == lazy_at &&
          stop_after_commit) {
        return Status::Aborted("stopped after the commit");
      }
      return Status::OK();
    };
    Result<MigrationReport> r = Migrate(race);
    ASSERT_FALSE(r.ok());
    if (!stop_after_commit) {
      EXPECT_NE(r.status().message().find("branch 'lazy' was deleted during its migration "
                                          "commit (manifest version "),
                std::string::npos)
          << r.status();
      EXPECT_NE(r.status().message().find("which landed in its directory, was withdrawn"),
                std::string::npos)
          << r.status();
    }
    Result<MigrationReport> taken =
        MigrateWorkspace(store_, "ws", testing::TestOptions(), MigrateOptions{ClaimToken(), true});
    ASSERT_TRUE(taken.ok()) << taken.status();
    EXPECT_EQ(taken->withdrawn_in_deleted_branches.count("lazy"), stop_after_commit ? 1u : 0u);
    ASSERT_TRUE(Stamped());
    auto ws = Open().value();
    ASSERT_TRUE(ws->CreateBranch("lazy", "").ok());
    EXPECT_EQ(Capture(*ws, "lazy").heads, Capture(*ws, "").heads);
    ExpectHeadsMatchFold(*ws, "lazy");
  }
}

// A workspace that held nothing when it was migrated: the branch's migration
// commit publishes no partition, and the branch reads as empty, not as lost.
TEST(MigrationGuardTest, AWorkspaceWithNothingInItMigratesToAnEmptyOne) {
  auto store = testing::NewTestStore();
  ASSERT_TRUE(WorkspaceEngine::Init(store, "ws", testing::TestOptions()).ok());
  ASSERT_TRUE(store->Delete(FormatStampKey("ws")).ok());
  Result<std::shared_ptr<WorkspaceEngine>> refused =
      WorkspaceEngine::Open(store, "ws", testing::TestOptions());
  EXPECT_NE(refused.status().message().find("has no format stamp (no commit yet: made by an "
                                            "earlier Loam, or its init stopped before the stamp)"),
            std::string::npos)
      << refused.status();
  Result<MigrationReport> r = MigrateWorkspace(store, "ws", testing::TestOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, "unstamped, no commit yet");
  auto ws = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
  Result<Snapshot> snap = ws->Current();
  ASSERT_TRUE(snap.ok()) << snap.status();
  EXPECT_TRUE(snap->tables.empty());
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  EXPECT_EQ(ws->Current().value().tables.size(), 1u);
}

}  // namespace
}  // namespace loam
