#include "engine/workspace.h"

#include <gtest/gtest.h>

#include <set>

#include "engine/workspace_test_util.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::Events;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = Workspace::Init(store_, "ws", testing::TestOptions()).value();
  }
  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<Workspace> ws_;
};

TEST_F(WorkspaceTest, CreateWriteAndReadThroughHeads) {
  WriteResult created = ws_->CreateTable("events", EventSchema(), {"id"}).value();
  EXPECT_EQ(created.table_version, 1);
  WriteResult w = ws_->Write(Append("events", {1, 2, 3})).value();
  EXPECT_EQ(w.table_version, 2);
  EXPECT_EQ(w.row_count, 3);
  Snapshot snap = ws_->Current().value();
  const TableState* t = snap.Find("events");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->head.table_version, 2);
  EXPECT_EQ(t->head.row_count, 3);
  EXPECT_EQ(t->head.head_commit, w.commit_id);
  EXPECT_EQ(t->head.sid, created.sid);
  EXPECT_EQ(RowsOf(*ws_, "events"), 3);
  ASSERT_TRUE(snap.graph_head.has_value());
  EXPECT_EQ(snap.graph_head->head_commit, w.commit_id);
  EXPECT_EQ(snap.graph_head->parent_commit, created.commit_id);
  // Upsert on the declared key.
  WriteRequest up;
  up.table = "events";
  up.mode = WriteMode::kUpsert;
  up.rows = {Events({3, 4}, "new")};
  WriteResult u = ws_->Write(up).value();
  EXPECT_EQ(u.merge.updated, 1);
  EXPECT_EQ(u.merge.inserted, 1);
  EXPECT_EQ(RowsOf(*ws_, "events"), 4);
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, IdentitySurvivesRenameAndDropMakesANewIncarnation) {
  WriteResult a = ws_->CreateTable("people", EventSchema(), {}).value();
  ASSERT_TRUE(ws_->Write(Append("people", {1})).ok());
  WriteResult r = ws_->RenameTable("people", "persons").value();
  Snapshot snap = ws_->Current().value();
  EXPECT_EQ(snap.Find("people"), nullptr);
  ASSERT_NE(snap.Find("persons"), nullptr);
  EXPECT_EQ(snap.Find("persons")->def.sid, a.sid);
  EXPECT_EQ(snap.Find("persons")->head.table_version, 2);  // rename changes only the name
  EXPECT_EQ(snap.Find("persons")->head.head_commit, r.commit_id);
  const int64_t first_inc = snap.Find("persons")->def.inc;
  ASSERT_TRUE(ws_->DropTable("persons").ok());
  EXPECT_TRUE(ws_->Current().value().tables.empty());
  EXPECT_TRUE(ws_->Write(Append("persons", {2})).status().IsNotFound());
  // Recreating the name: a new identity; the old one stays tombstoned.
  WriteResult b = ws_->CreateTable("persons", EventSchema(), {}).value();
  EXPECT_NE(b.sid, a.sid);
  snap = ws_->Current().value();
  EXPECT_NE(snap.Find("persons")->def.inc, first_inc);
  EXPECT_EQ(RowsOf(*ws_, "persons"), 0);
  ManifestVersion v = ws_->manifest().Current("").value();
  std::optional<TableHead> old = ws_->manifest().ReadTableHead(v, a.sid).value();
  ASSERT_TRUE(old.has_value());
  EXPECT_EQ(old->state, HeadState::kTombstoned);
  EXPECT_EQ(old->table_key, "persons");
  EXPECT_FALSE(old->row_count.has_value());
  // Names are unique among live tables.
  EXPECT_TRUE(ws_->CreateTable("persons", EventSchema(), {}).status().IsAlreadyExists());
  EXPECT_TRUE(ws_->RenameTable("nope", "x").status().IsNotFound());
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, EveryJournalRowShipsWithItsHeadInTheSameCommit) {
  ASSERT_TRUE(ws_->CreateTable("a", EventSchema(), {"id"}).ok());
  ASSERT_TRUE(ws_->CreateTable("b", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->Write(Append("a", {1})).ok());
  ASSERT_TRUE(ws_->RenameTable("b", "c").ok());
  ASSERT_TRUE(ws_->SetGrant("a", "alice", Role::kWriter).ok());
  ASSERT_TRUE(ws_->DropTable("c").ok());
  const uint64_t latest = ws_->manifest().Current("").value().version;
  for (uint64_t v = 2; v <= latest; ++v) {
    std::vector<ManifestRow> rows = ws_->manifest().CommitRows("", v).value();
    std::set<int64_t> journal_sids, head_sids;
    int graph_commits = 0, graph_heads = 0;
    for (const ManifestRow& r : rows) {
      if (IsJournalType(r.object_type) && r.stable_table_id) journal_sids.insert(*r.stable_table_id);
      if (r.object_type == object_type::kTableHead) head_sids.insert(*r.stable_table_id);
      graph_commits += r.object_type == object_type::kGraphCommit;
      graph_heads += r.object_type == object_type::kGraphHead && r.object_id == "graph_head:main";
    }
    for (int64_t sid : journal_sids) {
      EXPECT_TRUE(head_sids.count(sid)) << "version " << v << ": table " << sid << " without head";
    }
    EXPECT_EQ(graph_commits, graph_heads) << "version " << v;
    EXPECT_LE(graph_commits, 1) << "version " << v;
  }
  // A publish that tries to break the rule is refused.
  PublishSpec bad;
  bad.build = [](PublishView&) -> Result<PublishPlan> {
    PublishPlan plan;
    ManifestRow r;
    r.object_id = TableVersionId(1, 2, 9);
    r.object_type = std::string(object_type::kTableVersion);
    r.stable_table_id = 1;
    r.incarnation_id = 2;
    plan.journal.push_back(r);
    return plan;
  };
  EXPECT_TRUE(ws_->manifest().Publish(bad).status().IsInvalidArgument());
}

TEST_F(WorkspaceTest, StaleExpectationIsATypedConflict) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  WriteRequest a = Append("t", {1});
  a.expected_version = 1;
  WriteRequest b = Append("t", {2});
  b.expected_version = 1;
  ASSERT_TRUE(ws_->Write(a).ok());
  Status s = ws_->Write(b).status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("conflict"), std::string::npos) << s;
  EXPECT_EQ(RowsOf(*ws_, "t"), 1);
  WriteRequest c = Append("t", {3});
  c.expected_schema_version = 7;
  s = ws_->Write(c).status();
  EXPECT_NE(s.message().find("schema_conflict"), std::string::npos) << s;
}

TEST_F(WorkspaceTest, RunsCommitAtMostOnce) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  WriteRequest w = Append("t", {1});
  w.run_id = "run-1";
  ASSERT_TRUE(ws_->Write(w).ok());
  Status again = ws_->Write(w).status();
  EXPECT_TRUE(again.IsAlreadyExists()) << again;
  EXPECT_EQ(RowsOf(*ws_, "t"), 1);  // rolled back, not duplicated
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, TimeTravelAndHistory) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  const uint64_t v1 = ws_->manifest().Current("").value().version;
  ASSERT_TRUE(ws_->Write(Append("t", {1, 2})).ok());
  ASSERT_TRUE(ws_->RenameTable("t", "u").ok());
  Snapshot old = ws_->SnapshotAt("", v1).value();
  ASSERT_NE(old.Find("t"), nullptr);
  EXPECT_EQ(ws_->OpenTable(old, "t").value().CountRows(), 0u);
  std::vector<TableHistoryEntry> h = ws_->History("u").value();
  ASSERT_EQ(h.size(), 5u);  // incarnation, schema, version 1, version 2, rename
  EXPECT_EQ(h[3].table_version, 2);
  EXPECT_EQ(h[4].event, "table_rename");
  std::vector<GraphCommitInfo> log = ws_->Log().value();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].parents, std::vector<std::string>{log[1].id});
  EXPECT_EQ(log[1].parents, std::vector<std::string>{log[2].id});
  EXPECT_TRUE(log[2].parents.empty());
}

}  // namespace
}  // namespace loam
