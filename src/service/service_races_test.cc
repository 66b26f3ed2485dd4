// Races, rights and anchors: concurrent admissions never pass a limit; a
// stalled submission cannot make a second run for its key;
// additive and revert rights are checked again in the commit; a cancel that
// loses to a worker leaves its inputs alone; a cleanup entry keeps its first
// age; the sweeper reads upload ids only where staging puts them; uploads
// never submitted are capped per principal and swept after their expiry.
#include <atomic>
#include <thread>

#include "io/counting_object_store.h"
#include "service/cleanup.h"
#include "service/run_queue.h"
#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;

// Eight handlers submit at once, each reading the queue slowly: the decision
// and its count are one step, so no limit is passed.
TEST_F(ServiceTest, ConcurrentSubmissionsNeverAdmitPastALimit) {
  options_.limits.max_queued_runs = 3;
  options_.limits.max_concurrent_runs_per_pipeline = 2;
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  // p1 meets its concurrency limit (2), p2 the queue's (3, p1's runs in it).
  for (const auto& [name, quota] : {std::pair{std::string("p1"), 2}, {"p2", 1}}) {
    const std::string pipeline = name;
    const int admits = quota;
    SCOPED_TRACE(pipeline);
    const std::string p = AppendPipeline(pipeline);
    std::vector<std::string> uploads;
    for (int i = 0; i < 8; ++i) {
      uploads.push_back(Upload(p, "id,amount,note\n" + std::to_string(i) + ",1,x\n").value());
    }
    // Slow listings widen the window between reading the queue and counting.
    faulty->SetLatency(MaskOf({ObjectOp::kList}), std::chrono::milliseconds(20), {});
    std::atomic<int> admitted = 0, refused = 0;
    std::vector<std::thread> handlers;
    for (int i = 0; i < 8; ++i) {
      handlers.emplace_back([&, i] {
        Result<Submission> s = Submit(p, pipeline + std::to_string(i), Body(uploads[i]));
        if (s.ok()) {
          ++admitted;
        } else if (s.status().Is(ErrorCode::kOverloaded)) {
          ++refused;
        } else {
          ADD_FAILURE() << s.status();
        }
      });
    }
    for (std::thread& t : handlers) t.join();
    faulty->SetLatency(MaskOf({ObjectOp::kList}), {}, {});
    EXPECT_EQ(admitted.load(), admits);
    EXPECT_EQ(refused.load(), 8 - admits);
  }
  EXPECT_EQ(CountUnder("_control/queue/"), 3);
}

// The additive flag, and the admin role of whoever configured the additive
// pipeline, are checked again in the commit: revoked after the table's data
// is written, the run fails and the table keeps its schema and rows.
TEST_F(ServiceTest, AdditiveRightsRevokedBeforeThePublishFailTheRun) {
  std::string revoke;
  bool armed = false;
  Restart([&](std::string_view at) -> Status {
    if (at != loam::failpoint::kAfterTableCommit || !armed) return Status::OK();
    armed = false;  // an admin acts between the table commit and the publish
    auto other = WorkspaceEngine::Open(store_, root_).value();
    return revoke == "flag" ? other->SetAdditiveSchema("orders", false, "owner")
                            : other->SetGrant("orders", "adm", Role::kWriter);
  });
  for (const std::string mode : {"flag", "admin"}) {
    SCOPED_TRACE(mode);
    revoke = mode;
    ASSERT_TRUE(ws_->SetGrant("orders", "adm", Role::kAdmin).ok());
    ASSERT_TRUE(ws_->SetAdditiveSchema("orders", true, "owner").ok());
    const std::string p = MakePipeline(R"({"name":"add-)" + mode +
                                           R"(","table":"orders","format":"csv",
        "schemaPolicy":{"mode":"additive","addColumns":[{"name":"region","type":"string"}]}})",
                                       "adm");
    const std::string upload = Upload(p, "id,amount,note,region\n2,2,b,eu\n").value();
    const int64_t schema_version = ws_->Current().value().tables.at("orders").def.schema_version;
    const Submission a = Submit(p, "a-" + mode, Body(upload)).value();
    armed = true;
    EXPECT_EQ(Drain(), 1);
    EXPECT_FALSE(armed);
    EXPECT_EQ(Run(a.run.id).state, RunState::kFailed);
    EXPECT_EQ(Run(a.run.id).error_code, "permission_denied") << Run(a.run.id).error;
    const TableState t = ws_->Current().value().tables.at("orders");
    EXPECT_EQ(t.def.schema_version, schema_version);
    EXPECT_EQ(t.def.schema.IndexOf("region"), -1);
    EXPECT_EQ(Contents(), "");
  }
}

// A revert tells nothing about a run to a caller without the right, and a
// replace's revert needs admin in the commit itself, not only before it.
TEST_F(ServiceTest, RevertAuthorizesFirstAndAReplacesRevertNeedsAdminInTheCommit) {
  const std::string p =
      MakePipeline(R"({"name":"r","table":"orders","format":"csv","mode":"replace"})", "adm");
  const Submission good = Submit(p, "g", Body(Upload(p, kRows, "adm").value()), "adm").value();
  const Submission bad =
      Submit(p, "b", Body(Upload(p, "id,amount,note\nx,1,y\n", "adm").value()), "adm").value();
  EXPECT_EQ(Drain(), 2);
  ASSERT_EQ(Run(bad.run.id).state, RunState::kFailed);
  Status reader = Svc().RevertRun(Ctx("rex"), bad.run.id).status();
  EXPECT_TRUE(reader.Is(ErrorCode::kPermissionDenied)) << reader;
  Status writer = Svc().RevertRun(Ctx("ada"), good.run.id).status();
  EXPECT_TRUE(writer.Is(ErrorCode::kPermissionDenied)) << writer;

  bool armed = true;
  Restart([&](std::string_view at) -> Status {
    if (at != loam::failpoint::kAfterTableCommit || !armed) return Status::OK();
    armed = false;  // adm is demoted between the restore and its publish
    return WorkspaceEngine::Open(store_, root_).value()->SetGrant("orders", "adm", Role::kWriter);
  });
  Status demoted = Svc().RevertRun(Ctx("adm"), good.run.id).status();
  EXPECT_FALSE(armed);
  EXPECT_TRUE(demoted.Is(ErrorCode::kPermissionDenied)) << demoted;
  EXPECT_EQ(Contents(), "1:150 2:250 ");
}

// A submission stalls after claiming its upload, long enough for the sweeper
// to release its key; the client's retry creates the run. When the stalled
// submission wakes, the fence the sweeper left stops it: one key, one run.
TEST_F(ServiceTest, AStalledSubmissionCannotCreateASecondRunForItsKey) {
  Result<Submission> retry = Status::Internal("not run");
  bool stall = false;
  std::string p, body;
  options_.failpoint = [&](std::string_view at) {
    if (at == failpoint::kSubmitAfterClaimUploads && stall) {
      stall = false;
      clock_.AdvanceMicros(11 * options_.in_flight_grace_micros);
      EXPECT_EQ(Svc().SweepRecords().value(), 1);  // the reservation looks abandoned
      retry = Submit(p, "k", body);
    }
    return Status::OK();
  };
  p = AppendPipeline();
  body = Body(Upload(p, kRows).value());
  stall = true;
  Result<Submission> stalled = Submit(p, "k", body);
  ASSERT_TRUE(retry.ok()) << retry.status();
  ASSERT_TRUE(stalled.ok()) << stalled.status();
  EXPECT_NE(stalled->run.id, retry->run.id);
  EXPECT_EQ(stalled->run.state, "cancelled");  // the fence, not a run
  EXPECT_NE(stalled->run.error.find("abandoned"), std::string::npos) << stalled->run.error;
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(retry->run.id).state, RunState::kSucceeded);
  EXPECT_EQ(RunCommits(), 1);
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  EXPECT_EQ(Submit(p, "k", body).value().run.id, retry->run.id);  // the key names the retry's
}

// The worker claims the run between the cancel's read and its
// compare-and-swap: the cancel loses, and no cleanup entry may exist for the
// run the worker now loads.
// A cancel whose swap loses to a worker's claim asks that worker to stop
// instead: the inputs stay until the run ends, and the run ends cancelled.
TEST_F(ServiceTest, ACancelThatLosesToAWorkersClaimAsksTheWorkerToStop) {
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  const std::string p = AppendPipeline();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  ingest::RunStore runs(store_, root_);
  faulty->AddRule(FaultRule::HookAt(
      "worker claims", MaskOf({ObjectOp::kPutIfMatch}), 1,
      [&] {
        std::string etag;
        ingest::RunRecord r = runs.Get(a.run.id, &etag).value();
        r.state = RunState::kValidating;
        r.lease_owner = "another worker";
        r.lease_expires_micros = Clock::System()->NowMicros() + 60'000'000;
        ASSERT_TRUE(runs.Update(r, &etag).ok());
      },
      "_control/runs/" + a.run.id));
  Result<RunInfo> asked = Svc().CancelRun(Ctx("ada"), a.run.id);
  ASSERT_TRUE(asked.ok()) << asked.status();
  EXPECT_EQ(faulty->Fired("worker claims"), 1u);
  EXPECT_FALSE(asked->terminal);
  EXPECT_EQ(asked->state, "validating");
  EXPECT_EQ(asked->cancel_requested_by, "ada");
  EXPECT_EQ(CountUnder("_control/cleanup/"), 0);
  ASSERT_TRUE(Svc().RunCleanerOnce().ok());
  EXPECT_EQ(CountUnder("ingestion-staging/"), 1);
  // That worker dies; the one that takes the run over honours the request.
  std::string etag;
  ingest::RunRecord held = runs.Get(a.run.id, &etag).value();
  held.lease_expires_micros = Clock::System()->NowMicros() - 1;
  ASSERT_TRUE(runs.Update(held, &etag).ok());
  EXPECT_EQ(Drain(), 1);
  const ingest::RunRecord done = Run(a.run.id);
  EXPECT_EQ(done.state, RunState::kCancelled);
  EXPECT_EQ(done.error, "cancelled by ada while validating; nothing was written");
  ASSERT_TRUE(Svc().RunCleanerOnce().ok());
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  EXPECT_EQ(Contents(), "");
  EXPECT_EQ(RunCommits(), 0);
}

// A repeated enqueue keeps the entry as first written (and so its age).
TEST_F(ServiceTest, ACleanupEntryIsWrittenOnceAndKeepsItsFirstContent) {
  Cleaner c(store_, root_, &clock_);
  CleanupEntry e{"01ARZ3NDEKTSV4RRFFQ69G5FAV", {}, {"01ARZ3NDEKTSV4RRFFQ69G5FAW"}};
  ASSERT_TRUE(c.Enqueue(e).ok());
  const std::string key = root_ + "/_control/cleanup/" + e.run_id + ".json";
  ObjectMeta first;
  const std::string text = store_->Get(key, &first).value();
  e.upload_ids.push_back("01ARZ3NDEKTSV4RRFFQ69G5FAX");
  ASSERT_TRUE(c.Enqueue(e).ok());
  ObjectMeta again;
  EXPECT_EQ(store_->Get(key, &again).value(), text);
  EXPECT_EQ(again.etag, first.etag);
}

// A cleanup entry of the wrong shape (another writer's bug, a damaged
// object) fails its pass with data_loss and stays; it never stops the
// process (a non-string prefix used to throw out of the pass), and the
// entries next to it are still cleaned.
TEST_F(ServiceTest, AMalformedCleanupEntryFailsAloneAndStays) {
  Cleaner c(store_, root_, &clock_);
  const std::string dir = root_ + "/_control/cleanup/";
  for (const char* bad : {R"({"format":1,"runId":"a","prefixes":5,"uploads":[]})",
                          R"({"format":1,"runId":"b","prefixes":[],"uploads":[7]})",
                          R"({"format":1,"runId":"c","prefixes":[]})", R"([1,2])",
                          R"({"format":1.5e300,"runId":"d","prefixes":[],"uploads":[]})"}) {
    ASSERT_TRUE(store_->Put(dir + NewUlidString() + ".json", bad).ok());
  }
  ASSERT_TRUE(c.Enqueue({"01ARZ3NDEKTSV4RRFFQ69G5FAV", {}, {"01ARZ3NDEKTSV4RRFFQ69G5FAW"}}).ok());
  CleanupReport r = c.RunOnce().value();
  EXPECT_EQ(r.entries_failed, 5);
  EXPECT_EQ(r.entries_done, 1);
  EXPECT_EQ(CountUnder("_control/cleanup/"), 5);
  EXPECT_TRUE(DecodeCleanupEntry(R"({"format":1,"runId":"a","prefixes":5,"uploads":[]})")
                  .status()
                  .IsDataLoss());
}

// A workspace whose root holds "/uploads/": the sweeper must still find the
// upload id in the staging layout, so a queued run's input stays.
TEST_F(ServiceTest, TheSweeperFindsUploadIdsOnlyInTheStagingLayout) {
  InitWorkspace("sweep/uploads/" + NewUlidString());
  const std::string p = AppendPipeline();
  const int64_t now = clock_.NowMicros();
  clock_.SetMicros(now - 3 * 86'400'000'000LL);
  ASSERT_TRUE(Upload(p, kRows).ok());  // abandoned
  const Submission q = Submit(p, "q", Body(Upload(p, "id,amount,note\n8,1,x\n").value())).value();
  clock_.SetMicros(now);
  SweepReport r = Svc().SweepStaging().value();
  EXPECT_EQ(r.objects_deleted, 1);
  EXPECT_EQ(r.objects_kept, 1);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(q.run.id).state, RunState::kSucceeded);
}

// Uploads handed out and never submitted: a principal holds at most the cap
// (refused with a retry-after to the earliest expiry, others unaffected), a
// submission frees its place, and the sweep removes the records of uploads
// never submitted (their bytes may never have come) a staging grace after
// their expiry, with their index entries.
TEST_F(ServiceTest, UploadsNeverSubmittedAreCappedPerPrincipalAndSwept) {
  options_.limits.max_outstanding_uploads_per_principal = 2;
  const std::string p = AppendPipeline();
  UploadRequest never;
  never.size = 10;
  const std::string a = Svc().CreateUpload(Ctx("ada"), p, never).value().upload_id;
  const std::string b = Upload(p, kRows).value();
  Result<UploadTicket> third = Svc().CreateUpload(Ctx("ada"), p, never);
  ASSERT_FALSE(third.ok());
  EXPECT_EQ(third.status().error_code(), ErrorCode::kOverloaded) << third.status();
  EXPECT_EQ(third.status().detail("limit"), "maxOutstandingUploads");
  EXPECT_EQ(third.status().detail("retryAfterMillis"), "3600000");  // a's expiry, 1 h away
  EXPECT_NE(third.status().message().find("principal 'ada' holds 2 uploads not yet submitted"),
            std::string::npos)
      << third.status();
  EXPECT_TRUE(Svc().CreateUpload(Ctx("bob"), p, never).ok());  // a cap per principal
  ASSERT_TRUE(Submit(p, "k", Body(b)).ok());
  const std::string c = Svc().CreateUpload(Ctx("ada"), p, never).value().upload_id;
  UploadStore records(store_, root_);
  EXPECT_EQ(Svc().SweepRecords().value(), 0);  // nothing expired yet
  clock_.AdvanceMicros(3600'000'000LL + options_.limits.staging_grace_seconds * 1'000'000 - 1);
  EXPECT_EQ(Svc().SweepRecords().value(), 0);  // never before the grace has passed
  clock_.AdvanceMicros(2);
  EXPECT_EQ(Svc().SweepRecords().value(), 3);  // a, c and bob's
  EXPECT_TRUE(records.Get(a).status().IsNotFound());
  EXPECT_TRUE(records.Get(c).status().IsNotFound());
  EXPECT_EQ(records.Get(b).value().run_id.empty(), false);  // submitted: its run's to clean
  EXPECT_TRUE(store_->ListAll(root_ + "/_control/upload-index/").value().empty());
}

// What a poll costs does not grow with the queue: with 1,000 queued runs and
// 10 pipelines, GetRun of a queued run reads its record and, once per queue
// view, lists the queue; ListPipelines reads one snapshot, not one per
// pipeline.
TEST_F(ServiceTest, PollsCostTheSameWithAThousandQueuedRuns) {
  options_.queue_view_micros = 60'000'000;      // the manual clock stays inside one view
  options_.pause_check_micros = 3'600'000'000;  // each pipeline's pause read once
  auto counting = std::make_shared<CountingObjectStore>(store_);
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  ws_ = WorkspaceEngine::Open(counting, root_, wo).value();
  std::vector<std::string> pipelines;
  for (int i = 0; i < 10; ++i) pipelines.push_back(AppendPipeline("p" + std::to_string(i)));
  ingest::RunStore runs(store_, root_);
  RunQueue queue(store_, root_);
  ingest::RunRequest req;
  req.principal = "ada";
  std::vector<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    ingest::RunRecord r;
    r.id = NewUlidString();
    r.request = req.ToJson();
    r.pipeline_id = pipelines[i % 10];
    r.table_sid = ws_->Current().value().Find("orders")->def.sid;
    std::string etag;
    ASSERT_TRUE(runs.Create(r, &etag).ok());
    ASSERT_TRUE(queue.Enqueue(r.id, r.pipeline_id, 10).ok());
    ids.push_back(r.id);
  }
  counting->Reset();
  EXPECT_EQ(Svc().GetRun(Ctx("ada"), ids[999]).value().queue_position, 999);
  EXPECT_LE(counting->Snapshot().total.count(ObjectOp::kList), 2u);  // the view: 1,000 entries
  counting->Reset();
  for (int i : {0, 500, 998}) {
    EXPECT_EQ(Svc().GetRun(Ctx("ada"), ids[i]).value().queue_position, i);
  }
  IoCounters polls = counting->Snapshot().total;
  EXPECT_EQ(polls.count(ObjectOp::kList), 0u) << polls.ToString();
  EXPECT_EQ(polls.reads(), 3u) << polls.ToString();  // one record each
  counting->Reset();
  EXPECT_EQ(Svc().ListPipelines(Ctx("ada")).value().size(), 10u);
  IoCounters listing = counting->Snapshot().total;
  // The pipelines (a LIST and a GET each) and one snapshot (a LIST of the
  // manifest's versions and a few GETs), not ten.
  EXPECT_LE(listing.count(ObjectOp::kList), 2u) << listing.ToString();
  EXPECT_LE(listing.reads(), 10u + 8u) << listing.ToString();

  // Another process holds every run: a worker's first poll reads each
  // record once (and each pipeline's pause); later polls, until those
  // leases end, read none.
  const int64_t held_until = Clock::System()->NowMicros() + 3'600'000'000;
  for (const std::string& id : ids) {
    std::string etag;
    ingest::RunRecord r = runs.Get(id, &etag).value();
    r.lease_owner = "another-process";
    r.lease_expires_micros = held_until;
    ASSERT_TRUE(runs.Update(r, &etag).ok());
  }
  counting->Reset();
  EXPECT_FALSE(Svc().RunWorkerOnce().value());
  EXPECT_EQ(counting->Snapshot().total.count(ObjectOp::kGet), 1000u + 10u)
      << counting->Snapshot().total.ToString();
  counting->Reset();
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Svc().RunWorkerOnce().value());
  IoCounters idle = counting->Snapshot().total;
  EXPECT_EQ(idle.count(ObjectOp::kGet), 0u) << idle.ToString();
  // The queue, a page of 1,000 each: at most two LISTs per poll, since a
  // store may answer a full page as truncated and then an empty one (RGW
  // sometimes does), never one per run.
  EXPECT_LE(idle.count(ObjectOp::kList), 6u) << idle.ToString();
}

// Workers work through one listing of the queue: draining a backlog lists
// the queue a few times, not once per run (a LIST per run, each of the whole
// backlog, made a deep queue quadratic).
TEST_F(ServiceTest, DrainingABacklogListsTheQueueOncePerListing) {
  options_.worker_listing_micros = 3'600'000'000;
  options_.limits.max_concurrent_runs_per_pipeline = 100;
  auto counting = std::make_shared<CountingObjectStore>(store_, /*prefix_depth=*/3);
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  ws_ = WorkspaceEngine::Open(counting, root_, wo).value();
  const std::string pipeline = AppendPipeline();
  constexpr int kRuns = 30;
  for (int i = 0; i < kRuns; ++i) {
    const std::string id = std::to_string(i + 1);
    std::string upload = Upload(pipeline, "id,amount\n" + id + ",1.00\n").value();
    Result<Submission> s = Submit(pipeline, "k" + id, Body(upload));
    ASSERT_TRUE(s.ok()) << s.status();
  }
  counting->Reset();
  EXPECT_EQ(Drain(), kRuns);
  const IoSnapshot io = counting->Snapshot();
  const auto queue = io.by_prefix.find(root_ + "/_control/queue/");
  ASSERT_NE(queue, io.by_prefix.end());
  // One listing for the backlog, one that finds it empty (and pages a
  // store may split a listing into).
  EXPECT_LE(queue->second.count(ObjectOp::kList), 4u) << queue->second.ToString();
  EXPECT_EQ(queue->second.count(ObjectOp::kDelete), static_cast<uint64_t>(kRuns));
  EXPECT_EQ(RunCommits(), kRuns);
}

// The small-run lane: a worker of it takes the oldest small run and passes
// over an older large one; a general worker takes the large run before
// older small ones (they have the lane).
TEST_F(ServiceTest, TheSmallRunLaneAndTheGeneralWorkersSplitTheQueueBySize) {
  options_.small_run_bytes = 64;
  options_.small_run_workers = 1;
  const std::string pipeline = AppendPipeline();
  const auto submit = [&](const std::string& key, const std::string& data) {
    return Submit(pipeline, key, Body(Upload(pipeline, data).value())).value().run.id;
  };
  const std::string first_small = submit("small-1", "id,amount\n98,2.00\n");
  std::string large_data = "id,amount\n";
  for (int i = 1; i <= 20; ++i) large_data += std::to_string(i) + ",1.00\n";
  ASSERT_GT(large_data.size(), 64u);
  const std::string large = submit("large", large_data);
  const std::string second_small = submit("small-2", "id,amount\n99,2.00\n");
  ASSERT_TRUE(Svc().RunWorkerOnce().value());  // a general worker: the large run first
  EXPECT_EQ(Run(large).state, RunState::kSucceeded);
  EXPECT_EQ(Run(first_small).state, RunState::kQueued);
  ASSERT_TRUE(Svc().RunWorkerOnce(/*small_only=*/true).value());
  EXPECT_EQ(Run(first_small).state, RunState::kSucceeded);
  EXPECT_EQ(Run(second_small).state, RunState::kQueued);
  ASSERT_TRUE(Svc().RunWorkerOnce(/*small_only=*/true).value());
  EXPECT_EQ(Run(second_small).state, RunState::kSucceeded);
  EXPECT_FALSE(Svc().RunWorkerOnce().value());
  const std::string rows = Contents();
  EXPECT_EQ(std::count(rows.begin(), rows.end(), ' '), 22) << rows;
}

// A small-run worker leaves a large run queued for the general workers.
TEST_F(ServiceTest, ASmallRunWorkerPassesOverALargeRun) {
  options_.small_run_bytes = 64;
  const std::string pipeline = AppendPipeline();
  std::string large_data = "id,amount\n";
  for (int i = 1; i <= 20; ++i) large_data += std::to_string(i) + ",1.00\n";
  const std::string large =
      Submit(pipeline, "large", Body(Upload(pipeline, large_data).value())).value().run.id;
  ASSERT_TRUE(
      Submit(pipeline, "small", Body(Upload(pipeline, "id,amount\n99,2.00\n").value())).ok());
  ASSERT_TRUE(Svc().RunWorkerOnce(/*small_only=*/true).value());
  EXPECT_EQ(Run(large).state, RunState::kQueued);
  EXPECT_FALSE(Svc().RunWorkerOnce(/*small_only=*/true).value());  // only the large one left
  EXPECT_EQ(Run(large).state, RunState::kQueued);
  ASSERT_TRUE(Svc().RunWorkerOnce().value());
  EXPECT_EQ(Run(large).state, RunState::kSucceeded);
}

// A record sweep reads one page of each kind per call, whatever the number
// of records; a pass ends within ceil(records / page) calls. An expired
// idempotency record of a terminal run goes with the run's record; a record
// whose run still runs stays, with its run.
TEST_F(ServiceTest, RecordSweepsGoPageByPageAndTakeExpiredRunsWithTheirKeys) {
  options_.sweep_page = 100;
  auto counting = std::make_shared<CountingObjectStore>(store_);
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  ws_ = WorkspaceEngine::Open(counting, root_, wo).value();
  ingest::RunStore runs(store_, root_);
  RequestStore requests(store_, root_, ws_->id());
  const int64_t now = clock_.NowMicros();
  ingest::RunRequest req;
  req.principal = "ada";
  std::vector<std::string> ids;
  for (int i = 0; i < 250; ++i) {
    ingest::RunRecord r;
    r.id = NewUlidString();
    r.request = req.ToJson();
    r.state = i == 0 ? RunState::kQueued : RunState::kSucceeded;
    r.created_micros = r.finished_micros = now - 10'000'000;
    std::string etag;
    ASSERT_TRUE(runs.Create(r, &etag).ok());
    RequestRecord q{"key-" + std::to_string(i), "ada", "fp", r.id, now - 10'000'000, now - 1};
    ASSERT_TRUE(requests.Reserve(q).ok());
    ids.push_back(r.id);
  }
  int64_t removed = 0;
  int calls = 0;
  do {
    counting->Reset();
    removed += Svc().SweepRecords().value();
    ++calls;
    IoCounters one = counting->Snapshot().total;
    // Per record of the page: it, its run, and the check of the delete
    // that it still names that run; a LIST per kind (uploads, requests,
    // sources, operation keys).
    EXPECT_LE(one.count(ObjectOp::kGet), 3u * options_.sweep_page) << one.ToString();
    EXPECT_LE(one.count(ObjectOp::kList), 4u) << one.ToString();
  } while (Svc().RecordSweepUnderway() && calls < 10);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(removed, 249);
  EXPECT_EQ(CountUnder("_control/requests/"), 1);
  EXPECT_EQ(CountUnder("_control/runs/"), 1);
  EXPECT_TRUE(runs.Get(ids[0]).ok());
  EXPECT_TRUE(Svc().GetRun(Ctx("ada"), ids[1]).status().IsNotFound());
}

}  // namespace
}  // namespace loam::service
