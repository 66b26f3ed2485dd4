// The loader across crashes, power losses, takeovers and idempotency keys:
// every run commits exactly once.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/status_macros.h"
#include "engine/retention.h"
#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"

namespace loam::ingest {

void LoaderTest::ExpectExactlyOnceAfterCrashes(bool power_loss) {
  int lost = 0;
  const std::vector<std::string> points = {
      std::string(failpoint::kRunAfterValidate), std::string(failpoint::kRunBeforeCommit),
      std::string(loam::failpoint::kAfterSidecar), std::string(loam::failpoint::kAfterTableCommit),
      std::string(loam::failpoint::kAfterPublish)};
  int64_t id = 0;
  std::string expected;
  for (const std::string& point : points) {
    SCOPED_TRACE(point);
    id += 2;
    files_[point] = "id,name\n" + std::to_string(id - 1) + ",x\n" + std::to_string(id) + ",y\n";
    expected += std::to_string(id - 1) + ":x:null " + std::to_string(id) + ":y:null ";
    RunRequest r = Request(LoadMode::kAppend, {point});
    r.idempotency_key = "key-" + point;
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    wo.failpoint = [&](std::string_view p) {
      return p == point ? Status::Unavailable("crash") : Status::OK();
    };
    auto faulty = std::make_shared<FaultInjectionObjectStore>(store_, /*seed=*/id);
    if (power_loss) faulty->TrackUnsyncedWrites();
    auto crashing_ws = WorkspaceEngine::Open(faulty, "ws", wo).value();
    LoaderOptions lo = Options();
    lo.lease_micros = 0;  // the crashed owner's lease is over at once
    lo.failpoint = wo.failpoint;
    Loader crashing(crashing_ws, lo);
    EXPECT_FALSE(crashing.Run(r).ok());
    if (power_loss) lost += faulty->LosePower().value();
    RunRecord resumed = Load(r);
    EXPECT_EQ(resumed.state, RunState::kSucceeded) << resumed.error;
    EXPECT_FALSE(resumed.commit_id.empty());
    EXPECT_EQ(Contents(), expected);
    // Once more: the finished run is returned, nothing is written.
    EXPECT_EQ(Load(r).id, resumed.id);
    EXPECT_EQ(Contents(), expected);
  }
  EXPECT_TRUE(ws_->VerifyHeads("").value().ok());
  if (power_loss) {
    EXPECT_GT(lost, 0);  // some sidecar was lost or cut
  }
}

namespace {

TEST_F(LoaderTest, IdempotencyKeyReturnsTheRunOrRefusesADifferentRequest) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "nightly-2026-11-30";
  Loader loader(ws_, Options());
  bool reused = true;
  RunRecord first = loader.Run(r, &reused).value();
  EXPECT_FALSE(reused);
  RunRecord again = loader.Run(r, &reused).value();
  EXPECT_TRUE(reused);
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(Contents(), "1:a:null ");  // once
  RunRequest other = r;
  other.mode = LoadMode::kUpsert;
  Status s = loader.Run(other).status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("already belongs to run " + first.id), std::string::npos) << s;
}

TEST_F(LoaderTest, ARunHeldByALiveProcessIsAConflict) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "k";
  LoaderOptions crashing = Options();
  crashing.failpoint = [](std::string_view p) {
    return p == failpoint::kRunBeforeCommit ? Status::Unavailable("crash") : Status::OK();
  };
  Loader a(ws_, crashing);
  EXPECT_TRUE(a.Run(r).status().IsUnavailable());
  Loader b(ws_, Options());
  Status held = b.Run(r).status();
  EXPECT_TRUE(held.IsFailedPrecondition()) << held;
  EXPECT_NE(held.message().find("in progress in another process"), std::string::npos) << held;
  EXPECT_EQ(Contents(), "");
}

// A crash at each point of a run and of its write, then the same request
// again: the table holds the rows exactly once.
TEST_F(LoaderTest, ResumedAfterACrashAnywhereCommitsExactlyOnce) {
  ExpectExactlyOnceAfterCrashes(false);
}

// The same with a power loss after each crash: what the crashed process
// wrote without durability (its sidecar, relaxed deletes) vanishes, comes
// back or is cut, seeded per point (FaultInjectionObjectStore::LosePower).
TEST_F(LoaderTest, ResumedAfterACrashAndAPowerLossCommitsExactlyOnce) {
  ExpectExactlyOnceAfterCrashes(true);
}

// A run's owner stalls once its write has begun while another process takes
// the run over and commits it (left in the journal's tail, or folded into the
// index): the owner, whose look-ups read only the journal written since it
// created the run, commits nothing more, and the rows are there once. On a
// table without keys, where no key check would refuse a second commit.
TEST_F(LoaderTest, AnOwnerStalledWhileItsRunWasTakenOverDoesNotCommitItAgain) {
  ASSERT_TRUE(ws_->CreateTable("log", Schema{{{"id", DataType::Int64(), false}}}, {}).ok());
  auto rows = [&] {
    Snapshot snap = ws_->Current().value();
    return ws_->OpenTable(snap, "log").value().CountRows();
  };
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded);
    // History first: the journal index has levels older than the run.
    for (int i = 0; i < 40; ++i) {
      files_["h.csv"] = "id\n" + std::to_string(i) + "\n";
      RunRequest h = Request(LoadMode::kAppend, {"h.csv"});
      h.table = "log";
      EXPECT_EQ(Load(h).state, RunState::kSucceeded);
    }
    const uint64_t before = rows();
    const std::string file = "run-" + std::to_string(folded) + ".csv";
    files_[file] = "id\n1000\n";
    RunRequest r = Request(LoadMode::kAppend, {file});
    r.table = "log";
    r.idempotency_key = "stalled-" + file;
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    auto taker_ws = WorkspaceEngine::Open(store_, "ws", wo).value();
    // The owner stalls once its write has begun (past every look at its
    // run record), and the taker's commit lands meanwhile.
    std::optional<Result<RunRecord>> taken;
    WorkspaceOptions stalling = wo;
    stalling.failpoint = [&](std::string_view p) {
      if (p == loam::failpoint::kAfterSidecar && !taken) {
        taken = Loader(taker_ws, Options()).Run(r);
        if (folded) {
          EXPECT_TRUE(taker_ws->manifest().Reconcile("").ok());
        }
      }
      return Status::OK();
    };
    auto owner_ws = WorkspaceEngine::Open(store_, "ws", stalling).value();
    LoaderOptions stalled = Options();
    stalled.lease_micros = 0;  // over at once: another process may take the run
    Result<RunRecord> owner = Loader(owner_ws, stalled).Run(r);
    ASSERT_TRUE(taken.has_value());
    ASSERT_TRUE(taken->ok()) << taken->status();
    EXPECT_EQ((*taken)->state, RunState::kSucceeded) << (*taken)->error;
    EXPECT_FALSE((*taken)->commit_id.empty());
    if (owner.ok()) {
      EXPECT_EQ(owner->id, (*taken)->id);
    }
    EXPECT_EQ(rows(), before + 1) << (owner.ok() ? owner->error : owner.status().ToString());
  }
}

// A run that committed and crashed before it recorded the outcome is
// resumed after retention removed the manifest version it committed: the
// journal still says it committed, so it succeeds (without its table
// version), and its rows are there once.
TEST_F(LoaderTest, ARunCommittedPastTheTimeTravelWindowResumesAsSucceeded) {
  files_["a.csv"] = "id,name\n1,a\n";
  files_["b.csv"] = "id,name\n2,b\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "committed-then-crashed";
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  wo.failpoint = [](std::string_view p) {
    return p == loam::failpoint::kAfterPublish ? Status::Unavailable("crash") : Status::OK();
  };
  LoaderOptions lo = Options();
  lo.lease_micros = 0;  // the crashed owner's lease is over at once
  lo.failpoint = wo.failpoint;
  EXPECT_FALSE(Loader(WorkspaceEngine::Open(store_, "ws", wo).value(), lo).Run(r).ok());
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"b.csv"})).state, RunState::kSucceeded);
  const int64_t later = Clock::System()->NowMicros() + 10LL * 86400 * 1'000'000;
  ASSERT_GT(ExpireVersions(*ws_, later, 60, 0).value().manifest_versions_removed, 0);
  RunRecord resumed = Load(r);
  EXPECT_EQ(resumed.state, RunState::kSucceeded) << resumed.error;
  EXPECT_FALSE(resumed.commit_id.empty());
  EXPECT_EQ(Contents(), "1:a:null 2:b:null ");
}

}  // namespace
}  // namespace loam::ingest
