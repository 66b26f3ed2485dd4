#include "service/admission.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loam::service {
namespace {

constexpr int64_t kSecond = 1'000'000;

int64_t RetryAfterMillis(const Status& s) {
  return std::stoll(std::string(s.detail("retryAfterMillis")));
}

class AdmissionTest : public ::testing::Test {
 protected:
  AdmissionTest() : clock_(1'000 * kSecond) {
    limits_.principal_requests_per_second = 1e6;  // never the limit here
    limits_.principal_burst = 1e6;
    limits_.tiny_runs_per_minute = 1'000'000;
    limits_.max_concurrent_runs_per_pipeline = 1'000'000;
  }

  Status Admit(Admission& a, const std::string& key, const QueueLoad& load) {
    return a.Admit("ada", key, "p", 0, 1'000'000, load);
  }

  static QueueLoad Runs(int64_t n) {
    QueueLoad load;
    load.runs = n;
    return load;
  }

  ServiceLimits limits_;
  ManualClock clock_;
};

TEST_F(AdmissionTest, ACrowdRefusedAtOnceIsToldSuccessiveTimes) {
  limits_.max_queue_wait_seconds = 10;
  Admission a(limits_, &clock_, 1);
  a.RecordRun(1024, kSecond);       // one worker whose small runs take 1 s
  const QueueLoad full = Runs(11);  // 11 s of work ahead: over the 10 s bound
  std::vector<int64_t> told;
  for (int i = 0; i < 5; ++i) {
    Status s = Admit(a, "k" + std::to_string(i), full);
    ASSERT_TRUE(s.Is(ErrorCode::kOverloaded)) << s;
    EXPECT_EQ(s.detail("limit"), "maxQueueWait");
    told.push_back(RetryAfterMillis(s));
  }
  // Each client waits for the queue and for the clients refused before it:
  // one run (1 s, one worker) apart, not all the same wait.
  for (int i = 0; i < 5; ++i) EXPECT_EQ(told[i], (i + 1) * 1000) << i;
  EXPECT_EQ(a.Waiting(), 5u);
  // Asking again keeps the place: the same answer, not one at the end.
  EXPECT_EQ(RetryAfterMillis(Admit(a, "k2", full)), 3000);
  EXPECT_EQ(a.Waiting(), 5u);
}

// With a small-run lane, a small run waits for the small runs ahead of it
// over the lane's workers, and a large one for the large runs over the
// general workers: neither is refused for the other lane's queue.
TEST_F(AdmissionTest, EachLaneIsPricedByItsOwnQueueAndWorkers) {
  limits_.max_queue_wait_seconds = 10;
  constexpr int64_t kLaneBytes = 1 << 20;
  Admission a(limits_, &clock_, /*workers=*/2, /*small_run_workers=*/16, kLaneBytes);
  a.RecordRun(1024, 3 * kSecond);  // small runs take 3 s each
  QueueLoad load;
  load.runs = load.small_runs = 40;  // 40 x 3 s over 16 workers: 7.5 s
  EXPECT_TRUE(a.Admit("ada", "small", "p", 1024, 1'000'000, load).ok());
  // Over two workers the same queue would be 60 s: a lane-blind estimate
  // refuses it.
  Admission blind(limits_, &clock_, 2);
  blind.RecordRun(1024, 3 * kSecond);
  Status refused = blind.Admit("ada", "small", "p", 1024, 1'000'000, load);
  ASSERT_TRUE(refused.Is(ErrorCode::kOverloaded)) << refused;
  EXPECT_EQ(refused.detail("limit"), "maxQueueWait");
  // A large run waits for no small run: none large is queued.
  EXPECT_TRUE(a.Admit("ada", "large", "p", 8 * kLaneBytes, 1'000'000, load).ok());
  // Seven large runs ahead (7 x 3 s over 2 workers: 10.5 s) refuse a large
  // run, but not a small one.
  load.runs += 7;
  Status large = a.Admit("ada", "large2", "p", 8 * kLaneBytes, 1'000'000, load);
  ASSERT_TRUE(large.Is(ErrorCode::kOverloaded)) << large;
  EXPECT_EQ(large.detail("limit"), "maxQueueWait");
  EXPECT_TRUE(a.Admit("ada", "small2", "p", 1024, 1'000'000, load).ok());
}

TEST_F(AdmissionTest, RefusedClientsAreAdmittedInTheirOrderBeforeNewcomers) {
  limits_.max_queued_runs = 3;
  Admission a(limits_, &clock_, 1);  // no run measured: a run is taken to last 1 s
  ASSERT_TRUE(Admit(a, "first", Runs(3)).Is(ErrorCode::kOverloaded));
  ASSERT_TRUE(Admit(a, "second", Runs(3)).Is(ErrorCode::kOverloaded));
  // The queue drained to room for one: a newcomer finds both ahead of it.
  Status newcomer = Admit(a, "newcomer", Runs(2));
  ASSERT_TRUE(newcomer.Is(ErrorCode::kOverloaded)) << newcomer;
  EXPECT_NE(newcomer.message().find("2 runs are queued and 2 refused before it"), std::string::npos)
      << newcomer;
  // The second is still behind the first, who takes the room.
  EXPECT_TRUE(Admit(a, "second", Runs(2)).Is(ErrorCode::kOverloaded));
  EXPECT_TRUE(Admit(a, "first", Runs(2)).ok());
  // The queue is full again until one more run finishes.
  EXPECT_TRUE(Admit(a, "second", Runs(3)).Is(ErrorCode::kOverloaded));
  EXPECT_TRUE(Admit(a, "second", Runs(2)).ok());
  EXPECT_EQ(a.Waiting(), 1u);  // the newcomer
  EXPECT_TRUE(Admit(a, "newcomer", Runs(3)).Is(ErrorCode::kOverloaded));
  EXPECT_TRUE(Admit(a, "newcomer", Runs(2)).ok());
  EXPECT_EQ(a.Waiting(), 0u);
}

TEST_F(AdmissionTest, ARunThatCanNeverFitIsRefusedForGoodAndHoldsNoPlace) {
  limits_.max_queued_bytes = 1'000;
  Admission a(limits_, &clock_, 1);
  Status never = a.Admit("ada", "huge", "p", 1'001, 100, Runs(0));
  EXPECT_TRUE(never.Is(ErrorCode::kLimitExceeded)) << never;
  EXPECT_EQ(never.detail("limit"), "maxQueuedBytes");
  EXPECT_TRUE(never.detail("retryAfterMillis").empty()) << never;
  EXPECT_EQ(a.Waiting(), 0u);
  EXPECT_TRUE(a.Admit("ada", "fits", "p", 1'000, 100, Runs(0)).ok());
}

TEST_F(AdmissionTest, ARequestRefusedByALaterRoomLeavesTheEarlierLine) {
  limits_.max_queued_runs = 2;
  Admission a(limits_, &clock_, 1);
  QueueLoad load = Runs(2);
  load.runs_per_pipeline["p"] = 2;
  ASSERT_EQ(a.Admit("ada", "x", "p", 0, 2, load).detail("limit"), "maxQueuedRuns");
  ASSERT_EQ(a.Waiting(), 1u);
  // The queue has room again, but p is still busy: x now waits in p's line
  // only, and holds back nobody who wants the queue's room for another
  // pipeline.
  load = Runs(1);
  load.runs_per_pipeline["p"] = 1;
  ASSERT_EQ(a.Admit("ada", "x", "p", 0, 1, load).detail("limit"), "maxConcurrentRuns");
  EXPECT_EQ(a.Waiting(), 1u);
  EXPECT_TRUE(a.Admit("ada", "y", "q", 0, 1, load).ok());
}

TEST_F(AdmissionTest, RefusedRequestsCostTheirPrincipalTokens) {
  limits_.principal_burst = 3;
  limits_.principal_requests_per_second = 0.001;
  limits_.max_queued_runs = 1;
  Admission a(limits_, &clock_, 1);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Admit(a, "k" + std::to_string(i), Runs(1)).detail("limit"), "maxQueuedRuns");
  }
  EXPECT_EQ(Admit(a, "k3", Runs(0)).detail("limit"), "principalRequestRate");
  EXPECT_EQ(a.Waiting(), 3u);
}

TEST_F(AdmissionTest, APlaceIsKeptUntilAWhileAfterItsTimeThenGivenUp) {
  limits_.max_queued_runs = 1;
  Admission a(limits_, &clock_, 1);
  ASSERT_TRUE(Admit(a, "absent", Runs(1)).Is(ErrorCode::kOverloaded));  // told 1 s
  Status behind = Admit(a, "present", Runs(1));
  ASSERT_TRUE(behind.Is(ErrorCode::kOverloaded));
  EXPECT_EQ(RetryAfterMillis(behind), 2000);
  // Just before the hold runs out the absent client still stands ahead.
  clock_.AdvanceMicros(1 * kSecond + WaitingLine::kHoldAfterDueMicros);
  EXPECT_TRUE(Admit(a, "present", Runs(0)).Is(ErrorCode::kOverloaded));
  clock_.AdvanceMicros(1);
  EXPECT_TRUE(Admit(a, "present", Runs(0)).ok());
  // Coming back late, the absent client starts again at the end.
  Status late = Admit(a, "absent", Runs(1));
  EXPECT_EQ(RetryAfterMillis(late), 1000);
  EXPECT_EQ(a.Waiting(), 1u);
}

TEST_F(AdmissionTest, ThePrincipalRateTakesNoPlace) {
  limits_.principal_burst = 1;
  limits_.principal_requests_per_second = 0.001;
  Admission a(limits_, &clock_, 1);
  ASSERT_TRUE(Admit(a, "one", Runs(0)).ok());
  Status rate = Admit(a, "two", Runs(0));
  EXPECT_EQ(rate.detail("limit"), "principalRequestRate") << rate;
  EXPECT_EQ(a.Waiting(), 0u);
}

TEST_F(AdmissionTest, APipelinesConcurrencyKeepsALine) {
  Admission a(limits_, &clock_, 1);
  a.RecordRun(1024, kSecond);
  QueueLoad load = Runs(4);  // 4 s of queue, 2 of its runs from pipeline p
  load.runs_per_pipeline["p"] = 2;
  std::vector<int64_t> told;
  for (int i = 0; i < 3; ++i) {
    Status s = a.Admit("ada", "k" + std::to_string(i), "p", 0, 2, load);
    ASSERT_EQ(s.detail("limit"), "maxConcurrentRuns") << s;
    told.push_back(RetryAfterMillis(s));
  }
  // One of p's runs finishes about every 4 s ÷ 2: each client one more apart.
  EXPECT_EQ(told, (std::vector<int64_t>{2000, 4000, 6000}));
  load.runs_per_pipeline["p"] = 1;
  Status newcomer = a.Admit("ada", "new", "p", 0, 2, load);
  EXPECT_EQ(newcomer.detail("limit"), "maxConcurrentRuns") << newcomer;
  EXPECT_NE(newcomer.message().find("1 runs not finished and 3 refused before it"),
            std::string::npos)
      << newcomer;
  EXPECT_TRUE(a.Admit("ada", "k0", "p", 0, 2, load).ok());
  EXPECT_EQ(a.Waiting(), 3u);
  // Another pipeline has its own line.
  EXPECT_TRUE(a.Admit("ada", "q0", "q", 0, 2, load).ok());
}

TEST_F(AdmissionTest, ATinyRunWindowKeepsALine) {
  limits_.tiny_runs_per_minute = 3;
  Admission a(limits_, &clock_, 1);
  for (int i = 0; i < 3; ++i) {  // tiny runs at 0, 10 and 20 s
    ASSERT_TRUE(Admit(a, "t" + std::to_string(i), Runs(0)).ok());
    clock_.AdvanceMicros(10 * kSecond);
  }
  clock_.AdvanceMicros(20 * kSecond);  // now 50 s: the first leaves the window in 10 s
  std::vector<int64_t> told;
  for (int i = 0; i < 4; ++i) {
    Status s = Admit(a, "k" + std::to_string(i), Runs(0));
    ASSERT_EQ(s.detail("limit"), "tinyRunsPerMinute") << s;
    told.push_back(RetryAfterMillis(s));
  }
  // Each waits for the next slot to free; the fourth for the first slot's
  // next turn, a window after the first client takes it.
  EXPECT_EQ(told, (std::vector<int64_t>{10'000, 20'000, 30'000, 70'000}));
  clock_.AdvanceMicros(10 * kSecond);
  EXPECT_TRUE(Admit(a, "newcomer", Runs(0)).Is(ErrorCode::kOverloaded));
  EXPECT_TRUE(Admit(a, "k1", Runs(0)).Is(ErrorCode::kOverloaded));  // not its turn yet
  EXPECT_TRUE(Admit(a, "k0", Runs(0)).ok());
}

TEST_F(AdmissionTest, BytesAheadCountAgainstTheByteCeiling) {
  limits_.max_queued_bytes = 10'000;
  Admission a(limits_, &clock_, 1);
  QueueLoad load;
  load.runs = 1;
  load.bytes = 9'000;
  Status big = a.Admit("ada", "big", "p", 4'000, 100, load);
  ASSERT_EQ(big.detail("limit"), "maxQueuedBytes") << big;
  load.bytes = 0;  // drained; the refused 4,000 bytes stand ahead
  Status small = a.Admit("ada", "small", "p", 7'000, 100, load);
  EXPECT_EQ(small.detail("limit"), "maxQueuedBytes") << small;
  EXPECT_TRUE(a.Admit("ada", "big", "p", 4'000, 100, load).ok());
}

// Clients that wait exactly what they are told, against a queue one worker
// drains at one run a second, while newcomers keep arriving at twice that
// rate: every refused client is admitted on its first return, in the order
// it was first refused, and the last is told the time it needed.
TEST_F(AdmissionTest, UnderSteadyOverloadEveryRetryIsAdmittedOnItsFirstReturn) {
  limits_.max_queue_wait_seconds = 10;
  Admission a(limits_, &clock_, 1);
  a.RecordRun(1024, kSecond);  // one worker whose small runs take 1 s
  const int64_t start = clock_.NowMicros();
  int64_t queued = 10;
  struct Client {
    std::string key;
    int64_t back_at = 0;  // 0: not refused
    int refusals = 0;
  };
  std::vector<Client> clients;
  std::vector<std::string> admitted;
  std::vector<std::string> refused_order;
  for (int64_t ms = 0; ms < 60'000; ms += 10) {
    const int64_t now = start + ms * 1000;
    clock_.SetMicros(now);
    if (ms > 0 && ms % 1000 == 0) --queued;  // the worker finishes a run
    const auto ask = [&](Client& c) {
      Status s = Admit(a, c.key, Runs(queued));
      if (s.ok()) {
        ++queued;
        admitted.push_back(c.key);
        c.back_at = -1;
        return;
      }
      ASSERT_EQ(s.detail("limit"), "maxQueueWait") << s;
      if (c.refusals++ == 0) refused_order.push_back(c.key);
      c.back_at = now + RetryAfterMillis(s) * 1000;
    };
    for (Client& c : clients) {
      if (c.back_at > 0 && c.back_at <= now) ask(c);
    }
    if (ms % 500 == 0) {  // a newcomer twice a second
      clients.push_back(Client{"c" + std::to_string(clients.size())});
      ask(clients.back());
    }
  }
  ASSERT_GT(refused_order.size(), 50u);
  int waited_out = 0;
  for (const Client& c : clients) {
    if (c.back_at == -1 && c.refusals > 0) {
      ++waited_out;
      EXPECT_EQ(c.refusals, 1) << c.key << " was refused again after waiting";
    }
  }
  EXPECT_GT(waited_out, 40);
  // Admitted in the order first refused (the first ones needed no wait).
  std::vector<std::string> after_refusal;
  for (const std::string& k : admitted) {
    for (const std::string& r : refused_order) {
      if (r == k) after_refusal.push_back(k);
    }
  }
  EXPECT_EQ(after_refusal, std::vector<std::string>(refused_order.begin(),
                                                    refused_order.begin() + after_refusal.size()));
}

}  // namespace
}  // namespace loam::service
