// WorkspaceEngine::RevertMerge: a merge undone as one unit, in one commit.
#include <gtest/gtest.h>

#include "engine/workspace_test_util.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

class MergeRevertTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = WorkspaceEngine::Init(store_, "ws", options_).value();
    ASSERT_TRUE(ws_->CreateTable("orders", EventSchema(), {"id"}).ok());
    ASSERT_TRUE(ws_->CreateTable("people", EventSchema(), {}).ok());
    ASSERT_TRUE(ws_->Write(Append("orders", {1, 2})).ok());
    ASSERT_TRUE(ws_->Write(Append("people", {1})).ok());
    ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  }
  // dev: two orders more, people renamed and widened, a table created.
  void ChangeDev() {
    ASSERT_TRUE(ws_->Write(Append("orders", {3, 4}, "dev")).ok());
    ASSERT_TRUE(ws_->RenameTable("people", "persons", "dev").ok());
    WriteRequest add;
    add.table = "persons";
    add.branch = "dev";
    add.mode = WriteMode::kAddColumn;
    add.new_column = Field{"score", DataType::Float64(), true};
    ASSERT_TRUE(ws_->Write(add).ok());
    ASSERT_TRUE(ws_->CreateTable("audit", EventSchema(), {}, "dev").ok());
    ASSERT_TRUE(ws_->Write(Append("audit", {7}, "dev")).ok());
  }
  MergeResult Merge(const std::string& id) {
    MergeRequest r;
    r.source = "dev";
    r.merge_id = id;
    Result<MergeResult> merged = ws_->Merge(r);
    EXPECT_TRUE(merged.ok()) << merged.status();
    return merged.ok() ? *merged : MergeResult();
  }
  Result<MergeRevertResult> Revert(const std::string& id, const std::string& principal = "",
                                   WorkspaceEngine* ws = nullptr) {
    MergeRevertRequest r;
    r.merge_id = id;
    r.principal = principal;
    return (ws ? ws : ws_.get())->RevertMerge(r);
  }
  uint64_t MainVersion() { return ws_->Current().value().manifest_version; }

  WorkspaceOptions options_ = testing::TestOptions();
  std::shared_ptr<ObjectStore> store_ = std::make_shared<MemoryObjectStore>();
  std::shared_ptr<WorkspaceEngine> ws_;
};

TEST_F(MergeRevertTest, EveryTableGoesBackInOneCommitAndARetryAnswersIt) {
  const Snapshot before = ws_->Current().value();
  ChangeDev();
  Merge("m");
  ASSERT_EQ(RowsOf(*ws_, "orders"), 4);
  const uint64_t merged = MainVersion();

  Result<MergeRevertResult> reverted = Revert("m");
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(reverted->manifest_version, merged + 1);  // one commit
  std::map<std::string, std::string> changes;
  for (const MergedTable& t : reverted->tables) changes[t.name] = t.change;
  EXPECT_EQ(changes, (std::map<std::string, std::string>{
                         {"audit", "dropped"}, {"orders", "restored"}, {"people", "restored"}}));
  const Snapshot after = ws_->Current().value();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  EXPECT_EQ(RowsOf(*ws_, "people"), 1);
  EXPECT_EQ(after.Find("persons"), nullptr);
  EXPECT_EQ(after.Find("audit"), nullptr);
  const TableState& people = *after.Find("people");
  EXPECT_EQ(people.def.sid, before.Find("people")->def.sid);  // identity kept
  EXPECT_EQ(people.def.schema, before.Find("people")->def.schema);
  EXPECT_EQ(people.head.schema_hash, before.Find("people")->head.schema_hash);
  EXPECT_EQ(people.def.schema_version, 3);  // 1, widened by the merge, narrowed back
  EXPECT_EQ(ws_->OpenTable(after, "people").value().schema().fields.size(), 2u);
  ExpectHeadsMatchFold(*ws_);
  EXPECT_EQ(ws_->Log().value().front().run_ids.at(0), "merge-revert:m");

  Result<MergeRevertResult> again = Revert("m");  // answered, not repeated
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_reverted);
  EXPECT_EQ(again->commit_id, reverted->commit_id);
  EXPECT_EQ(again->tables.size(), 3u);
  EXPECT_EQ(MainVersion(), merged + 1);
  EXPECT_TRUE(Revert("nope").status().IsNotFound());
  ASSERT_TRUE(ws_->Write(Append("orders", {9})).ok());  // main writes on
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  ExpectHeadsMatchFold(*ws_);
}

// After a revert the branch merges again: the tables the revert restored
// move again; one the revert dropped is a conflict until the branch drops it.
TEST_F(MergeRevertTest, TheBranchMergesAgainAfterARevert) {
  ChangeDev();
  Merge("m");
  ASSERT_TRUE(Revert("m").ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {5}, "dev")).ok());
  MergeRequest again;
  again.source = "dev";
  Status s = ws_->Merge(again).status();
  ASSERT_TRUE(s.Is(ErrorCode::kConflict)) << s;
  EXPECT_NE(s.message().find("audit"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("orders"), std::string::npos) << s;
  ASSERT_TRUE(ws_->DropTable("audit", "dev").ok());
  Result<MergeResult> merged = ws_->Merge(again);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 5);
  EXPECT_EQ(RowsOf(*ws_, "persons"), 1);
  EXPECT_EQ(ws_->Current().value().Find("persons")->def.schema.fields.size(), 3u);
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(MergeRevertTest, ALaterChangeOfItsTablesBlocksTheRevertAndNothingChanges) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  ASSERT_TRUE(ws_->Write(Append("people", {2}, "dev")).ok());
  Merge("m");
  ASSERT_TRUE(ws_->Write(Append("orders", {10})).ok());
  const uint64_t before = MainVersion();
  Status s = Revert("m").status();
  ASSERT_TRUE(s.Is(ErrorCode::kRevertBlocked)) << s;
  EXPECT_EQ(s.detail("table"), "orders");
  EXPECT_NE(s.message().find("revert those changes first"), std::string::npos) << s;
  EXPECT_EQ(MainVersion(), before);
  EXPECT_EQ(RowsOf(*ws_, "people"), 2);  // not reverted either
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  // A compaction since changes no row: no block.
  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  ASSERT_TRUE(ws_->Write(Append("people", {3, 4}, "qa")).ok());
  MergeRequest qa;
  qa.source = "qa";
  qa.merge_id = "q";
  ASSERT_TRUE(ws_->Merge(qa).ok());
  WriteRequest compact;
  compact.table = "people";
  compact.mode = WriteMode::kCompact;
  ASSERT_TRUE(ws_->Write(compact).ok());
  Result<MergeRevertResult> reverted = Revert("q");
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(RowsOf(*ws_, "people"), 2);
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(MergeRevertTest, ADroppedTableOrATakenNameBlocksTheRevert) {
  ASSERT_TRUE(ws_->DropTable("people", "dev").ok());
  Merge("drop");
  Status s = Revert("drop").status();
  ASSERT_TRUE(s.Is(ErrorCode::kRevertBlocked)) << s;
  EXPECT_NE(s.message().find("cannot bring back"), std::string::npos) << s;
  EXPECT_EQ(ws_->Current().value().Find("people"), nullptr);

  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  ASSERT_TRUE(ws_->RenameTable("orders", "sales", "qa").ok());
  MergeRequest qa;
  qa.source = "qa";
  qa.merge_id = "rename";
  ASSERT_TRUE(ws_->Merge(qa).ok());
  ASSERT_TRUE(ws_->CreateTable("orders", EventSchema(), {}).ok());  // the old name taken
  const uint64_t before = MainVersion();
  s = Revert("rename").status();
  ASSERT_TRUE(s.Is(ErrorCode::kRevertBlocked)) << s;
  EXPECT_EQ(s.detail("table"), "orders");
  EXPECT_EQ(MainVersion(), before);
  EXPECT_EQ(RowsOf(*ws_, "sales"), 2);
}

TEST_F(MergeRevertTest, RevertingNeedsTheRolesTheUndoneChangesNeed) {
  ASSERT_TRUE(ws_->SetGrant("orders", "alice", Role::kWriter).ok());
  ASSERT_TRUE(ws_->SetGrant("people", "alice", Role::kReader).ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  Merge("data");
  EXPECT_TRUE(Revert("data", "mallory").status().IsPermissionDenied());
  ASSERT_TRUE(Revert("data", "alice").ok());  // rows only: a writer's
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  ASSERT_TRUE(ws_->RenameTable("people", "persons", "dev").ok());
  Merge("rename");
  EXPECT_TRUE(Revert("rename", "alice").status().IsPermissionDenied());  // admin's
  // A protected branch takes reverts of merges: they are merges' undoing.
  ASSERT_TRUE(ws_->SetBranchProtected("", true, "owner").ok());
  ASSERT_TRUE(Revert("rename").ok());
  EXPECT_NE(ws_->Current().value().Find("people"), nullptr);
  ExpectHeadsMatchFold(*ws_);
}

// A name the revert gives back may be held by a table the same revert
// drops; a table on another branch goes back on that branch's own fork.
TEST_F(MergeRevertTest, NamesSwapBackAndABranchKeepsItsOwnFork) {
  ASSERT_TRUE(ws_->RenameTable("orders", "sales", "dev").ok());
  ASSERT_TRUE(ws_->CreateTable("orders", EventSchema(), {}, "dev").ok());
  Merge("swap");
  ASSERT_EQ(RowsOf(*ws_, "sales"), 2);
  Result<MergeRevertResult> reverted = Revert("swap");
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  EXPECT_EQ(ws_->Current().value().Find("sales"), nullptr);
  ExpectHeadsMatchFold(*ws_);

  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  ASSERT_TRUE(ws_->CreateBranch("qa-day", "qa").ok());
  ASSERT_TRUE(ws_->Write(Append("people", {5}, "qa-day")).ok());
  MergeRequest day;
  day.source = "qa-day";
  day.into = "qa";
  day.merge_id = "day";
  ASSERT_TRUE(ws_->Merge(day).ok());
  // A branch made after a merge holds its record but cannot revert it.
  ASSERT_TRUE(ws_->CreateBranch("after", "qa").ok());
  MergeRevertRequest undo;
  undo.into = "after";
  undo.merge_id = "day";
  EXPECT_TRUE(ws_->RevertMerge(undo).status().IsNotFound());
  undo.into = "qa";
  ASSERT_TRUE(ws_->RevertMerge(undo).ok());
  const Snapshot qa = ws_->Current("qa").value();
  EXPECT_EQ(qa.Find("people")->head.owner_branch, "qa");
  EXPECT_EQ(RowsOf(*ws_, "people", "qa"), 1);
  ASSERT_TRUE(ws_->Write(Append("people", {6}, "qa")).ok());
  EXPECT_EQ(RowsOf(*ws_, "people", "qa"), 2);
  ExpectHeadsMatchFold(*ws_, "qa");
}

// Reverting the later of two merges of a table unblocks the earlier one;
// the first merge of two from one branch reverted alone merges again.
TEST_F(MergeRevertTest, MergesAreRevertedNewestFirstAndAnyOneMergesAgain) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  Merge("m1");
  ASSERT_TRUE(ws_->Write(Append("orders", {4}, "dev")).ok());
  ASSERT_TRUE(ws_->Write(Append("people", {2}, "dev")).ok());
  Merge("m2");
  ASSERT_EQ(RowsOf(*ws_, "orders"), 4);
  Status s = Revert("m1", "mallory").status();  // no grant: told nothing
  EXPECT_TRUE(s.IsPermissionDenied()) << s;
  s = Revert("m1").status();
  ASSERT_TRUE(s.Is(ErrorCode::kRevertBlocked)) << s;
  ASSERT_TRUE(Revert("m2").ok());
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  Result<MergeRevertResult> first = Revert("m1");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  EXPECT_EQ(RowsOf(*ws_, "people"), 1);
  ExpectHeadsMatchFold(*ws_);
  MergeRequest again;
  again.source = "dev";
  Result<MergeResult> merged = ws_->Merge(again);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  EXPECT_EQ(RowsOf(*ws_, "people"), 2);
  ExpectHeadsMatchFold(*ws_);
}

// A later merge reverted, merged again and reverted again, then compacted:
// the earlier merge's rows are back, so it reverts; a rename since blocks it
// until the name is back.
TEST_F(MergeRevertTest, RevertsSeeThroughLaterRevertsAndCompactionsButNotRenames) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  Merge("m1");
  ASSERT_TRUE(ws_->Write(Append("orders", {4}, "dev")).ok());
  Merge("m2");
  ASSERT_TRUE(Revert("m2").ok());
  MergeRequest again;
  again.source = "dev";
  again.merge_id = "m3";
  ASSERT_TRUE(ws_->Merge(again).ok());
  ASSERT_EQ(RowsOf(*ws_, "orders"), 4);
  ASSERT_TRUE(Revert("m3").ok());
  WriteRequest compact;
  compact.table = "orders";
  compact.mode = WriteMode::kCompact;
  ASSERT_TRUE(ws_->Write(compact).ok());
  ASSERT_EQ(RowsOf(*ws_, "orders"), 3);
  ASSERT_TRUE(ws_->RenameTable("orders", "sales").ok());
  Status s = Revert("m1").status();
  ASSERT_TRUE(s.Is(ErrorCode::kRevertBlocked)) << s;
  EXPECT_EQ(RowsOf(*ws_, "sales"), 3);
  ASSERT_TRUE(ws_->RenameTable("sales", "orders").ok());
  Result<MergeRevertResult> reverted = Revert("m1");
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  ExpectHeadsMatchFold(*ws_);
}

// A crash between the table commits and the publish leaves the merge in
// place; one after the publish leaves it reverted. Either way the revert
// then ends reverted exactly once.
TEST_F(MergeRevertTest, ACrashAtEitherFailpointNeverHalfRevertsAMerge) {
  for (std::string_view point :
       {failpoint::kMergeRevertAfterTableCommits, failpoint::kMergeRevertAfterPublish}) {
    SCOPED_TRACE(std::string(point));
    store_ = std::make_shared<MemoryObjectStore>();  // a fresh workspace
    SetUp();
    ChangeDev();
    Merge("m");
    const uint64_t merged = MainVersion();
    auto crashed = testing::OpenCrashingAt(store_, options_, point);
    ASSERT_TRUE(Revert("m", "", crashed.get()).status().IsUnavailable());
    const bool published = point == failpoint::kMergeRevertAfterPublish;
    EXPECT_EQ(MainVersion(), published ? merged + 1 : merged);
    EXPECT_EQ(RowsOf(*ws_, "orders"), published ? 2 : 4);
    auto reopened = WorkspaceEngine::Open(store_, "ws", options_).value();
    Result<MergeRevertResult> retried = Revert("m", "", reopened.get());
    ASSERT_TRUE(retried.ok()) << retried.status();
    EXPECT_EQ(retried->already_reverted, published);
    EXPECT_EQ(MainVersion(), merged + 1);
    EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
    EXPECT_EQ(ws_->Current().value().Find("audit"), nullptr);
    ASSERT_TRUE(ws_->Write(Append("orders", {4})).ok());
    EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
    ExpectHeadsMatchFold(*ws_);
  }
}

}  // namespace
}  // namespace loam
