// Table commits whose put does not answer: the version the write tried
// decides its outcome, and only an outcome nobody can read keeps the sidecar.
#include <gtest/gtest.h>

#include "dataset/version_file.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::RowsOf;

constexpr OpMask kPutIfAbsentOp = 1u << static_cast<int>(ObjectOp::kPutIfAbsent);
constexpr OpMask kGetOp = 1u << static_cast<int>(ObjectOp::kGet);

// Table t with rows 1 and 2 at table version 2; writer A on a faulty view of
// the store, writer B (and the checks) on the store itself. Both are alive:
// neither recovers the other's young sidecar.
struct TwoWriters {
  std::shared_ptr<ObjectStore> base = testing::NewTestStore();
  std::shared_ptr<FaultInjectionObjectStore> faulty =
      std::make_shared<FaultInjectionObjectStore>(base);
  std::shared_ptr<WorkspaceEngine> a, b;
  TwoWriters() {
    WorkspaceOptions live = testing::TestOptions();
    live.recovery_grace_micros = 60'000'000;
    b = WorkspaceEngine::Init(base, "ws", live).value();
    EXPECT_TRUE(b->CreateTable("t", EventSchema(), {}).ok());
    EXPECT_TRUE(b->Write(Append("t", {1, 2})).ok());
    a = WorkspaceEngine::Open(faulty, "ws", live).value();
  }
  // The key of the table's version file `version` on its head's fork.
  std::string VersionKey(int64_t version) const {
    const TableHead head = b->Current().value().Find("t")->head;
    return b->TableRoot(head.location) + "/" + Dataset::BranchDir(head.owner_ref) + "_versions/" +
           VersionFileName(static_cast<uint64_t>(version));
  }
  size_t Sidecars() const { return base->ListAll("ws/_recovery/").value().size(); }
};

// The put lands but its reply is lost, and the read-back fails too: A looks
// again, finds its own version, and publishes it. Nothing is left to block
// the table's next writer.
TEST(UnansweredCommitTest, ALandedCommitWhoseReadBackFailedIsFoundAndPublished) {
  TwoWriters w;
  const std::string key = w.VersionKey(3);
  w.faulty->AddRule(FaultRule::LoseReplyAt("lost", kPutIfAbsentOp, 1,
                                           Status::Unavailable("reply lost"), {}, key));
  w.faulty->AddRule(FaultRule::FailNth("unread", kGetOp, 1, Status::Unavailable("no read"), key));
  Result<WriteResult> written = w.a->Write(Append("t", {3}));
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(w.faulty->Fired("lost"), 1u);
  EXPECT_EQ(w.faulty->Fired("unread"), 1u);
  EXPECT_EQ(written->table_version, 3);
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
  EXPECT_EQ(w.Sidecars(), 0u);
  ASSERT_TRUE(w.b->Write(Append("t", {4})).ok());  // not held back by an unpublished version
  EXPECT_EQ(RowsOf(*w.b, "t"), 4);
}

// A's put does not answer and, before A reads back, B commits the version A
// meant to take: a lost race (a conflict to retry), not an unknown outcome.
TEST(UnansweredCommitTest, AnotherWritersVersionWhereOursWasMeantToGoIsALostRace) {
  TwoWriters w;
  const std::string key = w.VersionKey(3);
  w.faulty->AddRule(
      FaultRule::FailNth("dropped", kPutIfAbsentOp, 1, Status::Unavailable("timeout"), key));
  w.faulty->AddRule(FaultRule::HookAt(
      "b-first", kGetOp, 1, [&] { EXPECT_TRUE(w.b->Write(Append("t", {9})).ok()); }, key));
  Status st = w.a->Write(Append("t", {3})).status();
  EXPECT_EQ(w.faulty->Fired("b-first"), 1u);
  EXPECT_TRUE(st.Is(ErrorCode::kConflict)) << st;
  EXPECT_EQ(w.Sidecars(), 0u);
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);  // 1, 2 and B's 9
  ASSERT_TRUE(w.a->Write(Append("t", {3})).ok());
  EXPECT_EQ(RowsOf(*w.b, "t"), 4);
}

// Nothing can be read at all: the error goes back and the sidecar stays, so
// a retry of the run settles it at once (RecoverRun) instead of waiting out
// the grace period, and the run is committed exactly once.
TEST(UnansweredCommitTest, AnOutcomeNobodyCanReadKeepsTheSidecarForTheRunsRetry) {
  TwoWriters w;
  const std::string key = w.VersionKey(3);
  w.faulty->AddRule(FaultRule::LoseReplyAt("lost", kPutIfAbsentOp, 1,
                                           Status::Unavailable("reply lost"), {}, key));
  FaultRule unread = FaultRule::FailNth("unread", kGetOp, 1, Status::Unavailable("no read"), key);
  unread.times = FaultRule::kForever;
  w.faulty->AddRule(unread);
  WriteRequest run = Append("t", {3});
  run.run_id = "run-1";
  Status st = w.a->Write(run).status();
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_GE(w.faulty->Fired("unread"), 2u);  // the read-back, then the looks again
  EXPECT_EQ(w.Sidecars(), 1u);
  EXPECT_EQ(RowsOf(*w.b, "t"), 2);  // not published yet
  RecoveryReport settled = w.b->RecoverRun("run-1").value();
  EXPECT_EQ(settled.rolled_forward, 1);
  EXPECT_EQ(w.Sidecars(), 0u);
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
  EXPECT_TRUE(w.b->Write(run).status().Is(ErrorCode::kRunAlreadyCommitted));
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
}

// The same with a put answered by a refusal (S3's 409 is Aborted) that in
// fact landed: while nothing can be read it is an unknown outcome, not a
// lost race: the error goes back as it is and the sidecar stays.
TEST(UnansweredCommitTest, ARefusedPutNobodyCanReadIsUnknownNotALostRace) {
  TwoWriters w;
  const std::string key = w.VersionKey(3);
  w.faulty->AddRule(FaultRule::LoseReplyAt("refused", kPutIfAbsentOp, 1,
                                           Status::Aborted("409 after landing"), {}, key));
  FaultRule unread = FaultRule::FailNth("unread", kGetOp, 1, Status::Unavailable("no read"), key);
  unread.times = FaultRule::kForever;
  w.faulty->AddRule(unread);
  WriteRequest run = Append("t", {3});
  run.run_id = "run-1";
  Status st = w.a->Write(run).status();
  EXPECT_TRUE(st.IsAborted()) << st;
  EXPECT_TRUE(CommitOutcomeUnknown(st)) << st;
  EXPECT_EQ(w.faulty->Fired("refused"), 1u);  // not written again as a conflict's retry
  EXPECT_EQ(w.Sidecars(), 1u);
  EXPECT_EQ(w.b->RecoverRun("run-1").value().rolled_forward, 1);
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
}

// The put failed and nothing can be seen where it would be: the write still
// cannot tell (a put may land after its timeout), so the error goes back and
// the sidecar stays. Nothing blocks the table's next writer, and recovery
// drops the sidecar as without effect once the head has moved past it.
TEST(UnansweredCommitTest, APutThatLeftNothingVisibleBlocksNobody) {
  TwoWriters w;
  const std::string key = w.VersionKey(3);
  w.faulty->AddRule(
      FaultRule::FailNth("dropped", kPutIfAbsentOp, 1, Status::Unavailable("timeout"), key));
  w.faulty->AddRule(FaultRule::FailNth("unread", kGetOp, 1, Status::Unavailable("no read"), key));
  Status st = w.a->Write(Append("t", {3})).status();
  EXPECT_TRUE(st.IsUnavailable()) << st;
  EXPECT_TRUE(CommitOutcomeUnknown(st)) << st;
  EXPECT_EQ(w.Sidecars(), 1u);
  ASSERT_TRUE(w.b->Write(Append("t", {4})).ok());
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
  RecoveryReport settled = w.b->Recover(0).value();
  EXPECT_EQ(settled.without_effect, 1);
  EXPECT_EQ(w.Sidecars(), 0u);
  EXPECT_EQ(RowsOf(*w.b, "t"), 3);
}

}  // namespace
}  // namespace loam
