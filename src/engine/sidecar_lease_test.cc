// Sidecar leases: a crashed writer's sidecar is recovered once its lease is
// over (not after the whole grace period), a live writer's lease is renewed,
// and recovery that settles a live writer's sidecar anyway changes nothing
// the writer reports.
#include "engine/sidecar_lease.h"

#include <gtest/gtest.h>

#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::RowsOf;

constexpr int64_t kGrace = 60'000'000;
constexpr int64_t kLease = 3'000'000;

// Table "t" with one row, on a manual clock, a 60 s grace period and 3 s
// leases; `Open` gives another process's handle.
struct LeasedWorkspace {
  std::shared_ptr<ObjectStore> store = testing::NewTestStore();
  ManualClock clock{1'000'000'000};
  WorkspaceOptions opts;
  std::shared_ptr<WorkspaceEngine> ws;
  LeasedWorkspace() {
    opts = testing::TestOptions();
    opts.manifest.dataset.clock = &clock;
    opts.recovery_grace_micros = kGrace;
    opts.sidecar_lease_micros = kLease;
    ws = WorkspaceEngine::Init(store, "ws", opts).value();
    EXPECT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
    EXPECT_TRUE(ws->Write(Append("t", {1})).ok());
  }
  std::shared_ptr<WorkspaceEngine> Open(std::function<Status(std::string_view)> failpoint = {}) {
    WorkspaceOptions o = opts;
    o.failpoint = std::move(failpoint);
    return WorkspaceEngine::Open(store, "ws", o).value();
  }
  size_t Sidecars() const { return store->ListAll("ws/_recovery/").value().size(); }
};

TEST(SidecarLeaseTest, ACrashedWritersSidecarIsRecoveredOnceItsLeaseIsOver) {
  LeasedWorkspace w;
  auto crashing = w.Open([](std::string_view at) {
    return at == failpoint::kAfterTableCommit ? Status::Unavailable("crash") : Status::OK();
  });
  ASSERT_TRUE(crashing->Write(Append("t", {2})).status().IsUnavailable());
  crashing.reset();  // the process is gone: nothing renews its lease
  ASSERT_EQ(w.Sidecars(), 1u);

  // Within the lease the unpublished version may be a live writer's.
  w.clock.AdvanceMicros(kLease / 2);
  Status young = w.ws->Write(Append("t", {3})).status();
  EXPECT_TRUE(young.IsFailedPrecondition()) << young;
  EXPECT_EQ(w.ws->SidecarsNotYetDue(kGrace).value(), 1);
  EXPECT_EQ(RowsOf(*w.ws, "t"), 1);

  // Past the lease, long before the grace period: the next write recovers
  // it (rolled forward: its table commit landed) and commits.
  w.clock.AdvanceMicros(kLease);
  EXPECT_EQ(w.ws->SidecarsNotYetDue(kGrace).value(), 0);
  ASSERT_TRUE(w.ws->Write(Append("t", {3})).ok());
  EXPECT_EQ(RowsOf(*w.ws, "t"), 3);
  EXPECT_EQ(w.Sidecars(), 0u);
  EXPECT_EQ(w.ws->Log().value()[1].actor, "loam:recovery");
}

TEST(SidecarLeaseTest, ALiveWritersLeaseIsRenewedAndNeverWrittenBack) {
  auto store = std::make_shared<MemoryObjectStore>();
  ManualClock clock{1'000'000'000};
  SidecarLeases leases(store, &clock, kLease);
  Sidecar s;
  s.operation_id = "op";
  s.created_micros = clock.NowMicros();
  auto lease_until = [&] {
    return DecodeSidecar(store->Get("ws/_recovery/op.json").value(), "op")
        .value()
        .lease_until_micros;
  };
  std::optional<SidecarLeases::Held> held;
  held.emplace(leases.PutAndHold("ws/_recovery/op.json", &s).value());
  EXPECT_EQ(s.lease_until_micros, clock.NowMicros() + kLease);
  EXPECT_EQ(lease_until(), s.lease_until_micros);

  clock.AdvanceMicros(kLease / 6);  // not a third over: left alone
  leases.RenewDue();
  EXPECT_EQ(lease_until(), s.lease_until_micros);
  clock.AdvanceMicros(kLease / 3);
  leases.RenewDue();
  EXPECT_EQ(lease_until(), clock.NowMicros() + kLease);
  // Renewed, it is not due although the first lease is over.
  clock.AdvanceMicros(kLease * 2 / 3);
  const Sidecar renewed = DecodeSidecar(store->Get("ws/_recovery/op.json").value(), "op").value();
  EXPECT_GT(SidecarDueAt(renewed, kGrace), clock.NowMicros());
  EXPECT_LT(s.lease_until_micros, clock.NowMicros());

  // Settled by recovery (deleted) while held: never put back.
  ASSERT_TRUE(store->Delete("ws/_recovery/op.json").ok());
  clock.AdvanceMicros(kLease);
  leases.RenewDue();
  EXPECT_TRUE(store->Get("ws/_recovery/op.json").status().IsNotFound());

  // Released: no longer renewed.
  Sidecar t = s;
  t.operation_id = "op2";
  held.emplace(leases.PutAndHold("ws/_recovery/op2.json", &t).value());
  held.reset();
  clock.AdvanceMicros(kLease);
  leases.RenewDue();
  EXPECT_EQ(
      DecodeSidecar(store->Get("ws/_recovery/op2.json").value(), "op2").value().lease_until_micros,
      t.lease_until_micros);
}

// A writer stalled past its lease (its clock, or a pause) has its sidecar
// recovered by another process while it runs: the write is rolled forward
// for it, and the writer, whose publish then finds its commit in the
// journal, reports it committed once.
TEST(SidecarLeaseTest, RecoveryOfALiveWriterPastItsLeaseIsSafe) {
  LeasedWorkspace w;
  auto other = w.Open();
  RecoveryReport seen;
  auto stalled = w.Open([&](std::string_view at) {
    if (at != failpoint::kAfterTableCommit) return Status::OK();
    w.clock.AdvanceMicros(kLease + 1);  // nothing renews in between
    Result<RecoveryReport> r = other->Recover(kGrace);
    if (r.ok()) seen = *r;
    return r.status();
  });
  Result<WriteResult> wrote = stalled->Write(Append("t", {2}));
  ASSERT_TRUE(wrote.ok()) << wrote.status();
  EXPECT_EQ(seen.rolled_forward, 1);
  EXPECT_EQ(RowsOf(*w.ws, "t"), 2);
  EXPECT_EQ(w.Sidecars(), 0u);
  int commits = 0;
  for (const GraphCommitInfo& c : w.ws->Log().value()) commits += c.id == wrote->commit_id;
  EXPECT_EQ(commits, 1);
  ASSERT_TRUE(w.ws->Write(Append("t", {3})).ok());
  EXPECT_EQ(RowsOf(*w.ws, "t"), 3);
}

TEST(SidecarLeaseTest, ASidecarIsDueAtItsLeaseOrGraceWhicheverIsFirst) {
  Sidecar s;
  s.created_micros = 100;
  EXPECT_EQ(SidecarDueAt(s, 50), 150);  // no lease: a build before leases wrote it
  s.lease_until_micros = 120;
  EXPECT_EQ(SidecarDueAt(s, 50), 120);
  s.lease_until_micros = 500;  // renewed past the grace period
  EXPECT_EQ(SidecarDueAt(s, 50), 150);
  Sidecar back = DecodeSidecar(EncodeSidecar(s), "k").value();
  EXPECT_EQ(back, s);
  // A malformed lease is ignored: the sidecar is due after the grace period.
  for (const std::string bad : {"-50", "\"x\"", "1e99"}) {
    std::string text = EncodeSidecar(s);
    text.replace(text.find("500"), 3, bad);
    Result<Sidecar> read = DecodeSidecar(text, "k");
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(SidecarDueAt(*read, 50), 150) << bad;
  }
}

}  // namespace
}  // namespace loam
