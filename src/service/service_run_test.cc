// Runs through the queue: grants and drops under queued runs, cancel,
// preconditions, crashes at every step, cleanup and sweeps, worker threads,
// and four processes draining one queue.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <mutex>
#include <sstream>

#include "common/subprocess_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"
#include "io/s3_object_store.h"
#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;

TEST_F(ServiceTest, AGrantRevokedWhileQueuedPreventsTheCommit) {
  const std::string p = AppendPipeline();
  const Submission s = Submit(p, "k", Body(Upload(p, kRows).value())).value();
  ASSERT_TRUE(ws_->SetGrant("orders", "ada", std::nullopt).ok());
  EXPECT_EQ(Drain(), 1);
  const ingest::RunRecord r = Run(s.run.id);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "permission_denied") << r.error;
  EXPECT_EQ(Contents(), "");
  EXPECT_EQ(RunCommits(), 0);
  ASSERT_TRUE(Svc().RunCleanerOnce().ok());
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
}

TEST_F(ServiceTest, QueuedRunsFollowARenameAndFailWhenTheTableIsDropped) {
  const std::string p = AppendPipeline();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  ASSERT_TRUE(ws_->RenameTable("orders", "sales").ok());
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(a.run.id).state, RunState::kSucceeded);
  EXPECT_EQ(Run(a.run.id).table, "sales");
  const Submission b = Submit(p, "b", Body(Upload(p, "id,amount,note\n7,1,x\n").value())).value();
  ASSERT_TRUE(ws_->DropTable("sales").ok());
  EXPECT_EQ(Drain(), 1);
  const ingest::RunRecord dropped = Run(b.run.id);
  EXPECT_EQ(dropped.state, RunState::kFailed);
  EXPECT_EQ(dropped.error_code, "not_found") << dropped.error;
  EXPECT_TRUE(Svc()
                  .CreateUpload(Ctx("ada"), p, UploadRequest{10, "", "", 0})
                  .status()
                  .Is(ErrorCode::kNotFound));
}

TEST_F(ServiceTest, AQueuedRunCanBeCancelledAndNothingElse) {
  const std::string p = AppendPipeline();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  Status stranger = Svc().CancelRun(Ctx("rex"), a.run.id).status();
  EXPECT_TRUE(stranger.Is(ErrorCode::kPermissionDenied)) << stranger;
  Result<RunInfo> cancelled = Svc().CancelRun(Ctx("ada"), a.run.id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state, "cancelled");
  EXPECT_TRUE(cancelled->terminal);
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  EXPECT_EQ(Contents(), "");
  ASSERT_TRUE(Svc().RunCleanerOnce().ok());
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  // The replay of its request says cancelled; a finished run cannot be cancelled.
  EXPECT_EQ(Submit(p, "a", Body(a.run.uploads[0])).value().run.state, "cancelled");
  const Submission b = Submit(p, "b", Body(Upload(p, kRows).value())).value();
  EXPECT_EQ(Drain(), 1);
  Status late = Svc().CancelRun(Ctx("ada"), b.run.id).status();
  EXPECT_TRUE(late.Is(ErrorCode::kPreconditionFailed)) << late;
  EXPECT_EQ(Run(b.run.id).state, RunState::kSucceeded);
}

TEST_F(ServiceTest, ExpectedTableVersionFailsTheRunWhenTheTableMoved) {
  const std::string p = AppendPipeline();
  const int64_t v = ws_->Current().value().tables.at("orders").head.table_version;
  const std::string expect = R"("expectedTableVersion":)" + std::to_string(v);
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value(), expect)).value();
  const Submission b =
      Submit(p, "b", Body(Upload(p, "id,amount,note\n5,5,x\n").value(), expect)).value();
  EXPECT_EQ(Drain(), 2);
  EXPECT_EQ(Run(a.run.id).state, RunState::kSucceeded);
  const ingest::RunRecord moved = Run(b.run.id);
  EXPECT_EQ(moved.state, RunState::kFailed);
  EXPECT_EQ(moved.error_code, "precondition_failed") << moved.error;
  EXPECT_NE(moved.error.find("expectedTableVersion"), std::string::npos);
  EXPECT_EQ(Contents(), "1:150 2:250 ");
}

TEST_F(ServiceTest, AdditivePipelinesAddDeclaredColumnsInTheRunsOwnCommit) {
  bool race = false;
  options_.failpoint = [&](std::string_view at) -> Status {
    if (at != "run.before_commit" || !race) return Status::OK();
    race = false;  // another writer changes the schema between validation and commit
    WriteRequest w;
    w.table = "orders";
    w.mode = WriteMode::kAddColumn;
    w.new_column = Field{"late", DataType::Int64()};
    w.principal = "adm";
    return ws_->Write(w).status();
  };
  const std::string spec = R"({"name":"add","table":"orders","format":"csv",
      "schemaPolicy":{"mode":"additive","addColumns":[{"name":"region","type":"string"}]}})";
  Status not_allowed = Svc().CreatePipeline(Ctx("adm"), spec).status();
  EXPECT_TRUE(not_allowed.Is(ErrorCode::kPermissionDenied)) << not_allowed;
  EXPECT_TRUE(Svc().SetAdditiveSchema(Ctx("ada"), "orders", true).Is(ErrorCode::kPermissionDenied));
  ASSERT_TRUE(Svc().SetAdditiveSchema(Ctx("adm"), "orders", true).ok());
  const std::vector<TableHistoryEntry> history = ws_->History("orders").value();
  EXPECT_EQ(history.back().actor, "adm");
  EXPECT_NE(history.back().detail.find("loam:additive-schema"), std::string::npos)
      << history.back().detail;
  Status writer = Svc().CreatePipeline(Ctx("ada"), spec).status();
  EXPECT_TRUE(writer.Is(ErrorCode::kPermissionDenied)) << writer;
  EXPECT_NE(writer.message().find("only an admin"), std::string::npos);
  const std::string add = MakePipeline(spec, "adm");
  // A policy that would grow the table past its column limit is refused.
  std::string many;
  for (int i = 0; i < 1100; ++i) {
    many +=
        (i ? "," : "") + std::string(R"({"name":"x)") + std::to_string(i) + R"(","type":"int32"})";
  }
  Status too_wide =
      Svc()
          .CreatePipeline(Ctx("adm"), R"({"name":"wide","table":"orders","format":"csv",
      "schemaPolicy":{"mode":"additive","addColumns":[)" +
                                          many + "]}}")
          .status();
  EXPECT_TRUE(too_wide.Is(ErrorCode::kLimitExceeded)) << too_wide;
  EXPECT_EQ(too_wide.detail("limit"), "maxTableColumns");
  const std::string plain = AppendPipeline();
  ASSERT_TRUE(Submit(plain, "p", Body(Upload(plain, "id,amount,note\n1,1,a\n").value())).ok());
  EXPECT_EQ(Drain(), 1);
  const int64_t schema_version = ws_->Current().value().tables.at("orders").def.schema_version;

  // Declared columns are accepted and added with the rows, in one commit.
  const Submission a =
      Submit(add, "a", Body(Upload(add, "id,amount,note,region\n2,2,b,eu\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  ASSERT_EQ(Run(a.run.id).state, RunState::kSucceeded) << Run(a.run.id).error;
  const TableState t = ws_->Current().value().tables.at("orders");
  EXPECT_EQ(t.def.schema.fields.back().name, "region");
  EXPECT_TRUE(t.def.schema.fields.back().nullable);
  EXPECT_EQ(t.def.schema_version, schema_version + 1);
  RecordBatch all = ws_->OpenTable(ws_->Current().value(), "orders").value().ReadAll().value();
  ASSERT_EQ(all.num_rows(), 2);
  for (int64_t r = 0; r < 2; ++r) {
    const bool old_row = all.columns[0].GetInt64(r) == 1;
    EXPECT_EQ(all.columns[3].IsNull(r), old_row);
    if (!old_row) {
      EXPECT_EQ(all.columns[3].GetBytes(r), "eu");
    }
  }
  // The version before the run has the old schema: never a mix.
  EXPECT_EQ(ws_->SnapshotAt("", Run(a.run.id).manifest_version - 1)
                .value()
                .tables.at("orders")
                .def.schema.fields.size(),
            3u);
  // An undeclared column still fails, and changes nothing.
  const Submission b =
      Submit(add, "b", Body(Upload(add, "id,amount,note,colour\n3,3,c,red\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(b.run.id).error_code, "validation_failed") << Run(b.run.id).error;
  EXPECT_EQ(ws_->Current().value().tables.at("orders").def.schema_version, schema_version + 1);
  // A schema change between validation and commit ends the run.
  const std::string add2 = MakePipeline(
      R"({"name":"add2","table":"orders","format":"csv",
          "schemaPolicy":{"mode":"additive","addColumns":[{"name":"tier","type":"int64"}]}})",
      "adm");
  race = true;
  const Submission c =
      Submit(add2, "c", Body(Upload(add2, "id,amount,note,tier\n4,4,d,1\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(c.run.id).error_code, "schema_conflict") << Run(c.run.id).error;
  EXPECT_EQ(ws_->Current().value().tables.at("orders").def.schema.IndexOf("tier"), -1);
  // Turned off while a run waits: the run is refused.
  const Submission d =
      Submit(add2, "d", Body(Upload(add2, "id,amount,note,tier\n5,5,e,2\n").value())).value();
  ASSERT_TRUE(Svc().SetAdditiveSchema(Ctx("adm"), "orders", false).ok());
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(d.run.id).error_code, "permission_denied") << Run(d.run.id).error;
  EXPECT_EQ(Contents(), "1:100 2:200 ");
}

TEST_F(ServiceTest, BadInputFailsTheRunAndLeavesTheTableAsItWas) {
  const std::string p = AppendPipeline();
  const Submission a =
      Submit(p, "a", Body(Upload(p, "id,amount,note\n1,1.00,a\n2,lots,b\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  const ingest::RunRecord r = Run(a.run.id);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "validation_failed");
  ASSERT_FALSE(r.errors.empty());
  EXPECT_NE(r.errors[0].reason.find("line 3"), std::string::npos) << r.errors[0].reason;
  EXPECT_EQ(r.errors[0].reason.find("lots"), std::string::npos);  // never the value
  EXPECT_EQ(Contents(), "");
  // A validation-only run reports and never mutates.
  const Submission v =
      Submit(p, "v", Body(Upload(p, kRows).value(), R"("errorPolicy":"validationOnly")")).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_TRUE(Run(v.run.id).validation_only);
  EXPECT_EQ(Contents(), "");
}

// Every step of submission, claim, commit and completion, "crashed" once:
// after a restart and the client's retries, the run ends terminal exactly
// once, its staging is gone, and no idempotency record points nowhere.
class ServiceCrashTest : public ServiceTest, public ::testing::WithParamInterface<const char*> {
 protected:
  // The client's retries after the restart: the run id once accepted, ""
  // after a refusal other than "in flight" (reported) or three tries.
  std::string RetryUntilAccepted(const std::function<Result<Submission>()>& submit) {
    for (int attempt = 0; attempt < 3; ++attempt) {
      Result<Submission> retry = submit();
      if (retry.ok()) return retry->run.id;
      if (!retry.status().Is(ErrorCode::kRequestInFlight)) {
        ADD_FAILURE() << retry.status();
        return "";
      }
      clock_.AdvanceMicros(options_.in_flight_grace_micros + 1);
    }
    return "";
  }

  // The run of ARunEndsExactlyOnce...: the first process dies at the
  // parameter's step; with `power_seed`, the machine then loses power
  // (FaultInjectionObjectStore::LosePower) before the next one starts.
  // Returns the number of writes the power loss undid.
  int ExpectARunEndsExactlyOnce(std::optional<uint64_t> power_seed);
};

TEST_P(ServiceCrashTest, ARunEndsExactlyOnceWhereverTheProcessDies) {
  ExpectARunEndsExactlyOnce(std::nullopt);
}

// The same, and what the first process wrote without durability (relaxed
// deletes of queue entries, sidecars and staged files) vanishes, comes back
// or is cut, by seed: nothing acknowledged is lost, nothing is left over.
TEST_P(ServiceCrashTest, ARunEndsExactlyOnceWhereverThePowerFails) {
  int lost = 0;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // A fresh workspace, in memory on every backend: an S3 write is durable
    // once acknowledged, so there is nothing to lose there.
    svc_.reset();
    store_ = std::make_shared<MemoryObjectStore>();
    InitWorkspace("power-" + NewUlidString());
    lost += ExpectARunEndsExactlyOnce(seed);
  }
  std::printf("[ figures ] %s: %d unsynced writes lost over 3 seeds\n", GetParam(), lost);
}

int ServiceCrashTest::ExpectARunEndsExactlyOnce(std::optional<uint64_t> power_seed) {
  const std::string point = GetParam();
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows).value();
  int fired = 0;
  auto crash_once = [&](std::string_view at) -> Status {
    if (at == point && fired++ == 0) return Status::Unavailable("crash at " + point);
    return Status::OK();
  };
  std::shared_ptr<FaultInjectionObjectStore> faulty;
  if (power_seed) {
    faulty = std::make_shared<FaultInjectionObjectStore>(store_, *power_seed);
    faulty->TrackUnsyncedWrites();
  }
  Restart(crash_once, faulty);
  Result<Submission> first = Submit(p, "key", Body(upload));
  if (first.ok()) {
    Result<bool> worked = Svc().RunWorkerOnce();
    EXPECT_TRUE(worked.ok() || fired == 1) << worked.status();
  }
  EXPECT_EQ(fired, 1) << "failpoint " << point << " was never reached";
  int lost = 0;
  if (faulty) {
    svc_.reset();
    lost = faulty->LosePower().value();
  }
  Restart(nullptr);  // a new process: workspace, service, loader owner
  const std::string run_id = RetryUntilAccepted([&] { return Submit(p, "key", Body(upload)); });
  if (run_id.empty()) {
    ADD_FAILURE() << "never accepted";
    return lost;
  }
  Drain();
  EXPECT_EQ(Run(run_id).state, RunState::kSucceeded) << Run(run_id).error;
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  EXPECT_EQ(RunCommits(), 1);
  EXPECT_TRUE(Svc().RunCleanerOnce().ok());
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  EXPECT_EQ(CountUnder("_control/cleanup/"), 0);
  clock_.AdvanceMicros(10 * options_.in_flight_grace_micros + 1);
  EXPECT_TRUE(Svc().SweepRecords().ok());
  RequestStore requests(store_, root_, ws_->id());
  for (const RequestRecord& r : requests.RequestsPage("", 1000).value().records) {
    EXPECT_TRUE(store_->Head(root_ + "/_control/runs/" + r.run_id + ".json").ok()) << r.key;
  }
  return lost;
}

// The same for inline data carried by the run record: nothing is ever
// staged, and the record keeps the data only until the run ends.
TEST_P(ServiceCrashTest, AnInlineRunInItsRecordEndsExactlyOnceWhereverTheProcessDies) {
  const std::string point = GetParam();
  const std::string p = AppendPipeline();
  const InlineLoad load{"text/csv", kRows, "", false};
  int fired = 0;
  Restart([&](std::string_view at) -> Status {
    if (at == point && fired++ == 0) return Status::Unavailable("crash at " + point);
    return Status::OK();
  });
  Result<Submission> first = Svc().SubmitInline(Ctx("ada"), p, "key", load);
  if (first.ok()) {
    Result<bool> worked = Svc().RunWorkerOnce();
    EXPECT_TRUE(worked.ok() || fired == 1) << worked.status();
  }
  EXPECT_EQ(fired, 1) << "failpoint " << point << " was never reached";
  Restart(nullptr);
  const std::string run_id =
      RetryUntilAccepted([&] { return Svc().SubmitInline(Ctx("ada"), p, "key", load); });
  ASSERT_FALSE(run_id.empty());
  Drain();
  EXPECT_EQ(Run(run_id).state, RunState::kSucceeded) << Run(run_id).error;
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  EXPECT_EQ(RunCommits(), 1);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  EXPECT_EQ(CountUnder("_control/uploads/"), 0);
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  const std::string record = store_->Get(root_ + "/_control/runs/" + run_id + ".json").value();
  EXPECT_EQ(record.find("\"input\""), std::string::npos) << record;
}

INSTANTIATE_TEST_SUITE_P(Steps, ServiceCrashTest,
                         ::testing::Values("submit.after_reserve", "submit.after_claim_uploads",
                                           "submit.after_enqueue", "submit.after_run",
                                           "run.after_validate", "run.before_commit",
                                           "write.after_sidecar", "write.after_table_commit",
                                           "write.after_publish", "worker.after_terminal"),
                         [](const ::testing::TestParamInfo<const char*>& param) {
                           std::string name = param.param;
                           for (char& c : name) c = c == '.' ? '_' : c;
                           return name;
                         });

// An inline submission stopped half way (after staging, at each step of its
// creation): the retry with the same key and data finishes it with the
// upload the first attempt staged, so the run's cleanup leaves no copy.
TEST_F(ServiceTest, AnInlineRetryFinishesTheCreationWithTheUploadItStaged) {
  for (const std::string point :
       {"submit.after_reserve", "submit.after_claim_uploads", "submit.after_enqueue"}) {
    SCOPED_TRACE(point);
    InitWorkspace("inl" + std::to_string(::getpid()) + "-" + NewUlidString());
    options_.inline_record_bytes = 0;  // staged as an upload
    int fired = 0;
    Restart([&](std::string_view at) -> Status {
      if (at == point && fired++ == 0) return Status::Unavailable("crash at " + point);
      return Status::OK();
    });
    const std::string p = AppendPipeline();
    const InlineLoad load{"text/csv", kRows, "", false};
    EXPECT_TRUE(Svc().SubmitInline(Ctx("ada"), p, "key", load).status().IsUnavailable());
    Restart(nullptr);
    Result<Submission> retry = Svc().SubmitInline(Ctx("ada"), p, "key", load);
    if (retry.status().Is(ErrorCode::kRequestInFlight)) {
      clock_.AdvanceMicros(options_.in_flight_grace_micros + 1);
      retry = Svc().SubmitInline(Ctx("ada"), p, "key", load);
    }
    ASSERT_TRUE(retry.ok()) << retry.status();
    EXPECT_EQ(Drain(), 1);
    EXPECT_EQ(Run(retry->run.id).state, RunState::kSucceeded) << Run(retry->run.id).error;
    EXPECT_EQ(Contents(), "1:150 2:250 ");
    ASSERT_TRUE(Svc().RunCleanerOnce().ok());
    EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  }
}

// A submission that died after claiming its upload but before its run
// existed holds the upload only for a while: then the upload is free again.
TEST_F(ServiceTest, AnUploadClaimedByARunThatNeverAppearedIsFreedLater) {
  int crashes = 1;
  options_.failpoint = [&](std::string_view at) {
    if (at == failpoint::kSubmitAfterClaimUploads && crashes-- > 0) {
      return Status::Unavailable("crash");
    }
    return Status::OK();
  };
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows).value();
  EXPECT_TRUE(Submit(p, "first", Body(upload)).status().IsUnavailable());
  Status held = Submit(p, "other", Body(upload)).status();
  EXPECT_TRUE(held.Is(ErrorCode::kPreconditionFailed)) << held;
  clock_.AdvanceMicros(11 * options_.in_flight_grace_micros);
  ASSERT_TRUE(Svc().SweepRecords().ok());  // the abandoned reservation goes
  Result<Submission> freed = Submit(p, "other", Body(upload));
  ASSERT_TRUE(freed.ok()) << freed.status();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(freed->run.id).state, RunState::kSucceeded);
  EXPECT_EQ(RunCommits(), 1);
}

// Two requests with one key race: the twin looked the key up before the
// first reserved it, and checks the uploads after the first claimed them. It
// is answered with the first's run (a replay), never "already submitted".
TEST_F(ServiceTest, ARequestRacingItsTwinWithTheSameKeyGetsTheSameRun) {
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  const std::string p = AppendPipeline();
  const std::string body = Body(Upload(p, kRows).value(), R"("source":{"id":"day-1"})");
  Result<Submission> first = Status::Internal("not run");
  // The twin's pipeline read comes after its key lookup: the first request
  // runs whole right there.
  faulty->AddRule(FaultRule::HookAt(
      "first runs", kAllOps, 1, [&] { first = Submit(p, "k", body); },
      "_control/pipelines/" + p + ".json"));
  Result<Submission> twin = Submit(p, "k", body);
  EXPECT_EQ(faulty->Fired("first runs"), 1u);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(twin.ok()) << twin.status();
  EXPECT_EQ(twin->run.id, first->run.id);
  EXPECT_TRUE(twin->replayed);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(RunCommits(), 1);
}

TEST_F(ServiceTest, WorkerThreadsDrainTheQueue) {
  options_.workers = 2;
  options_.lease_micros = 30'000'000;
  const std::string p =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  std::vector<std::string> ids;
  for (int i = 0; i < 8; ++i) {
    const std::string rows = "id,amount,note\n" + std::to_string(i) + ",1,x\n";
    ids.push_back(Submit(p, "k" + std::to_string(i), Body(Upload(p, rows).value())).value().run.id);
  }
  Svc().StartWorkers();
  ASSERT_TRUE(Svc().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  Svc().Stop();
  for (const std::string& id : ids) EXPECT_EQ(Run(id).state, RunState::kSucceeded) << id;
  EXPECT_EQ(RunCommits(), 8);
}

// Four processes drain one queue on one workspace root: every run commits
// exactly once and the history stays linear.
TEST_F(ServiceTest, FourProcessesDrainOneQueue) {
  options_.limits.max_concurrent_runs_per_pipeline = 64;
  std::filesystem::path dir;
  ASSERT_NE(testing::TestBackendName(), "local");  // registered for memory and s3
  if (testing::TestBackendName() == "memory") {    // a memory store is per process
    dir = std::filesystem::temp_directory_path() / ("loam-svc-mp-" + NewUlidString());
    store_ = LocalObjectStore::Open(dir.string()).value();
    WorkspaceOptions o;
    o.owner = "owner";
    ws_ = WorkspaceEngine::Init(store_, root_, o).value();
  }
  ASSERT_TRUE(ws_->CreateTable("events",
                               Schema{{{"id", DataType::Int64(), false},
                                       {"amount", DataType::Decimal(10, 2)},
                                       {"note", DataType::String()}}},
                               {})
                  .ok());
  const std::string p = MakePipeline(R"({"name":"e","table":"events","format":"csv"})", "owner");
  constexpr int kRuns = 24;
  for (int i = 0; i < kRuns; ++i) {
    const std::string rows = "id,amount,note\n" + std::to_string(2 * i) + ",1,x\n" +
                             std::to_string(2 * i + 1) + ",2,y\n";
    Status s = Submit(p, "k" + std::to_string(i), Body(Upload(p, rows, "owner").value()), "owner")
                   .status();
    ASSERT_TRUE(s.ok()) << s;
  }
  svc_.reset();
  std::shared_ptr<ObjectStore> parent_store = store_;
  std::vector<int> codes;
  std::vector<std::string> out = testing::RunInProcesses(
      4,
      [&](int, int fd) {
        // A store of its own (never the parent's connections), on the same root.
        std::shared_ptr<ObjectStore> s;
        if (dir.empty()) {
          s = S3ObjectStore::Open(dynamic_cast<S3ObjectStore&>(*parent_store).options()).value();
        } else {
          s = LocalObjectStore::Open(dir.string()).value();
        }
        WorkspaceOptions o;
        o.recovery_grace_micros = 60'000'000;
        auto ws = WorkspaceEngine::Open(s, root_, o).value();
        ServiceOptions so = options_;
        so.lease_micros = 30'000'000;
        so.clock = Clock::System();
        auto svc = Service::Open(ws, so).value();
        int n = 0;
        for (;;) {
          Result<bool> worked = svc->RunWorkerOnce();
          if (!worked.ok()) {
            testing::WriteLine(fd, "error " + worked.status().ToString());
            ::_exit(1);
          }
          if (!*worked) break;
          ++n;
        }
        testing::WriteLine(fd, std::to_string(n));
      },
      &codes);
  int total = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_EQ(codes[i], 0) << out[i];
    total += std::atoi(out[i].c_str());
  }
  store_ = parent_store;
  ws_ = WorkspaceEngine::Open(store_, root_, WorkspaceOptions{}).value();
  EXPECT_EQ(total, kRuns);  // each run finished by exactly one process
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(RunCommits(), kRuns);
  for (const ingest::RunRecord& r : ingest::RunStore(store_, root_).List().value()) {
    EXPECT_EQ(r.state, ingest::RunState::kSucceeded)
        << r.id << ": " << r.error_code << " " << r.error;
  }
  const Snapshot snap = ws_->Current().value();
  EXPECT_EQ(snap.tables.at("events").head.row_count, 2 * kRuns);
  // Linear: every commit's parent is the one before it.
  std::vector<GraphCommitInfo> log = ws_->Log().value();
  for (size_t i = 0; i + 1 < log.size(); ++i) {
    ASSERT_EQ(log[i].parents.size(), 1u);
    EXPECT_EQ(log[i].parents[0], log[i + 1].id);
  }
  if (!dir.empty()) std::filesystem::remove_all(dir);
}

// A run whose input can never be read is not resumed forever: after
// max_run_attempts it fails with its last error, and leaves the queue.
TEST_F(ServiceTest, APoisonRunFailsAfterItsAttemptsWithItsLastError) {
  options_.max_run_attempts = 3;
  std::shared_ptr<FaultInjectionObjectStore> faulty = ReopenFaulty();
  const std::string p = AppendPipeline();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  FaultRule unreadable =
      FaultRule::FailNth("unreadable", MaskOf({ObjectOp::kGet, ObjectOp::kGetRange}), 1,
                         Status::Unavailable("disk gone"), "/uploads/");
  unreadable.times = FaultRule::kForever;
  faulty->AddRule(unreadable);
  for (int attempt = 1; attempt < 3; ++attempt) {
    Result<bool> worked = Svc().RunWorkerOnce();
    EXPECT_FALSE(worked.ok());
    EXPECT_FALSE(ingest::IsTerminal(Run(a.run.id).state)) << attempt;
    EXPECT_EQ(Run(a.run.id).attempts, attempt);
    EXPECT_EQ(Run(a.run.id).last_error_code, "unavailable");
  }
  EXPECT_EQ(Drain(), 1);  // the third attempt ends it
  const ingest::RunRecord failed = Run(a.run.id);
  EXPECT_EQ(failed.state, RunState::kFailed);
  EXPECT_EQ(failed.error_code, "unavailable");
  EXPECT_NE(failed.error.find("gave up after 3 attempts"), std::string::npos) << failed.error;
  EXPECT_NE(failed.error.find("disk gone"), std::string::npos) << failed.error;
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  faulty->ClearRules();
  EXPECT_EQ(Contents(), "");
}

}  // namespace
}  // namespace loam::service
