// Crash at every named failpoint of the write protocol, reopen, and check
// that recovery leaves table, journal, heads and graph head consistent.
#include <gtest/gtest.h>

#include <filesystem>

#include "common/ulid.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/local_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

// A failpoint hook that "crashes" (stops the operation) at `point`.
std::function<Status(std::string_view)> CrashAt(std::string_view point) {
  return [point](std::string_view at) {
    return at == point ? Status::Unavailable("crash at " + std::string(at)) : Status::OK();
  };
}

struct Outcome {
  std::string_view failpoint;
  int rolled_forward, rolled_back, already_published, without_effect;
  int64_t version_delta;  // head version after recovery minus before the write
  int64_t rows;           // live rows after recovery (2 before, 3 after the write)
  std::string actor;      // actor of the newest graph commit
};

class WorkspaceCrashTest : public ::testing::TestWithParam<Outcome> {
 protected:
  // A workspace with table t holding 2 rows on `branch`, and a handle whose
  // write stops at `point`.
  void SetUpCrash(const std::string& branch, std::string_view point,
                  std::shared_ptr<ObjectStore> store = testing::NewTestStore()) {
    store_ = std::move(store);
    auto ws = WorkspaceEngine::Init(store_, "ws", testing::TestOptions()).value();
    ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {"id"}).ok());
    ASSERT_TRUE(ws->Write(Append("t", {1, 2})).ok());
    if (!branch.empty()) {
      ASSERT_TRUE(ws->CreateBranch(branch).ok());
    }
    WorkspaceOptions crashing = testing::TestOptions();
    crashing.failpoint = CrashAt(point);
    crashing_ = WorkspaceEngine::Open(store_, "ws", crashing).value();
  }
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> crashing_;
};

// Table "t" of `branch` is consistent with its head, the journal and the log.
// After a power loss a sidecar may have been lost or cut (they are not
// fsynced): recovery moves a cut one aside, under _recovery/unreadable/, and
// a table version committed without one stays unpublished above the head
// until the next write resets it (WorkspaceEngine::OpenFork).
void ExpectConsistent(const WorkspaceEngine& ws, const std::string& branch,
                      bool power_lost = false) {
  Snapshot snap = ws.Current(branch).value();
  ASSERT_NE(snap.Find("t"), nullptr);
  const TableHead& head = snap.Find("t")->head;
  // The physical table: the owner fork's latest version is the head's.
  OpenSpec spec;
  spec.branch = head.owner_ref;
  Dataset latest = Dataset::Open(ws.store(), "ws/" + head.location, spec).value();
  if (power_lost) {
    EXPECT_GE(static_cast<int64_t>(latest.version()), head.table_version);
    spec.version = head.table_version;
    latest = Dataset::Open(ws.store(), "ws/" + head.location, spec).value();
  }
  EXPECT_EQ(static_cast<int64_t>(latest.version()), head.table_version);
  EXPECT_EQ(static_cast<int64_t>(latest.CountRows()), head.row_count.value());
  ExpectHeadsMatchFold(ws, branch);
  // The graph head is the newest commit, and the table head names one.
  std::vector<GraphCommitInfo> log = ws.Log(branch).value();
  if (snap.graph_head) {
    EXPECT_EQ(snap.graph_head->head_commit, log.front().id);
  } else {
    EXPECT_NE(log.front().branch, branch);  // no commit of its own yet: the parent's line
  }
  for (const ObjectInfo& o : ws.store()->ListAll("ws/_recovery/").value()) {
    EXPECT_TRUE(power_lost && o.key.rfind("ws/_recovery/unreadable/", 0) == 0) << o.key;
  }
}

// Reopened on `store` after the write that crashed at `o.failpoint` from
// `before`: recovery converged as `o` says, and the table takes writes.
void ExpectRecoveredOnMain(std::shared_ptr<ObjectStore> store, const TableHead& before,
                           const Outcome& o, bool power_lost = false) {
  auto ws = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
  RecoveryReport again = ws->Recover(0).value();  // idempotent: nothing left
  EXPECT_EQ(again.rolled_back + again.rolled_forward + again.already_published, 0);
  const TableHead after = ws->Current().value().Find("t")->head;
  EXPECT_EQ(after.table_version, before.table_version + o.version_delta);
  EXPECT_EQ(after.row_count, o.rows);
  EXPECT_EQ(RowsOf(*ws, "t"), o.rows);
  EXPECT_EQ(after.sid, before.sid);
  EXPECT_EQ(after.inc, before.inc);
  EXPECT_EQ(after.schema_hash, before.schema_hash);
  EXPECT_EQ(after.owner_ref, before.owner_ref);
  EXPECT_EQ(ws->Log().value().front().actor, o.actor);
  if (o.version_delta == 0) {
    EXPECT_EQ(after, before);
  } else {
    EXPECT_EQ(after.head_commit, ws->Log().value().front().id);
  }
  ExpectConsistent(*ws, "", power_lost);
  // And the table takes writes again.
  ASSERT_TRUE(ws->Write(Append("t", {10})).ok());
  EXPECT_EQ(RowsOf(*ws, "t"), o.rows + 1);
}

TEST_P(WorkspaceCrashTest, RecoveryConvergesOnMain) {
  const Outcome& o = GetParam();
  SetUpCrash("", o.failpoint);
  const TableHead before = crashing_->Current().value().Find("t")->head;
  Status crashed = crashing_->Write(Append("t", {3})).status();
  ASSERT_TRUE(crashed.IsUnavailable()) << crashed;
  ExpectRecoveredOnMain(store_, before, o);  // reopened: recovery runs
}

// The same crash on local disk, then a power loss: what was written without
// durability since the workspace was made (sidecars, the earlier writes'
// sidecar deletes, latest-version hints) vanishes, comes back or is cut, by
// seed. Recovery converges as after a process crash, or, when the crashed
// write's sidecar was lost before its publish, rolls it back (the write was
// never acknowledged); either way consistent, and nothing published is lost.
TEST_P(WorkspaceCrashTest, RecoveryConvergesAfterAPowerLoss) {
  const Outcome& o = GetParam();
  const Outcome rolled_back{o.failpoint, 0, 0, 0, 0, 0, 2, "loam"};
  int lost = 0, published = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto dir = std::filesystem::temp_directory_path() / ("loam-power-" + NewUlidString());
    auto local = LocalObjectStore::Open(dir.string()).value();
    auto faulty = std::make_shared<FaultInjectionObjectStore>(local, seed);
    faulty->TrackUnsyncedWrites();
    SetUpCrash("", o.failpoint, faulty);
    const TableHead before = crashing_->Current().value().Find("t")->head;
    Status crashed = crashing_->Write(Append("t", {3})).status();
    ASSERT_TRUE(crashed.IsUnavailable()) << crashed;
    lost += faulty->LosePower().value();
    const bool moved = WorkspaceEngine::Open(local, "ws", testing::TestOptions())
                           .value()
                           ->Current()
                           .value()
                           .Find("t")
                           ->head.table_version != before.table_version;
    published += moved;
    if (o.failpoint == failpoint::kAfterPublish) {
      EXPECT_TRUE(moved);  // durable by then
    }
    ExpectRecoveredOnMain(local, before, moved ? o : rolled_back, /*power_lost=*/true);
    std::filesystem::remove_all(dir);
  }
  EXPECT_GT(lost, 0);
  std::printf("[ figures ] %s: %d of 6 seeds published, %d unsynced writes lost\n",
              std::string(o.failpoint).c_str(), published, lost);
}

TEST_P(WorkspaceCrashTest, RecoveryConvergesOnABranchFork) {
  const Outcome& o = GetParam();
  SetUpCrash("dev", o.failpoint);
  Status crashed = crashing_->Write(Append("t", {3}, "dev")).status();
  ASSERT_TRUE(crashed.IsUnavailable()) << crashed;
  auto ws = WorkspaceEngine::Open(store_, "ws", testing::TestOptions()).value();
  // A rolled-back first write on a branch publishes nothing: the head still
  // names main's version, and the unpublished fork is reset on the next write.
  const bool published = o.rolled_forward + o.already_published > 0;
  const TableHead head = ws->Current("dev").value().Find("t")->head;
  EXPECT_EQ(head.owner_branch, published ? "dev" : "");
  EXPECT_EQ(RowsOf(*ws, "t", "dev"), published ? 3 : 2);
  EXPECT_EQ(RowsOf(*ws, "t"), 2);
  ExpectConsistent(*ws, "dev");
  ExpectConsistent(*ws, "");
  ASSERT_TRUE(ws->Write(Append("t", {10}, "dev")).ok());
  EXPECT_EQ(RowsOf(*ws, "t", "dev"), published ? 4 : 3);
  ExpectConsistent(*ws, "dev");
}

INSTANTIATE_TEST_SUITE_P(
    Failpoints, WorkspaceCrashTest,
    ::testing::Values(Outcome{failpoint::kAfterSidecar, 0, 0, 0, 1, 0, 2, "loam"},
                      Outcome{failpoint::kAfterTableCommit, 1, 0, 0, 0, 1, 3, "loam:recovery"},
                      Outcome{failpoint::kAfterPublish, 0, 0, 1, 0, 1, 3, "loam"}),
    [](const auto& param_info) {
      std::string name(param_info.param.failpoint);
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

// Writer A's table commit lands, then another writer commits A's run first:
// A's publish is refused and A rolls its table back (restore + publish).
// `crash_in_rollback` stops A after the restore; the next recovery finishes.
void RunLosesItsRunToAnotherWriter(bool crash_in_rollback) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws->CreateTable("u", EventSchema(), {}).ok());
  ASSERT_TRUE(ws->Write(Append("t", {1, 2})).ok());
  WorkspaceOptions live = testing::TestOptions();
  live.recovery_grace_micros = 60'000'000;  // A is alive: B leaves its sidecar alone
  auto b = WorkspaceEngine::Open(store, "ws", live).value();
  WorkspaceOptions a_opts = live;
  a_opts.failpoint = [&](std::string_view at) {
    if (at == failpoint::kAfterTableCommit) {
      WriteRequest w = Append("u", {7});
      w.run_id = "run-1";
      EXPECT_TRUE(b->Write(w).ok());
    }
    if (crash_in_rollback && at == failpoint::kRecoveryAfterRestore)
      return Status::Unavailable("crash");
    return Status::OK();
  };
  auto a = WorkspaceEngine::Open(store, "ws", a_opts).value();
  WriteRequest w = Append("t", {3});
  w.run_id = "run-1";
  Status st = a->Write(w).status();
  if (crash_in_rollback) {
    ASSERT_TRUE(st.IsUnavailable()) << st;
    ws = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();  // recovery
  } else {
    ASSERT_TRUE(st.IsAlreadyExists()) << st;
  }
  const TableHead head = ws->Current().value().Find("t")->head;
  EXPECT_EQ(head.table_version, 4);  // 2, A's unpublished 3, its restore 4
  EXPECT_EQ(head.row_count, 2);
  EXPECT_EQ(RowsOf(*ws, "t"), 2);
  EXPECT_EQ(RowsOf(*ws, "u"), 1);
  std::vector<GraphCommitInfo> log = ws->Log().value();
  EXPECT_EQ(log.front().actor, "loam:recovery");
  EXPECT_EQ(head.head_commit, log.front().id);
  ExpectConsistent(*ws, "");
}

// A's manifest version lands but its reply is lost, and before A looks again
// B renames the table, so the head names B's commit. A judges by its own
// commit: the write is reported as the success it is and its rows stay.
TEST(WorkspaceRecoveryTest, ALostPublishReplyIsJudgedByTheWritesOwnCommit) {
  auto base = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(base, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws->Write(Append("t", {1, 2})).ok());
  WorkspaceOptions live = testing::TestOptions();
  live.recovery_grace_micros = 60'000'000;  // A is alive: B leaves its sidecar alone
  auto b = WorkspaceEngine::Open(base, "ws", live).value();
  auto faulty = std::make_shared<FaultInjectionObjectStore>(base);
  auto a = WorkspaceEngine::Open(faulty, "ws", live).value();
  faulty->AddRule(FaultRule::LoseReplyAt(
      "lost-publish", WriteOpMask(), 1, Status::Unavailable("reply lost"),
      [&] { EXPECT_TRUE(b->RenameTable("t", "t2").ok()); }, "__manifest/_versions/"));
  Result<WriteResult> w = a->Write(Append("t", {3}));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(faulty->Fired("lost-publish"), 1u);
  EXPECT_EQ(w->table_version, 3);
  EXPECT_EQ(w->row_count, 3);
  const TableHead head = ws->Current().value().Find("t2")->head;
  EXPECT_EQ(head.table_version, 3);
  EXPECT_EQ(head.row_count, 3);
  EXPECT_EQ(RowsOf(*ws, "t2"), 3);  // the fork was not rolled back beneath the head
  EXPECT_TRUE(base->ListAll("ws/_recovery/").value().empty());  // no sidecar left
}

TEST(WorkspaceRecoveryTest, ARefusedPublishRollsTheTableBack) {
  RunLosesItsRunToAnotherWriter(false);
}

TEST(WorkspaceRecoveryTest, ACrashDuringRollbackConvergesOnTheNextRecovery) {
  RunLosesItsRunToAnotherWriter(true);
}

TEST(WorkspaceRecoveryTest, AnEffectWhoseTableWasDroppedIsLeftAloneAndNothingIsPublished) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  const WriteResult created = ws->CreateTable("t", EventSchema(), {}).value();
  WorkspaceOptions crash = testing::TestOptions();
  crash.failpoint = CrashAt(failpoint::kAfterTableCommit);
  auto writer = WorkspaceEngine::Open(store, "ws", crash).value();
  ASSERT_TRUE(writer->Write(Append("t", {1})).status().IsUnavailable());
  WorkspaceOptions live = testing::TestOptions();
  live.recovery_grace_micros = 60'000'000;
  ASSERT_TRUE(WorkspaceEngine::Open(store, "ws", live).value()->DropTable("t").ok());
  const size_t commits = ws->Log().value().size();
  RecoveryReport r = ws->Recover(0).value();
  EXPECT_EQ(r.rolled_back, 0);
  EXPECT_EQ(r.without_effect, 1);
  EXPECT_EQ(ws->Log().value().size(), commits);  // nothing published: the table is gone
  // The dropped table's data is not rolled back: its last version is the
  // crashed write's, untouched.
  const std::string location =
      "ws/" +
      TableLocation(created.sid, ws->manifest()
                                     .ReadTableHead(ws->manifest().Current("").value(), created.sid)
                                     .value()
                                     ->inc);
  Dataset dropped = Dataset::Open(store, location, {}, {}).value();
  EXPECT_EQ(dropped.version(), 2u);
  EXPECT_NE(dropped.state().txn.op, OpType::kRestore);
  EXPECT_TRUE(store->ListAll("ws/_recovery/").value().empty());
  EXPECT_TRUE(ws->Current().value().tables.empty());
  ExpectHeadsMatchFold(*ws);
}

// A workspace on a manual clock with a 10 s grace period and table "t", in
// which a writer crashed right after committing one row to the table.
struct CrashedWrite {
  std::shared_ptr<ObjectStore> store = testing::NewTestStore();
  ManualClock clock{1'000'000'000};
  WorkspaceOptions opts;
  std::shared_ptr<WorkspaceEngine> ws;
  CrashedWrite() {
    opts = testing::TestOptions();
    opts.manifest.dataset.clock = &clock;
    opts.recovery_grace_micros = 10'000'000;
    ws = WorkspaceEngine::Init(store, "ws", opts).value();
    EXPECT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
    WorkspaceOptions crash = opts;
    crash.failpoint = CrashAt(failpoint::kAfterTableCommit);
    EXPECT_TRUE(WorkspaceEngine::Open(store, "ws", crash)
                    .value()
                    ->Write(Append("t", {1}))
                    .status()
                    .IsUnavailable());
  }
};

TEST(WorkspaceRecoveryTest, YoungSidecarsAreLeftToTheirLiveWriters) {
  CrashedWrite c;
  auto& clock = c.clock;
  auto& opts = c.opts;
  auto& ws = c.ws;
  RecoveryReport young = ws->Recover(opts.recovery_grace_micros).value();
  EXPECT_EQ(young.left_to_live_writers, 1);
  // Another writer meets the unpublished version: a conflict, not a wrong commit.
  Status st = ws->Write(Append("t", {2})).status();
  EXPECT_TRUE(st.IsFailedPrecondition()) << st;
  EXPECT_EQ(RowsOf(*ws, "t"), 0);
  clock.AdvanceMicros(11'000'000);
  RecoveryReport old = ws->Recover(opts.recovery_grace_micros).value();
  EXPECT_EQ(old.rolled_forward, 1);  // the planned effect is confirmed
  ASSERT_TRUE(ws->Write(Append("t", {2})).ok());
  EXPECT_EQ(RowsOf(*ws, "t"), 2);
  ExpectConsistent(*ws, "");
}

// Writes list the sidecars only once one can be past the grace period: the
// listing that saw the crashed write's sidecar young skips the next ones
// until that sidecar is due, and the first write after recovers it.
TEST(WorkspaceRecoveryTest, WritesListSidecarsOnlyWhenOneCanBeDue) {
  CrashedWrite c;
  ASSERT_TRUE(c.ws->CreateTable("u", EventSchema(), {}).ok());
  auto counting = std::make_shared<CountingObjectStore>(c.store, 2);
  auto ws = WorkspaceEngine::Open(counting, "ws", c.opts).value();
  auto listings = [&] {
    return counting->Snapshot().by_prefix["ws/_recovery/"].count(ObjectOp::kList);
  };
  counting->Reset();
  ASSERT_TRUE(ws->Write(Append("u", {1})).ok());
  EXPECT_EQ(listings(), 1u);  // the sidecar is young: due 10 s after the crash
  c.clock.AdvanceMicros(9'000'000);
  counting->Reset();
  ASSERT_TRUE(ws->Write(Append("u", {2})).ok());
  EXPECT_EQ(listings(), 0u);
  EXPECT_EQ(RowsOf(*ws, "t"), 0);
  c.clock.AdvanceMicros(2'000'000);
  counting->Reset();
  ASSERT_TRUE(ws->Write(Append("u", {3})).ok());
  EXPECT_EQ(listings(), 1u);
  EXPECT_EQ(RowsOf(*ws, "t"), 1);  // rolled forward by that write's recovery
  EXPECT_TRUE(c.store->ListAll("ws/_recovery/").value().empty());
  // Nothing left: the next listing is a grace period away.
  counting->Reset();
  ASSERT_TRUE(ws->Write(Append("u", {4})).ok());
  EXPECT_EQ(listings(), 0u);
  ExpectConsistent(*ws, "");
}

TEST(WorkspaceRecoveryTest, AnUnpublishedVersionWithoutSidecarIsResetOnceOld) {
  // A machine crash may lose a sidecar (it is not fsynced) and keep the table
  // commit: the next writer resets the unpublished version once it is old.
  CrashedWrite c;
  auto& store = c.store;
  auto& clock = c.clock;
  auto& ws = c.ws;
  for (const ObjectInfo& o : store->ListAll("ws/_recovery/").value())
    ASSERT_TRUE(store->Delete(o.key).ok());
  EXPECT_TRUE(ws->Write(Append("t", {2})).status().IsFailedPrecondition());  // may be live
  clock.AdvanceMicros(11'000'000);
  Result<WriteResult> w = ws->Write(Append("t", {2}));
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(RowsOf(*ws, "t"), 1);  // the lost write's row never became visible
  ExpectConsistent(*ws, "");
  // The reset is audited in the commit that follows it: version 2 undone by
  // the restore at 3 to the head's version 1, then this write's version 4.
  EXPECT_EQ(w->table_version, 4);
  int audited = 0;
  for (const ManifestRow& row : ws->manifest().CommitRows("", w->manifest_version).value()) {
    if (row.object_type != object_type::kTableVersion) continue;
    audited++;
    EXPECT_NE(row.metadata.find(R"("reset":{"head_version":1,"restore_version":3,"undone":[2,2]})"),
              std::string::npos)
        << row.metadata;
  }
  EXPECT_EQ(audited, 1);
}

// A sidecar whose recovery fails holds its table: a later writer must not
// reset the crashed write's version by its age while recovery could still
// roll it forward. Once recovery succeeds, writes go on.
TEST(WorkspaceRecoveryTest, AFailedRecoveryBlocksItsTablesWritesUntilItSucceeds) {
  CrashedWrite c;
  c.clock.AdvanceMicros(11'000'000);
  auto faulty = std::make_shared<FaultInjectionObjectStore>(c.store);
  WorkspaceOptions opts = c.opts;
  opts.recover_on_open = false;
  auto ws = WorkspaceEngine::Open(faulty, "ws", opts).value();
  // Recovery opens the table by listing its versions; a writer never lists.
  FaultRule list = FaultRule::FailNth("list-table", MaskOf({ObjectOp::kList}), 1,
                                      Status::Unavailable("injected"),
                                      ws->Current().value().Find("t")->head.location);
  list.times = FaultRule::kForever;
  faulty->AddRule(list);
  Status st = ws->Write(Append("t", {2})).status();
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_NE(st.message().find("table 't' has an earlier write whose recovery failed"),
            std::string::npos)
      << st;
  EXPECT_GE(faulty->Fired("list-table"), 1u);
  EXPECT_EQ(RowsOf(*c.ws, "t"), 0);
  faulty->ClearRules();
  ASSERT_TRUE(ws->Write(Append("t", {2})).ok());
  EXPECT_EQ(RowsOf(*c.ws, "t"), 2);  // the crashed write rolled forward, then this one
  ExpectConsistent(*c.ws, "");
}

// Heads repair settles every sidecar first; one it cannot settle stops it
// before anything is published, and (being unread, it may name any table)
// holds every write meanwhile.
TEST(WorkspaceRecoveryTest, HeadsRepairStopsWhenASidecarCannotBeSettled) {
  CrashedWrite c;
  auto faulty = std::make_shared<FaultInjectionObjectStore>(c.store);
  WorkspaceOptions opts = c.opts;
  opts.recover_on_open = false;
  auto ws = WorkspaceEngine::Open(faulty, "ws", opts).value();
  FaultRule get = FaultRule::FailNth("get-sidecar", MaskOf({ObjectOp::kGet}), 1,
                                     Status::Unavailable("injected"), "_recovery/");
  get.times = FaultRule::kForever;
  faulty->AddRule(get);
  const size_t commits = c.ws->Log().value().size();
  Status st = ws->RepairHeads("").status();
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_NE(st.message().find("heads repair stopped: recovery of 1 write sidecars failed"),
            std::string::npos)
      << st;
  c.clock.AdvanceMicros(11'000'000);
  st = ws->Write(Append("t", {2})).status();
  EXPECT_NE(st.message().find("has an earlier write whose recovery failed"), std::string::npos)
      << st;
  EXPECT_EQ(c.ws->Log().value().size(), commits);
  EXPECT_EQ(c.ws->PendingSidecars().value(), 1);
}

TEST(WorkspaceRecoveryTest, AWriterWithAStaleViewOfItsLastCommitStillSucceeds) {
  auto store = testing::NewTestStore();
  WorkspaceOptions live = testing::TestOptions();
  live.recovery_grace_micros = 60'000'000;
  live.manifest.cache_bytes = 1 << 20;
  auto a = WorkspaceEngine::Init(store, "ws", live).value();
  ASSERT_TRUE(a->CreateTable("t", EventSchema(), {}).ok());
  auto b = WorkspaceEngine::Open(store, "ws", live).value();
  ASSERT_TRUE(a->Write(Append("t", {1})).ok());
  ASSERT_TRUE(b->Write(Append("t", {2})).ok());
  ASSERT_TRUE(a->Write(Append("t", {3})).ok());  // a's cached last commit is stale
  ASSERT_TRUE(a->RenameTable("t", "u").ok());
  ASSERT_TRUE(b->RenameTable("u", "v").ok());
  ASSERT_TRUE(a->Write(Append("v", {4})).ok());
  EXPECT_EQ(RowsOf(*b, "v"), 4);
  ExpectHeadsMatchFold(*b);
}

TEST(WorkspaceRecoveryTest, ASidecarOfADeletedAndRecreatedBranchIsDropped) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws->Write(Append("t", {1})).ok());
  ASSERT_TRUE(ws->CreateBranch("dev").ok());
  WorkspaceOptions crash = testing::TestOptions();
  crash.failpoint = CrashAt(failpoint::kAfterTableCommit);
  ASSERT_TRUE(WorkspaceEngine::Open(store, "ws", crash)
                  .value()
                  ->Write(Append("t", {2}, "dev"))
                  .status()
                  .IsUnavailable());
  WorkspaceOptions live = testing::TestOptions();
  live.recovery_grace_micros = 60'000'000;
  auto keeper = WorkspaceEngine::Open(store, "ws", live).value();
  ASSERT_TRUE(keeper->DeleteBranch("dev").ok());
  ASSERT_TRUE(keeper->CreateBranch("dev").ok());
  RecoveryReport r = keeper->Recover(0).value();
  EXPECT_EQ(r.without_effect, 1);
  EXPECT_EQ(r.rolled_forward, 0);
  EXPECT_EQ(RowsOf(*keeper, "t", "dev"), 1);  // the old branch's write never shows
  ASSERT_TRUE(keeper->Write(Append("t", {3}, "dev")).ok());
  EXPECT_EQ(RowsOf(*keeper, "t", "dev"), 2);
  ExpectConsistent(*keeper, "dev");
}

TEST(WorkspaceRecoveryTest, AnUnreadableSidecarIsMovedAsideOnceAndBlocksNothing) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(store->Put("ws/_recovery/garbage.json", "{not json").ok());
  auto reopened = WorkspaceEngine::Open(store, "ws", testing::TestOptions());
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  // Opening moved it aside, once: reported then, never again.
  ASSERT_TRUE(store->Get("ws/_recovery/unreadable/garbage.json").ok());
  EXPECT_TRUE(store->Get("ws/_recovery/garbage.json").status().IsNotFound());
  RecoveryReport r = (*reopened)->Recover(0).value();
  EXPECT_TRUE(r.failures.empty());
  EXPECT_TRUE(r.moved_aside.empty());
  ASSERT_TRUE(store->Put("ws/_recovery/torn.json", "{\"format\":1,\"operation_id\":").ok());
  r = (*reopened)->Recover(0).value();
  EXPECT_TRUE(r.failures.empty());
  ASSERT_EQ(r.moved_aside.size(), 1u);
  EXPECT_NE(r.moved_aside[0].find("torn.json"), std::string::npos);
  EXPECT_EQ((*reopened)->PendingSidecars().value(), 0);
  ASSERT_TRUE((*reopened)->Write(Append("t", {1})).ok());
  EXPECT_EQ(RowsOf(**reopened, "t"), 1);
}

TEST(WorkspaceRecoveryTest, AGrandchildBranchsFirstCommitContinuesTheNearestLine) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  const std::string main_head = ws->Log().value().front().id;
  ASSERT_TRUE(ws->CreateBranch("a").ok());
  ASSERT_TRUE(ws->CreateBranch("b", "a").ok());  // "a" has no commit of its own
  ASSERT_TRUE(ws->Write(Append("t", {1}, "b")).ok());
  std::vector<GraphCommitInfo> log = ws->Log("b").value();
  EXPECT_EQ(log.front().parents, std::vector<std::string>{main_head});
}

}  // namespace
}  // namespace loam
