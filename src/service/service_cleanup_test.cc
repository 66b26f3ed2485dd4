// The service's housekeeping: the cleaner (retries with backoff, a restart
// or a death mid-entry), the sweeper of abandoned uploads, and the expiry of
// idempotency and source records after their retention.
#include <gtest/gtest.h>

#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;

TEST_F(ServiceTest, TheCleanerRetriesWithBackoffAndSurvivesARestart) {
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  const std::string p = AppendPipeline();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  FaultRule rule = FaultRule::FailNth("staging deletes", MaskOf({ObjectOp::kDelete}), 1,
                                      Status::Unavailable("injected"), "ingestion-staging/");
  rule.times = FaultRule::kForever;
  faulty->AddRule(rule);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(a.run.id).state, RunState::kSucceeded);  // whatever cleanup does
  // The worker could not delete the inputs: they went to the cleaner.
  EXPECT_EQ(CountUnder("_control/cleanup/"), 1);
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  CleanupReport failed = Svc().RunCleanerOnce().value();
  EXPECT_EQ(failed.entries_failed, 1);
  EXPECT_EQ(Svc().RunCleanerOnce().value().entries_pending, 1);  // backing off
  clock_.AdvanceMicros(5'000'000);  // past the first backoff (at most 1 s)
  // The backlog runs on the service's clock against the entry's store time.
  EXPECT_GT(Svc().CleanupBacklog().value(), 4'000'000);
  EXPECT_EQ(Svc().RunCleanerOnce().value().entries_failed, 1);
  faulty->ClearRules();
  svc_.reset();  // a restart forgets the backoff, never the entry
  CleanupReport done = Svc().RunCleanerOnce().value();
  EXPECT_EQ(done.entries_done, 1);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  EXPECT_EQ(Svc().CleanupBacklog().value(), 0);
}

// The cleaner dies after deleting the staged objects, before its entry: the
// next cleaner finds the prefix empty and finishes. (The worker's own delete
// failed, so the inputs went to the cleaner.)
TEST_F(ServiceTest, ACleanerThatDiesBeforeItsEntryIsDeletedIsFinishedByTheNext) {
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  const std::string p = AppendPipeline();
  ASSERT_TRUE(Submit(p, "a", Body(Upload(p, kRows).value())).ok());
  faulty->AddRule(FaultRule::FailNth("worker delete", MaskOf({ObjectOp::kDelete}), 1,
                                     Status::Unavailable("injected"), "ingestion-staging/"));
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(faulty->Fired("worker delete"), 1u);
  faulty->AddRule(FaultRule::FailNth("entry delete", MaskOf({ObjectOp::kDelete}), 1,
                                     Status::Unavailable("killed"), "_control/cleanup/"));
  EXPECT_EQ(Svc().RunCleanerOnce().value().entries_failed, 1);
  EXPECT_EQ(faulty->Fired("entry delete"), 1u);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);  // the objects went first
  EXPECT_EQ(CountUnder("_control/cleanup/"), 1);
  svc_.reset();
  EXPECT_EQ(Svc().RunCleanerOnce().value().entries_done, 1);
  EXPECT_EQ(CountUnder("_control/cleanup/"), 0);
  EXPECT_EQ(CountUnder("_control/uploads/"), 0);
}

TEST_F(ServiceTest, BackoffGrowsAndIsJittered) {
  Cleaner c(store_, root_, &clock_);
  for (int n = 0; n < 12; ++n) {
    const int64_t cap = std::min<int64_t>(300'000'000, int64_t{1'000'000} << n);
    const int64_t b = c.BackoffMicros(n);
    EXPECT_GE(b, cap / 2) << n;
    EXPECT_LE(b, cap) << n;
  }
}

TEST_F(ServiceTest, TheSweeperRemovesOnlyAbandonedUploadsOfOldDays) {
  const std::string p = AppendPipeline();
  const int64_t now = clock_.NowMicros();
  clock_.SetMicros(now - 3 * 86'400'000'000LL);
  const std::string abandoned = Upload(p, kRows).value();
  const std::string queued = Upload(p, "id,amount,note\n8,1,x\n").value();
  const Submission q = Submit(p, "q", Body(queued)).value();  // still waiting 3 days later
  clock_.SetMicros(now);
  const std::string fresh = Upload(p, "id,amount,note\n9,1,x\n").value();
  SweepReport r = Svc().SweepStaging().value();
  EXPECT_EQ(r.days_visited, 1);
  EXPECT_EQ(r.objects_deleted, 1);
  EXPECT_EQ(r.objects_kept, 1);
  EXPECT_TRUE(Svc().SweepStaging().ok());  // idempotent
  EXPECT_EQ(CountUnder("ingestion-staging/"), 2);
  EXPECT_EQ(CountUnder("_control/uploads/"), 2);
  EXPECT_TRUE(Submit(p, "a", Body(abandoned)).status().Is(ErrorCode::kNotFound));
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(q.run.id).state, RunState::kSucceeded);
  EXPECT_TRUE(Submit(p, "f", Body(fresh)).ok());
}

TEST_F(ServiceTest, IdempotencyAndSourceRecordsExpireOnlyAfterRetention) {
  const std::string p = AppendPipeline();
  const Submission a =
      Submit(p, "a", Body(Upload(p, kRows).value(), R"("source":{"id":"x"})")).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Svc().SweepRecords().value(), 0);
  clock_.AdvanceMicros(options_.limits.idempotency_retention_seconds * 1'000'000 - 1'000'000);
  EXPECT_EQ(Svc().SweepRecords().value(), 0);  // never early
  EXPECT_TRUE(Submit(p, "a", Body(a.run.uploads[0], R"("source":{"id":"x"})")).value().replayed);
  clock_.AdvanceMicros(2'000'000);
  EXPECT_EQ(Svc().SweepRecords().value(), 2);  // the key and the source identity
  EXPECT_EQ(CountUnder("_control/requests/"), 0);
  EXPECT_EQ(CountUnder("_control/sources/"), 0);
}

}  // namespace
}  // namespace loam::service
