// A randomized model test (seeded, replayable with LOAM_MODEL_SEED): submissions,
// retries with the same and with other bodies, cancels, grant revokes,
// workers killed at every kind of step and restarted (the killed worker's
// pass goes on with the next run), and cleaner runs,
// checked against a simple model of what each run must end as.
#include <gtest/gtest.h>

#include <deque>
#include <random>

#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;

// Where a killed worker stops: before its commit (the resumed run decides
// again, on the grant it then finds) or after it (the run is committed).
const char* const kBeforeCommit[] = {"run.after_validate", "run.before_commit",
                                     "write.after_sidecar"};
const char* const kAfterCommit[] = {"write.after_table_commit", "write.after_publish",
                                    "worker.after_terminal"};

struct ModelRun {
  std::string key;
  std::string body;
  std::string run_id;
  std::vector<int64_t> ids;  // the rows it loads
  bool committed = false;    // a kill after the commit already decided it
  RunState expected = RunState::kQueued;
};

class ServiceModelTest : public ServiceTest {
 protected:
  void RunSeed(uint64_t seed) {
    SCOPED_TRACE("LOAM_MODEL_SEED=" + std::to_string(seed));
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };
    // Injected crashes are not a poison run: never give a run up here.
    options_.max_run_attempts = 1'000'000;
    const std::string p = AppendPipeline();
    std::vector<ModelRun> runs;
    std::deque<size_t> queue;  // model: non-terminal runs, oldest first
    bool granted = true;
    int64_t next_id = 1;
    std::set<int64_t> table;
    for (int step = 0; step < 80; ++step) {
      const size_t op = pick(10);
      if (op < 3 || runs.empty()) {  // a new submission
        ModelRun r;
        r.key = "k" + std::to_string(runs.size());
        std::string rows = "id,amount,note\n";
        for (uint64_t i = 0, n = 1 + pick(3); i < n; ++i) {
          r.ids.push_back(next_id);
          rows += std::to_string(next_id++) + ",1,x\n";
        }
        Result<std::string> upload = Upload(p, rows);
        if (!granted) {  // no grant, no upload
          EXPECT_TRUE(upload.status().Is(ErrorCode::kPermissionDenied)) << upload.status();
          continue;
        }
        ASSERT_TRUE(upload.ok()) << upload.status();
        r.body = Body(*upload);
        Result<Submission> s = Submit(p, r.key, r.body);
        ASSERT_TRUE(s.ok()) << s.status();
        ASSERT_FALSE(s->replayed);
        r.run_id = s->run.id;
        queue.push_back(runs.size());
        runs.push_back(std::move(r));
      } else if (op == 3) {  // a retry: the same run, no new work
        const ModelRun& r = runs[pick(runs.size())];
        Result<Submission> s = Submit(p, r.key, r.body);
        ASSERT_TRUE(s.ok()) << s.status();
        EXPECT_TRUE(s->replayed);
        EXPECT_EQ(s->run.id, r.run_id);
      } else if (op == 4) {  // the key with another body
        const ModelRun& r = runs[pick(runs.size())];
        Status s =
            Submit(p, r.key, r.body.substr(0, r.body.size() - 1) + R"(,"reload":true})").status();
        EXPECT_TRUE(s.Is(ErrorCode::kIdempotencyKeyReused)) << s;
      } else if (op == 5) {  // cancel
        const size_t i = pick(runs.size());
        ModelRun& r = runs[i];
        const bool queued =
            r.expected == RunState::kQueued && Run(r.run_id).state == RunState::kQueued;
        Result<RunInfo> c = Svc().CancelRun(Ctx("ada"), r.run_id);
        if (queued) {
          ASSERT_TRUE(c.ok()) << c.status();
          r.expected = RunState::kCancelled;
          std::erase(queue, i);
        } else {
          EXPECT_FALSE(c.ok());
        }
      } else if (op == 6) {  // grant revoked or given back
        granted = !granted;
        ASSERT_TRUE(ws_->SetGrant("orders", "ada",
                                  granted ? std::optional<Role>(Role::kWriter) : std::nullopt)
                        .ok());
      } else if (op == 7) {
        ASSERT_TRUE(Svc().RunCleanerOnce().ok());
      } else if (!queue.empty()) {  // a worker step, killed one time in three
        ModelRun& r = runs[queue.front()];
        const bool kill = pick(3) == 0;
        const bool after = pick(2) == 0;
        const std::string point = after ? kAfterCommit[pick(3)] : kBeforeCommit[pick(3)];
        bool fired = false;
        if (kill) {
          Restart([&fired, point](std::string_view at) {
            if (at != point || fired) return Status::OK();
            fired = true;
            return Status::Unavailable("killed at " + point);
          });
        }
        Result<bool> worked = Svc().RunWorkerOnce();
        if (kill) Restart(nullptr);
        const bool finished = fired && point == "worker.after_terminal";
        if (fired && !finished) {
          // A kill after the commit point leaves it committed (unless the
          // run failed before it got there: a revoked grant).
          if (after && granted) r.committed = true;
          // The worker went on with the next run, which ends as usual.
          if (worked.ok() && *worked && queue.size() > 1) {
            ModelRun& next = runs[queue[1]];
            next.expected = granted ? RunState::kSucceeded : RunState::kFailed;
            if (granted) table.insert(next.ids.begin(), next.ids.end());
            queue.erase(queue.begin() + 1);
            EXPECT_EQ(Run(next.run_id).state, next.expected) << next.run_id;
          }
          continue;  // the next worker step resumes the killed one
        }
        if (!finished) {
          ASSERT_TRUE(worked.ok()) << worked.status();
          ASSERT_TRUE(*worked);
        }
        r.expected = (r.committed || granted) ? RunState::kSucceeded : RunState::kFailed;
        if (r.expected == RunState::kSucceeded) table.insert(r.ids.begin(), r.ids.end());
        queue.pop_front();
        EXPECT_EQ(Run(r.run_id).state, r.expected) << r.run_id << " " << Run(r.run_id).error;
      }
    }
    // Drain what is left with the grant held.
    if (!granted) {
      ASSERT_TRUE(ws_->SetGrant("orders", "ada", Role::kWriter).ok());
    }
    for (size_t i : queue) {
      runs[i].expected = RunState::kSucceeded;
      table.insert(runs[i].ids.begin(), runs[i].ids.end());
    }
    Drain();
    int64_t succeeded = 0;
    for (const ModelRun& r : runs) {
      const ingest::RunRecord got = Run(r.run_id);
      EXPECT_EQ(got.state, r.expected) << r.run_id << " " << got.error;
      succeeded += got.state == RunState::kSucceeded;
    }
    EXPECT_EQ(RunCommits(), succeeded);  // each committed exactly once
    std::string want;
    for (int64_t id : table) want += std::to_string(id) + ":100 ";
    EXPECT_EQ(Contents(), want);
    ASSERT_TRUE(Svc().RunCleanerOnce().ok());
    EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
    EXPECT_EQ(CountUnder("_control/queue/"), 0);
    EXPECT_EQ(CountUnder("_control/cleanup/"), 0);
  }
};

TEST_F(ServiceModelTest, RandomHistoriesMatchTheModel) {
  if (const char* s = std::getenv("LOAM_MODEL_SEED"); s != nullptr && *s != '\0') {
    RunSeed(std::strtoull(s, nullptr, 10));
    return;
  }
  for (uint64_t seed : {1, 2, 3, 4, 5, 6, 7, 8}) {
    RunSeed(seed);
    if (HasFailure()) return;
    TearDown();
    SetUp();
  }
}

}  // namespace
}  // namespace loam::service
