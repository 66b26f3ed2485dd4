#include "engine/workspace.h"

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "engine/workspace_test_util.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::Events;
using testing::EventSchema;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

class WorkspaceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::NewTestStore();
    ws_ = WorkspaceEngine::Init(store_, "ws", testing::TestOptions()).value();
  }
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
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
      if (IsJournalType(r.object_type) && r.stable_table_id)
        journal_sids.insert(*r.stable_table_id);
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
  EXPECT_TRUE(s.Is(ErrorCode::kConflict)) << s;
  EXPECT_EQ(RowsOf(*ws_, "t"), 1);
  WriteRequest c = Append("t", {3});
  c.expected_schema_version = 7;
  s = ws_->Write(c).status();
  EXPECT_TRUE(s.Is(ErrorCode::kSchemaConflict)) << s;
  EXPECT_FALSE(s.Is(ErrorCode::kConflict)) << s;  // a retry cannot fix it
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

TEST_F(WorkspaceTest, SchemaChangesBumpTheVersionAndGrantsLiveInTheCatalog) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {"id"}).ok());
  ASSERT_TRUE(ws_->Write(Append("t", {1})).ok());
  const TableState before = *ws_->Current().value().Find("t");
  EXPECT_EQ(before.def.schema_version, 1);
  WriteRequest add;
  add.table = "t";
  add.mode = WriteMode::kAddColumn;
  add.new_column = Field{"score", DataType::Float64(), false};
  WriteResult r = ws_->Write(add).value();
  const TableState after = *ws_->Current().value().Find("t");
  EXPECT_EQ(after.def.schema_version, 2);
  EXPECT_EQ(after.def.schema.fields.size(), 3u);
  EXPECT_TRUE(after.def.schema.fields[2].nullable);  // added columns are nullable
  EXPECT_NE(after.head.schema_hash, before.head.schema_hash);
  EXPECT_EQ(after.head.schema_hash, after.def.SchemaHash());
  EXPECT_EQ(after.head.table_version, r.table_version);
  EXPECT_EQ(ws_->OpenTable(ws_->Current().value(), "t").value().schema().fields.size(), 3u);
  // A writer validated against schema version 1 now meets a schema_conflict.
  WriteRequest stale = Append("t", {2});
  stale.expected_schema_version = 1;
  Status st = ws_->Write(stale).status();
  EXPECT_TRUE(st.Is(ErrorCode::kSchemaConflict)) << st;
  bool schema_row = false;
  for (const ManifestRow& row :
       ws_->manifest().CommitRows("", ws_->Current().value().manifest_version).value()) {
    schema_row |= row.object_id == TableSchemaId(after.def.sid, after.def.inc, 2);
  }
  EXPECT_TRUE(schema_row);
  // Grants: set, change, remove; each an audited commit (table_grant rows).
  const size_t commits = ws_->Log().value().size();
  ASSERT_TRUE(ws_->SetGrant("t", "alice", Role::kWriter).ok());
  ASSERT_TRUE(ws_->SetGrant("t", "bob", Role::kReader).ok());
  ASSERT_TRUE(ws_->SetGrant("t", "alice", Role::kAdmin).ok());
  Snapshot snap = ws_->Current().value();
  EXPECT_EQ(snap.RoleOf(after.def.sid, "alice"), Role::kAdmin);
  EXPECT_EQ(snap.RoleOf(after.def.sid, "bob"), Role::kReader);
  EXPECT_EQ(snap.RoleOf(after.def.sid, "carol"), std::nullopt);
  ASSERT_TRUE(ws_->SetGrant("t", "bob", std::nullopt).ok());
  EXPECT_EQ(ws_->Current().value().RoleOf(after.def.sid, "bob"), std::nullopt);
  EXPECT_EQ(ws_->Log().value().size(), commits + 4);
  std::vector<std::string> audit;
  for (const TableHistoryEntry& e : ws_->History("t").value()) {
    if (e.event == object_type::kTableGrant) audit.push_back(e.actor + " " + e.detail);
  }
  EXPECT_EQ(audit, (std::vector<std::string>{"loam alice: writer", "loam bob: reader",
                                             "loam alice: admin", "loam bob: revoked"}));
  ExpectHeadsMatchFold(*ws_);
  EXPECT_TRUE(ws_->SetGrant("missing", "alice", Role::kReader).IsNotFound());
  // Dropping the table drops its grants; the recreated name starts with none.
  ASSERT_TRUE(ws_->DropTable("t").ok());
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  EXPECT_TRUE(ws_->Current().value().grants.empty());
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, WritesByTableIdAndPrincipalGrants) {
  WorkspaceOptions o = testing::TestOptions();
  o.owner = "ada";
  auto owned = WorkspaceEngine::Init(store_, "owned", o).value();
  EXPECT_EQ(WorkspaceEngine::Open(store_, "owned", testing::TestOptions()).value()->owner(), "ada");
  const int64_t sid = owned->CreateTable("events", EventSchema(), {"id"}).value().sid;
  ASSERT_TRUE(owned->RenameTable("events", "happenings").ok());
  WriteRequest w = Append("events", {1});  // the old name: resolved by id instead
  w.table_sid = sid;
  w.principal = "ada";  // the owner holds every role
  EXPECT_EQ(owned->Write(w).value().row_count, 1);
  w.principal = "bob";
  Status denied = owned->Write(w).status();
  EXPECT_TRUE(denied.IsPermissionDenied()) << denied;
  EXPECT_NE(
      denied.message().find("'bob' needs the writer grant on table 'happenings' (holds none)"),
      std::string::npos);
  ASSERT_TRUE(owned->SetGrant("happenings", "bob", Role::kWriter).ok());
  EXPECT_EQ(owned->Write(w).value().row_count, 2);
  w.mode = WriteMode::kReplace;
  EXPECT_TRUE(owned->Write(w).status().IsPermissionDenied());
  w.mode = WriteMode::kCompact;
  EXPECT_TRUE(owned->Write(w).ok());
  EXPECT_EQ(RowsOf(*owned, "happenings"), 2);
  ASSERT_TRUE(owned->DropTable("happenings").ok());
  w.mode = WriteMode::kAppend;
  EXPECT_TRUE(owned->Write(w).status().IsNotFound());
}

TEST_F(WorkspaceTest, RecoverRunSettlesThatRunsSidecarsWhateverTheirAge) {
  ASSERT_TRUE(ws_->CreateTable("events", EventSchema(), {"id"}).ok());
  WorkspaceOptions crash = testing::TestOptions();
  crash.recovery_grace_micros = 3'600'000'000;  // nothing is old enough for Recover
  crash.failpoint = [](std::string_view p) {
    return p == failpoint::kAfterTableCommit ? Status::Unavailable("crash") : Status::OK();
  };
  auto crashing = WorkspaceEngine::Open(store_, "ws", crash).value();
  WriteRequest w = Append("events", {1, 2});
  w.run_id = "run-a";
  EXPECT_FALSE(crashing->Write(w).ok());
  EXPECT_EQ(crashing->Recover(crash.recovery_grace_micros).value().left_to_live_writers, 1);
  EXPECT_EQ(crashing->RecoverRun("another-run").value().rolled_forward, 0);
  RecoveryReport r = crashing->RecoverRun("run-a").value();
  EXPECT_EQ(r.rolled_forward + r.rolled_back, 1);
  EXPECT_EQ(RowsOf(*ws_, "events"), r.rolled_forward == 1 ? 2 : 0);
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, ABranchCanStartAtAnOlderManifestVersion) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->Write(Append("t", {1})).ok());
  const uint64_t at = ws_->manifest().Current("").value().version;
  ASSERT_TRUE(ws_->Write(Append("t", {2, 3})).ok());
  ASSERT_TRUE(ws_->CreateBranch("past", "", at).ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "past"), 1);
  ASSERT_TRUE(ws_->Write(Append("t", {4}, "past")).ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "past"), 2);
  EXPECT_EQ(RowsOf(*ws_, "t"), 3);
  EXPECT_TRUE(ws_->CreateBranch("past").IsAlreadyExists());
  EXPECT_TRUE(ws_->CreateBranch("bad name").IsInvalidArgument());
  ExpectHeadsMatchFold(*ws_, "past");
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

// Replaces partition `p` of main's latest manifest version with `rows`, as a
// corrupt or buggy writer could: a raw commit that bypasses the publisher.
void CorruptPartition(WorkspaceEngine& ws, uint32_t p, const std::vector<ManifestRow>& rows) {
  Dataset base = ws.manifest().OpenDataset("").value();
  HeadDirectory dir = DecodeHeadDirectory(base.state().app_section).value();
  if (rows.empty()) {
    dir.slots[p] = HeadDirectory::Slot{};
  } else {
    Fragment f = base.WriteFragment(RowsToBatch(rows)).value();
    dir.Set(p, {f.data_path, f.data_size}, 0, static_cast<uint32_t>(rows.size()));
    ASSERT_TRUE(base.CommitRewrite({f}, {}, EncodeHeadDirectory(dir)).ok());
    return;
  }
  ASSERT_TRUE(base.CommitRewrite({}, {}, EncodeHeadDirectory(dir)).ok());
}

TEST_F(WorkspaceTest, MissingDuplicateOrMalformedHeadsFailLoudlyAndRepairFixesThem) {
  const int64_t sid = ws_->CreateTable("t", EventSchema(), {}).value().sid;
  ASSERT_TRUE(ws_->Write(Append("t", {1, 2})).ok());
  const uint32_t p = LiveHeadPartition(sid);
  ManifestVersion v = ws_->manifest().Current("").value();
  const ManifestRow good = ws_->manifest().ReadPartition(v, p).value().at(0);

  struct Case {
    std::string name;
    std::vector<ManifestRow> rows;
    std::string expect;
  };
  ManifestRow malformed = good;
  malformed.metadata = "{\"state\":\"live\"}";
  ManifestRow mismatched = good;
  mismatched.metadata = good.metadata;
  TableHead h = ParseTableHead(good).value();
  h.schema_hash = "0123";
  mismatched = TableHeadRow(h);
  TableHead tomb = ParseTableHead(good).value();
  tomb.state = HeadState::kTombstoned;
  tomb.row_count.reset();
  for (const Case& c : std::vector<Case>{{"missing", {}, "no head row"},
                                         {"duplicate", {good, good}, "appears twice"},
                                         {"malformed", {malformed}, "malformed"},
                                         {"mismatched schema", {mismatched}, "disagrees"},
                                         // Tombstones live in their own partitions.
                                         {"tombstoned", {TableHeadRow(tomb)}, "does not belong"}}) {
    SCOPED_TRACE(c.name);
    CorruptPartition(*ws_, p, c.rows);
    Status st = ws_->Current().status();
    EXPECT_TRUE(st.IsDataLoss()) << st;
    EXPECT_NE(st.ToString().find(c.expect), std::string::npos) << st;
    // Writers refuse too: no hot path folds the journal instead.
    EXPECT_TRUE(ws_->Write(Append("t", {3})).status().IsDataLoss());
    HeadsReport before = ws_->VerifyHeads().value_or(HeadsReport{0, 0, {"unreadable"}});
    EXPECT_FALSE(before.ok());
    HeadsReport repaired = ws_->RepairHeads().value();
    EXPECT_FALSE(repaired.changes.empty());
    EXPECT_TRUE(ws_->RepairHeads().value().changes.empty());  // idempotent
    ExpectHeadsMatchFold(*ws_);
    EXPECT_EQ(RowsOf(*ws_, "t"), 2);
    EXPECT_EQ(ws_->Log().value().front().actor, "loam:repair");
  }
  // The table keeps working after repair.
  ASSERT_TRUE(ws_->Write(Append("t", {3})).ok());
  EXPECT_EQ(RowsOf(*ws_, "t"), 3);
}

TEST_F(WorkspaceTest, DisjointWritersFormOneLinearChain) {
  constexpr int kWriters = 8, kCommits = 6;
  for (int i = 0; i < kWriters; ++i) {
    ASSERT_TRUE(ws_->CreateTable("t" + std::to_string(i), EventSchema(), {}).ok());
  }
  std::vector<std::thread> threads;
  std::vector<Status> failures(kWriters);
  for (int i = 0; i < kWriters; ++i) {
    threads.emplace_back([&, i] {
      // Each writer is its own process in spirit: its own WorkspaceEngine handle,
      // leaving the others' in-flight sidecars alone.
      WorkspaceOptions o = testing::TestOptions();
      o.recovery_grace_micros = 60'000'000;
      auto ws = WorkspaceEngine::Open(store_, "ws", o).value();
      for (int c = 0; c < kCommits; ++c) {
        Status st = ws->Write(Append("t" + std::to_string(i), {c})).status();
        if (!st.ok()) failures[i] = st;
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const Status& st : failures) EXPECT_TRUE(st.ok()) << st;
  Snapshot snap = ws_->Current().value();
  for (int i = 0; i < kWriters; ++i) {
    const TableState* t = snap.Find("t" + std::to_string(i));
    EXPECT_EQ(t->head.table_version, 1 + kCommits);
    EXPECT_EQ(t->head.row_count, kCommits);
  }
  // One chain: every commit's only parent is the one before it.
  std::vector<GraphCommitInfo> log = ws_->Log().value();
  ASSERT_EQ(log.size(), static_cast<size_t>(kWriters + kWriters * kCommits));
  for (size_t i = 0; i + 1 < log.size(); ++i) {
    EXPECT_EQ(log[i].parents, std::vector<std::string>{log[i + 1].id}) << i;
    // Strictly increasing (a fragment merge also takes a manifest version).
    EXPECT_GT(log[i].manifest_version, log[i + 1].manifest_version) << i;
  }
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, SameTableWritersWithOneExpectationHaveExactlyOneWinner) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  for (int round = 0; round < 10; ++round) {
    const int64_t expected = ws_->Current().value().Find("t")->head.table_version;
    std::vector<Status> results(2);
    std::vector<std::thread> threads;
    for (int i = 0; i < 2; ++i) {
      threads.emplace_back([&, i] {
        auto ws = WorkspaceEngine::Open(store_, "ws",
                                        [] {
                                          WorkspaceOptions o = testing::TestOptions();
                                          o.recovery_grace_micros =
                                              60'000'000;  // the other writer is alive
                                          return o;
                                        }())
                      .value();
        WriteRequest w = Append("t", {round * 2 + i});
        w.expected_version = expected;
        results[i] = ws->Write(w).status();
      });
    }
    for (auto& t : threads) t.join();
    const int wins = results[0].ok() + results[1].ok();
    EXPECT_EQ(wins, 1) << results[0] << " / " << results[1];
    for (const Status& st : results) {
      if (!st.ok()) {
        EXPECT_TRUE(st.IsFailedPrecondition()) << st;
      }
    }
    EXPECT_EQ(ws_->Current().value().Find("t")->head.table_version, expected + 1);
    EXPECT_EQ(RowsOf(*ws_, "t"), round + 1);
  }
  ExpectHeadsMatchFold(*ws_);
}

TEST_F(WorkspaceTest, BranchesForkTablesLazilyAndNeverConfuseARecreatedName) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->Write(Append("t", {1})).ok());
  const uint64_t fork_point = ws_->manifest().Current("").value().version;
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  // Nothing is copied: the branch reads main's table version.
  Snapshot dev = ws_->Current("dev").value();
  EXPECT_EQ(dev.Find("t")->head.owner_branch, "");
  EXPECT_EQ(dev.manifest_version, fork_point);
  // The first write on the branch forks the table; main does not see it.
  ASSERT_TRUE(ws_->Write(Append("t", {2, 3}, "dev")).ok());
  dev = ws_->Current("dev").value();
  EXPECT_EQ(dev.Find("t")->head.owner_branch, "dev");
  EXPECT_EQ(dev.Find("t")->head.table_version, 3);
  EXPECT_EQ(RowsOf(*ws_, "t", "dev"), 3);
  EXPECT_EQ(RowsOf(*ws_, "t"), 1);
  ASSERT_TRUE(ws_->Write(Append("t", {9})).ok());
  EXPECT_EQ(RowsOf(*ws_, "t"), 2);
  EXPECT_EQ(RowsOf(*ws_, "t", "dev"), 3);
  // The branch's first commit continues main's line.
  std::vector<GraphCommitInfo> dev_log = ws_->Log("dev").value();
  EXPECT_EQ(dev_log[0].branch, "dev");
  EXPECT_EQ(dev_log[1].manifest_version, static_cast<int64_t>(fork_point));
  // A branch of a branch, and delete refused while the child exists.
  ASSERT_TRUE(ws_->CreateBranch("feature", "dev").ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "feature"), 3);
  EXPECT_TRUE(ws_->DeleteBranch("dev").IsFailedPrecondition());
  ASSERT_TRUE(ws_->Write(Append("t", {4}, "feature")).ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "feature"), 4);
  EXPECT_EQ(RowsOf(*ws_, "t", "dev"), 3);
  ASSERT_TRUE(ws_->DeleteBranch("feature").ok());
  // Recreated under the same name: a new branch, blind to the old fork.
  ASSERT_TRUE(ws_->CreateBranch("feature", "").ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "feature"), 2);
  ASSERT_TRUE(ws_->Write(Append("t", {5}, "feature")).ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "feature"), 3);
  // A handoff at an equal version still updates the head's owner.
  ASSERT_TRUE(ws_->CreateBranch("handoff", "").ok());
  WriteResult fork = ws_->ForkTable("t", "handoff").value();
  Snapshot handed = ws_->Current("handoff").value();
  EXPECT_EQ(handed.Find("t")->head.table_version,
            ws_->Current().value().Find("t")->head.table_version);
  EXPECT_EQ(handed.Find("t")->head.owner_branch, "handoff");
  EXPECT_EQ(handed.Find("t")->head.head_commit, fork.commit_id);
  for (const char* b : {"", "dev", "feature", "handoff"}) ExpectHeadsMatchFold(*ws_, b);
  std::vector<std::string> branches = ws_->ListBranches().value();
  EXPECT_EQ(std::set<std::string>(branches.begin(), branches.end()),
            (std::set<std::string>{"dev", "feature", "handoff"}));
}

// The journal index in levels (small capacities here: 8 entries at level 0,
// doubling): folds move full levels up, a level never holds much more than
// its capacity, and every run stays found, also the runs an index built
// before the levels (named "object_id") covers.
TEST(JournalIndexLevelsTest, FullLevelsMoveUpAndEveryRunIsStillFound) {
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.index_tail_fragments = 2;
  o.manifest.journal_level0_entries = 8;
  o.manifest.journal_level_fanout = 2;
  o.manifest.merge_fanout = 0;  // fragments stay as published: the levels do all the work
  auto ws = WorkspaceEngine::Init(testing::NewTestStore(), "ws", o).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  auto run = [&](int i) {
    WriteRequest w = Append("t", {i});
    w.run_id = "run-" + std::to_string(i);
    ASSERT_TRUE(ws->Write(w).ok());
  };
  for (int i = 0; i < 4; ++i) run(i);
  // An index from before the levels covers what is there now.
  Dataset before = ws->manifest().OpenDataset("").value();
  ASSERT_TRUE(before.CreateIndex(std::string(kJournalIndex), "object_id").ok());
  for (int i = 4; i < 80; ++i) run(i);
  const DatasetVersion v = ws->manifest().OpenDataset("").value().state();
  ASSERT_NE(v.FindIndex(std::string(kJournalIndex)), nullptr);
  int levels = 0;
  uint64_t capacity = 8;
  for (int level = 0; const IndexMeta* m = v.FindIndex(JournalLevelName(level)); ++level) {
    ++levels;
    // At most its capacity, and what one fold carries in above it.
    EXPECT_LE(m->entries, 2 * capacity + 64) << JournalLevelName(level);
    capacity *= 2;
  }
  EXPECT_GE(levels, 3);
  for (int i = 0; i < 80; ++i) {
    JournalLookupStats stats;
    auto found = ws->manifest().FindJournalRow("", RunCommitId("run-" + std::to_string(i)), &stats);
    ASSERT_TRUE(found.ok() && found->has_value()) << i;
    EXPECT_LE(stats.fragments_scanned, 2) << i;
  }
  EXPECT_FALSE(ws->manifest().FindJournalRow("", RunCommitId("nope")).value().has_value());
  ASSERT_TRUE(ws->manifest().Reconcile("").ok());
  EXPECT_EQ(ws->manifest().JournalIndexTail("").value(), 0);
  ExpectHeadsMatchFold(*ws);
}

TEST_F(WorkspaceTest, JournalLookupByIdUsesTheIndexWithABoundedTail) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  for (int i = 0; i < 12; ++i) {
    WriteRequest w = Append("t", {i});
    w.run_id = "run-" + std::to_string(i);
    ASSERT_TRUE(ws_->Write(w).ok());
  }
  // No index yet (the publisher folds once more than 16 fragments are
  // outside it): correct, at the cost of scanning every fragment.
  JournalLookupStats none;
  EXPECT_FALSE(ws_->manifest().FindJournalRow("", RunCommitId("nope"), &none).value());
  EXPECT_FALSE(none.index_used);
  EXPECT_EQ(none.fragments_scanned, 13);  // one per commit: create + 12 writes
  EXPECT_EQ(ws_->manifest().JournalIndexTail("").value(), 13);
  auto found = ws_->manifest().FindJournalRow("", RunCommitId("run-3")).value();
  ASSERT_TRUE(found.has_value());
  ASSERT_TRUE(ws_->manifest().Reconcile("").ok());
  JournalLookupStats indexed;
  found = ws_->manifest().FindJournalRow("", RunCommitId("run-3"), &indexed).value();
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(indexed.index_used);
  EXPECT_GE(indexed.index_pages_read, 1);
  EXPECT_EQ(indexed.fragments_scanned, 0);
  // Two more commits form an uncovered tail of exactly two fragments...
  ASSERT_TRUE(ws_->Write(Append("t", {100})).ok());
  ASSERT_TRUE(ws_->Write(Append("t", {101})).ok());
  JournalLookupStats tail;
  EXPECT_FALSE(ws_->manifest().FindJournalRow("", RunCommitId("nope"), &tail).value().has_value());
  EXPECT_EQ(tail.fragments_scanned, 2);
  // ...which reconciliation folds in.
  ASSERT_TRUE(ws_->manifest().Reconcile("").ok());
  JournalLookupStats folded;
  ASSERT_TRUE(ws_->manifest().FindJournalRow("", RunCommitId("run-11"), &folded).value());
  EXPECT_EQ(folded.fragments_scanned, 0);
  // The publisher keeps the tail bounded on its own: 20 more commits fold.
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(ws_->Write(Append("t", {200 + i})).ok());
  EXPECT_LE(ws_->manifest().JournalIndexTail("").value(), 16);
  JournalLookupStats bounded;
  EXPECT_FALSE(ws_->manifest().FindJournalRow("", RunCommitId("nope"), &bounded).value());
  EXPECT_LE(bounded.fragments_scanned, 16);
  ExpectHeadsMatchFold(*ws_);
}

}  // namespace
}  // namespace loam
