// WorkspaceEngine::Merge: a branch's changes published on its parent in one commit.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/retention.h"
#include "engine/workspace_test_util.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

class BranchMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_ = testing::TestOptions();
    options_.manifest.dataset.clock = &clock_;
    ws_ = WorkspaceEngine::Init(store_, "ws", options_).value();
    ASSERT_TRUE(ws_->CreateTable("orders", EventSchema(), {"id"}).ok());
    ASSERT_TRUE(ws_->CreateTable("people", EventSchema(), {}).ok());
    ASSERT_TRUE(ws_->CreateTable("scratch", EventSchema(), {}).ok());
    ASSERT_TRUE(ws_->Write(Append("orders", {1, 2})).ok());
    ASSERT_TRUE(ws_->Write(Append("people", {1})).ok());
    ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  }
  Result<MergeResult> Merge(const std::string& id = "", std::vector<MergeCheck> checks = {},
                            const std::string& principal = "") {
    MergeRequest r;
    r.source = "dev";
    r.merge_id = id;
    r.checks = std::move(checks);
    r.principal = principal;
    return ws_->Merge(r);
  }
  uint64_t MainVersion() { return ws_->Current().value().manifest_version; }

  ManualClock clock_{1'000'000'000};
  WorkspaceOptions options_;
  std::shared_ptr<ObjectStore> store_ = std::make_shared<MemoryObjectStore>();
  std::shared_ptr<WorkspaceEngine> ws_;
};

TEST_F(BranchMergeTest, TablesTheBranchChangedMoveToMainInOneCommitAndOutliveTheBranch) {
  const int64_t orders_sid = ws_->Current().value().Find("orders")->def.sid;
  ASSERT_TRUE(ws_->Write(Append("orders", {3, 4}, "dev")).ok());
  ASSERT_TRUE(ws_->RenameTable("people", "persons", "dev").ok());
  ASSERT_TRUE(ws_->CreateTable("audit", EventSchema(), {}, "dev").ok());
  ASSERT_TRUE(ws_->Write(Append("audit", {7, 8, 9}, "dev")).ok());
  ASSERT_TRUE(ws_->DropTable("scratch", "dev").ok());
  const uint64_t before = MainVersion();

  Result<MergeResult> merged = Merge();
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->manifest_version, before + 1);  // one commit
  EXPECT_GT(merged->copied_bytes, 0u);
  std::map<std::string, std::string> changes;
  for (const MergedTable& t : merged->tables) changes[t.name] = t.change;
  EXPECT_EQ(changes, (std::map<std::string, std::string>{{"audit", "created"},
                                                         {"orders", "updated"},
                                                         {"persons", "updated"},
                                                         {"scratch", "dropped"}}));
  Snapshot main = ws_->Current().value();
  EXPECT_EQ(main.Find("orders")->def.sid, orders_sid);  // identities kept
  EXPECT_EQ(main.Find("orders")->head.owner_branch, "");
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  EXPECT_EQ(RowsOf(*ws_, "audit"), 3);
  EXPECT_EQ(main.Find("people"), nullptr);
  EXPECT_EQ(RowsOf(*ws_, "persons"), 1);
  EXPECT_EQ(main.Find("scratch"), nullptr);
  ExpectHeadsMatchFold(*ws_);
  // The commit names both lines and records the merge.
  GraphCommitInfo commit = ws_->Log().value().front();
  EXPECT_EQ(commit.parents.size(), 2u);
  EXPECT_EQ(commit.run_ids.at(0), "merge:" + merged->merge_id);

  // The branch deleted and swept: main reads what it merged from its own files.
  ASSERT_TRUE(ws_->DeleteBranch("dev").ok());
  clock_.AdvanceMicros(3'600'000'000);
  RetentionReport swept = ExpireVersions(*ws_, clock_.NowMicros(), 60, 0).value();
  EXPECT_GT(swept.forks_removed, 0);
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  EXPECT_EQ(RowsOf(*ws_, "audit"), 3);
  ASSERT_TRUE(ws_->Write(Append("orders", {5})).ok());  // main writes on as before
  EXPECT_EQ(RowsOf(*ws_, "orders"), 5);
  ExpectHeadsMatchFold(*ws_);
}

// The merged definitions continue main's journal: two renames on the branch
// are one rename on main, a table created and renamed there none.
TEST_F(BranchMergeTest, RenamesOnTheBranchBecomeMainsNextRename) {
  ASSERT_TRUE(ws_->RenameTable("people", "persons", "dev").ok());
  ASSERT_TRUE(ws_->RenameTable("persons", "folks", "dev").ok());
  ASSERT_TRUE(ws_->CreateTable("draft", EventSchema(), {}, "dev").ok());
  ASSERT_TRUE(ws_->RenameTable("draft", "audit", "dev").ok());
  ASSERT_TRUE(Merge().ok());
  const Snapshot main = ws_->Current().value();
  EXPECT_EQ(main.Find("folks")->def.renames, 1);
  EXPECT_EQ(main.Find("audit")->def.renames, 0);
  ExpectHeadsMatchFold(*ws_);
  ASSERT_TRUE(ws_->RenameTable("folks", "people").ok());  // main's next rename
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(BranchMergeTest, AConflictNamesTheTablesBothSidesChangedAndMergesNothing) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  ASSERT_TRUE(ws_->Write(Append("people", {2}, "dev")).ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {10})).ok());  // main moved too
  const uint64_t before = MainVersion();
  Status s = Merge().status();
  ASSERT_TRUE(s.Is(ErrorCode::kConflict)) << s;
  EXPECT_NE(s.message().find("orders"), std::string::npos) << s;
  EXPECT_EQ(s.message().find("people"), std::string::npos) << s;
  EXPECT_EQ(MainVersion(), before);
  EXPECT_EQ(RowsOf(*ws_, "people"), 1);  // not merged either
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  // A name the branch gives that a table of main took is a conflict too.
  ASSERT_TRUE(ws_->CreateTable("fresh", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->CreateTable("fresh", EventSchema(), {}, "dev").ok());
  s = Merge().status();
  EXPECT_NE(s.message().find("fresh"), std::string::npos) << s;
}

TEST_F(BranchMergeTest, AMergeAgainTakesOnlyWhatChangedSinceTheLastOne) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  ASSERT_TRUE(Merge().ok());
  ASSERT_TRUE(ws_->Write(Append("people", {2})).ok());         // main goes on
  ASSERT_TRUE(ws_->Write(Append("orders", {4}, "dev")).ok());  // and so does dev
  Result<MergeResult> again = Merge();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->tables.size(), 1u);
  EXPECT_EQ(again->tables[0].name, "orders");
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  EXPECT_EQ(RowsOf(*ws_, "people"), 2);  // main's own write stays
  Result<MergeResult> nothing = Merge();
  ASSERT_TRUE(nothing.ok()) << nothing.status();
  EXPECT_EQ(nothing->manifest_version, 0u);
  EXPECT_TRUE(nothing->tables.empty());
  ExpectHeadsMatchFold(*ws_);
}

// Main's change to a table the last merge did not take stays main's: the
// branch's later change to it is a conflict, not a silent overwrite.
TEST_F(BranchMergeTest, AnEarlierMergeNeverHidesMainsOwnChanges) {
  ASSERT_TRUE(ws_->Write(Append("orders", {10})).ok());        // main's
  ASSERT_TRUE(ws_->Write(Append("people", {2}, "dev")).ok());  // dev's
  ASSERT_TRUE(Merge().ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {11}, "dev")).ok());
  Status s = Merge().status();
  EXPECT_TRUE(s.Is(ErrorCode::kConflict)) << s;
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);  // 1, 2 and main's 10
  // A table main dropped after the fork is not created again by the branch.
  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  ASSERT_TRUE(ws_->DropTable("scratch").ok());
  ASSERT_TRUE(ws_->Write(Append("people", {3}, "qa")).ok());
  MergeRequest r;
  r.source = "qa";
  ASSERT_TRUE(ws_->Merge(r).ok());
  ASSERT_TRUE(ws_->Write(Append("scratch", {1}, "qa")).ok());
  s = ws_->Merge(r).status();
  EXPECT_TRUE(s.Is(ErrorCode::kConflict)) << s;
  EXPECT_EQ(ws_->Current().value().Find("scratch"), nullptr);
  ExpectHeadsMatchFold(*ws_);
}

// Compaction on main changes no row: a later merge of the table is no conflict.
TEST_F(BranchMergeTest, MainsCompactionIsNoConflict) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3, 4})).ok());  // as large as the first: one tier
  ASSERT_TRUE(ws_->Write(Append("orders", {6}, "dev")).ok());
  WriteRequest compact;
  compact.table = "orders";
  compact.mode = WriteMode::kCompact;
  // Main's append after the fork is a change: compact a branch made after it.
  ASSERT_TRUE(ws_->CreateBranch("late").ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {5}, "late")).ok());
  Result<WriteResult> compacted = ws_->Write(compact);
  ASSERT_TRUE(compacted.ok()) << compacted.status();
  ASSERT_TRUE(compacted->changed);
  MergeRequest r;
  r.source = "late";
  Result<MergeResult> merged = ws_->Merge(r);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 5);                    // 1 2 3 4 and late's 5
  EXPECT_TRUE(Merge().status().Is(ErrorCode::kConflict));  // dev: main appended 3 since its fork
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(BranchMergeTest, APinnedVersionMergesThatStateOnly) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  const uint64_t pinned = ws_->Current("dev").value().manifest_version;
  ASSERT_TRUE(ws_->Write(Append("orders", {4}, "dev")).ok());  // lands after the checks
  MergeRequest r;
  r.source = "dev";
  r.source_version = pinned;
  Result<MergeResult> merged = ws_->Merge(r);
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(merged->source_version, pinned);
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  r.source_version.reset();
  ASSERT_TRUE(ws_->Merge(r).ok());  // the rest, next time
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  r.source_version = pinned;  // older than what was merged already
  EXPECT_TRUE(ws_->Merge(r).status().Is(ErrorCode::kPreconditionFailed));
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
}

TEST_F(BranchMergeTest, TheSameMergeIdIsAnsweredAgainNotRepeated) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  Result<MergeResult> first = Merge("m-1");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(ws_->Write(Append("orders", {4}, "dev")).ok());
  const uint64_t before = MainVersion();
  Result<MergeResult> again = Merge("m-1");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_merged);
  EXPECT_EQ(again->commit_id, first->commit_id);
  EXPECT_EQ(again->manifest_version, first->manifest_version);
  EXPECT_EQ(MainVersion(), before);
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  // The id of another branch's merge.
  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  MergeRequest other;
  other.source = "qa";
  other.merge_id = "m-1";
  EXPECT_TRUE(ws_->Merge(other).status().Is(ErrorCode::kIdempotencyKeyReused));
}

TEST_F(BranchMergeTest, AFailedCheckRefusesTheMergeAndNamesTheCheck) {
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  ASSERT_TRUE(ws_->Write(Append("people", {1, 2}, "dev")).ok());  // id 1 twice
  const uint64_t before = MainVersion();
  MergeCheck rows{"enough orders", "orders", 5, std::nullopt, {}};
  Status s = Merge("", {rows}).status();
  ASSERT_TRUE(s.Is(ErrorCode::kMergeCheckFailed)) << s;
  EXPECT_EQ(s.detail("check"), "enough orders");
  EXPECT_NE(s.message().find("has 3 rows, fewer than 5"), std::string::npos) << s;
  MergeCheck unique{"people unique", "people", std::nullopt, std::nullopt, {"id"}};
  s = Merge("", {unique}).status();
  ASSERT_TRUE(s.Is(ErrorCode::kMergeCheckFailed)) << s;
  EXPECT_NE(s.message().find("1 rows repeating the values of (id)"), std::string::npos) << s;
  MergeCheck missing{"col", "people", std::nullopt, std::nullopt, {"nope"}};
  EXPECT_TRUE(Merge("", {missing}).status().IsInvalidArgument());
  EXPECT_EQ(MainVersion(), before);
  MergeCheck fine{"bounded", "orders", 1, 3, {}};
  MergeCheck keys{"orders unique", "orders", std::nullopt, std::nullopt, {"id"}};
  ASSERT_TRUE(Merge("", {fine, keys}).ok());
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
}

TEST_F(BranchMergeTest, OnlyIntoTheParentAndOnlyWithTheGrants) {
  ASSERT_TRUE(ws_->CreateBranch("qa").ok());
  MergeRequest r;
  r.source = "dev";
  r.into = "qa";
  EXPECT_TRUE(ws_->Merge(r).status().IsInvalidArgument());
  r.source = "";
  EXPECT_TRUE(ws_->Merge(r).status().IsInvalidArgument());
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
  ASSERT_TRUE(ws_->SetGrant("orders", "alice", Role::kWriter).ok());
  EXPECT_TRUE(Merge("", {}, "mallory").status().IsPermissionDenied());
  ASSERT_TRUE(ws_->RenameTable("people", "persons", "dev").ok());
  Status s = Merge("", {}, "alice").status();  // a rename needs admin
  EXPECT_TRUE(s.IsPermissionDenied()) << s;
  ASSERT_TRUE(ws_->SetGrant("people", "alice", Role::kAdmin).ok());
  ASSERT_TRUE(Merge("", {}, "alice").ok());
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  EXPECT_EQ(ws_->Log().value().front().actor, "alice");
}

TEST_F(BranchMergeTest, AProtectedBranchChangesOnlyThroughMerges) {
  ASSERT_TRUE(ws_->SetBranchProtected("", true, "owner").ok());
  EXPECT_TRUE(ws_->Current().value().graph_head->protected_branch);
  const WorkspaceEngine::BranchTip tip = ws_->Tip("").value();  // the same, tables unread
  EXPECT_TRUE(tip.graph_head->protected_branch);
  EXPECT_EQ(tip.manifest_version, MainVersion());
  const WorkspaceEngine::BranchTip dev = ws_->Tip("dev").value();
  EXPECT_FALSE(dev.graph_head && dev.graph_head->protected_branch);
  Status s = ws_->Write(Append("orders", {3})).status();
  EXPECT_TRUE(s.IsPermissionDenied()) << s;
  EXPECT_NE(s.message().find("only through merges"), std::string::npos) << s;
  EXPECT_TRUE(ws_->CreateTable("x", EventSchema(), {}).status().IsPermissionDenied());
  EXPECT_TRUE(ws_->RenameTable("people", "persons").status().IsPermissionDenied());
  EXPECT_TRUE(ws_->DropTable("people").status().IsPermissionDenied());
  EXPECT_EQ(RowsOf(*ws_, "orders"), 2);
  ASSERT_TRUE(ws_->SetGrant("orders", "alice", Role::kWriter).ok());  // no table change
  ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());         // dev is not protected
  Result<MergeResult> merged = Merge();
  ASSERT_TRUE(merged.ok()) << merged.status();
  EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
  EXPECT_TRUE(ws_->Current().value().graph_head->protected_branch);  // a merge keeps it
  WriteRequest compact;
  compact.table = "orders";
  compact.mode = WriteMode::kCompact;
  EXPECT_TRUE(ws_->Write(compact).ok());  // maintenance changes no row
  ExpectHeadsMatchFold(*ws_);
  ASSERT_TRUE(ws_->SetBranchProtected("", false, "owner").ok());
  ASSERT_TRUE(ws_->Write(Append("orders", {4})).ok());
  EXPECT_EQ(RowsOf(*ws_, "orders"), 4);
  ExpectHeadsMatchFold(*ws_);
}

// A crash between the table commits and the publish leaves main as it was;
// one after the publish leaves the merge done. Either way the same merge id
// then ends with exactly one merge.
TEST_F(BranchMergeTest, ACrashAtEitherFailpointNeverHalfAppliesAMerge) {
  for (std::string_view point :
       {failpoint::kMergeAfterTableCommits, failpoint::kMergeAfterPublish}) {
    SCOPED_TRACE(std::string(point));
    store_ = std::make_shared<MemoryObjectStore>();  // a fresh workspace
    SetUp();
    ASSERT_TRUE(ws_->Write(Append("orders", {3}, "dev")).ok());
    ASSERT_TRUE(ws_->Write(Append("people", {2}, "dev")).ok());
    const uint64_t before = MainVersion();
    auto crashed = testing::OpenCrashingAt(store_, options_, point);
    MergeRequest r;
    r.source = "dev";
    r.merge_id = "m";
    ASSERT_TRUE(crashed->Merge(r).status().IsUnavailable());
    const bool published = point == failpoint::kMergeAfterPublish;
    EXPECT_EQ(MainVersion(), published ? before + 1 : before);
    EXPECT_EQ(RowsOf(*ws_, "orders"), published ? 3 : 2);
    EXPECT_EQ(RowsOf(*ws_, "people"), published ? 2 : 1);
    auto reopened = WorkspaceEngine::Open(store_, "ws", options_).value();
    Result<MergeResult> retried = reopened->Merge(r);
    ASSERT_TRUE(retried.ok()) << retried.status();
    EXPECT_EQ(retried->already_merged, published);
    EXPECT_EQ(MainVersion(), before + 1);
    EXPECT_EQ(RowsOf(*ws_, "orders"), 3);
    EXPECT_EQ(RowsOf(*ws_, "people"), 2);
    ASSERT_TRUE(ws_->Write(Append("orders", {4})).ok());
    ExpectHeadsMatchFold(*ws_);
  }
}

std::multiset<int64_t> IdsOf(const WorkspaceEngine& ws, const std::string& branch,
                             const std::string& table) {
  Snapshot snap = ws.Current(branch).value();
  RecordBatch all = ws.OpenTable(snap, table).value().ReadAll().value();
  std::multiset<int64_t> out;
  for (int64_t r = 0; r < all.num_rows(); ++r) out.insert(all.columns[0].GetInt64(r));
  return out;
}

// Random appends and deletes on main and a branch, merges of the branch and
// reverts of them, against a replay: a table changed on both sides since the
// last merge is a conflict that changes nothing; otherwise main takes the
// branch's tables. A revert puts a merge's tables back unless main's state
// of one differs from what the merge left (revert_blocked; a later merge
// reverted puts that state back); the branch then merges them again.
// A merge the model may revert: its tables as main held them before it, and
// main's states of them before and right after it.
struct ModelMerge {
  std::string id;
  int generation = 0;  // of the branch merged
  std::map<std::string, std::multiset<int64_t>> before;
  std::map<std::string, int> stamps;         // main's state of each table after it
  std::map<std::string, int> before_stamps;  // and before it
  bool reverted = false;
};

TEST(BranchMergeModelTest, MainEqualsAReplayOfLoadsMergesAndReverts) {
  int64_t all_reverts = 0, all_blocked = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE(seed);
    std::mt19937_64 rng(seed);
    auto ws =
        WorkspaceEngine::Init(std::make_shared<MemoryObjectStore>(), "ws", testing::TestOptions())
            .value();
    const std::vector<std::string> tables = {"a", "b", "c"};
    const std::vector<std::string> branches = {"", "dev"};
    std::map<std::string, std::map<std::string, std::multiset<int64_t>>> rows;  // branch, table
    std::map<std::string, std::map<std::string, bool>> changed;  // since the last merge
    for (const std::string& t : tables) ASSERT_TRUE(ws->CreateTable(t, EventSchema(), {}).ok());
    ASSERT_TRUE(ws->CreateBranch("dev").ok());
    int64_t next_id = 0, merges = 0, conflicts = 0, reverts = 0, blocked = 0, generation = 0;
    std::map<std::string, int> stamp;  // main's state of each table (a new one per change)
    int next_stamp = 0;
    std::vector<ModelMerge> done;
    for (int step = 0; step < 80; ++step) {
      const int op = static_cast<int>(rng() % 7);
      if (op == 6 && !done.empty()) {  // revert a merge
        ModelMerge& m = rng() % 2 ? done.back() : done[rng() % done.size()];
        MergeRevertRequest r;
        r.merge_id = m.id;
        Result<MergeRevertResult> rv = ws->RevertMerge(r);
        bool moved = false;
        for (const auto& [t, s] : m.stamps) moved |= stamp[t] != s;
        if (m.reverted) {
          ASSERT_TRUE(rv.ok() && rv->already_reverted) << rv.status();
        } else if (moved) {
          ASSERT_TRUE(rv.status().Is(ErrorCode::kRevertBlocked)) << rv.status();
          ++blocked;
        } else {
          ASSERT_TRUE(rv.ok()) << rv.status();
          ++reverts;
          m.reverted = true;
          for (const auto& [t, ids] : m.before) {
            rows[""][t] = ids;
            stamp[t] = m.before_stamps[t];  // the rows before it, back
            const bool same_branch = m.generation == generation;
            changed["dev"][t] = same_branch || changed["dev"][t];
            changed[""][t] = !same_branch;
          }
        }
        continue;
      }
      if (op >= 5) {  // merge
        bool conflict = false, any = false;
        for (const std::string& t : tables) {
          conflict |= changed["dev"][t] && changed[""][t];
          any |= changed["dev"][t];
        }
        MergeRequest r;
        r.source = "dev";
        r.merge_id = "m" + std::to_string(step);
        Result<MergeResult> m = ws->Merge(r);
        if (conflict) {
          ASSERT_TRUE(m.status().Is(ErrorCode::kConflict)) << m.status();
          ++conflicts;
          // Resolved as a user would: the branch made again from main.
          ASSERT_TRUE(ws->DeleteBranch("dev").ok());
          ASSERT_TRUE(ws->CreateBranch("dev").ok());
          ++generation;
          rows["dev"] = rows[""];
          for (const std::string& t : tables) changed["dev"][t] = changed[""][t] = false;
          continue;
        }
        ASSERT_TRUE(m.ok()) << m.status();
        if (!any) continue;  // nothing to merge: no commit, the base stays
        ++merges;
        ModelMerge made{r.merge_id, static_cast<int>(generation), {}, {}, {}, false};
        for (const std::string& t : tables) {  // main's own changes to others stay its own
          if (!changed["dev"][t]) continue;
          made.before[t] = rows[""][t];
          made.before_stamps[t] = stamp[t];
          made.stamps[t] = stamp[t] = ++next_stamp;
          rows[""][t] = rows["dev"][t];
          changed["dev"][t] = changed[""][t] = false;
        }
        done.push_back(std::move(made));
        continue;
      }
      // Main loads mostly table a, the branch mostly b and c.
      const std::string& b = branches[rng() % 2];
      const std::string& t = rng() % 8 == 0 ? tables[rng() % tables.size()]
                             : b.empty()    ? tables[0]
                                            : tables[1 + rng() % 2];
      if (op < 4 || rows[b][t].empty()) {
        std::vector<int64_t> ids = {next_id++, next_id++};
        ASSERT_TRUE(ws->Write(Append(t, ids, b)).ok());
        rows[b][t].insert(ids.begin(), ids.end());
      } else {
        const int64_t victim = *rows[b][t].begin();
        WriteRequest del;
        del.table = t;
        del.branch = b;
        del.mode = WriteMode::kDelete;
        del.where = {Predicate::Eq("id", victim)};
        ASSERT_TRUE(ws->Write(del).ok());
        rows[b][t].erase(victim);
      }
      changed[b][t] = true;
      if (b.empty()) stamp[t] = ++next_stamp;
    }
    EXPECT_GT(merges, 0);
    all_reverts += reverts;
    all_blocked += blocked;
    for (const std::string& b : branches) {
      for (const std::string& t : tables) EXPECT_EQ(IdsOf(*ws, b, t), rows[b][t]) << b << "/" << t;
      ExpectHeadsMatchFold(*ws, b);
    }
    std::cout << "seed " << seed << ": " << merges << " merges, " << conflicts << " conflicts, "
              << reverts << " reverts, " << blocked << " blocked\n";
  }
  EXPECT_GT(all_reverts, 0);  // the seeds reach both outcomes
  EXPECT_GT(all_blocked, 0);
}

}  // namespace
}  // namespace loam
