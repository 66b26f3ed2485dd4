// A cancel asked for while a run is held (RunStore::RequestCancel): honoured
// between batches and before the commit is asked for, never after.
#include <gtest/gtest.h>

#include <set>

#include "common/clock.h"
#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

class LoaderCancelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = NewLoaderWorkspace(store_);
    Schema accounts{{{"id", DataType::Int64(), false}, {"name", DataType::String()}}};
    ASSERT_TRUE(ws_->CreateTable("accounts", accounts, {"id"}).ok());
    input_ = "id,name\n";
    for (int i = 1; i <= 40; ++i) input_ += std::to_string(i) + ",n" + std::to_string(i) + "\n";
  }

  // Batches of 4 rows, each followed by a look at the stored record; the
  // run's id is kept in run_id_.
  LoaderOptions Options() {
    LoaderOptions o;
    o.batch_rows = 4;
    o.cancel_check_micros = 0;
    o.open_input = [this](const std::string&) -> Result<std::unique_ptr<ByteSource>> {
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(input_));
    };
    o.on_progress = [this](const RunRecord& r) { run_id_ = r.id; };
    return o;
  }

  RunRequest Request(LoadMode mode, const std::string& key) {
    RunRequest r;
    r.table = "accounts";
    r.mode = mode;
    r.files = {"in.csv"};
    r.principal = "owner";
    r.idempotency_key = key;
    return r;
  }

  // Asks for the cancel of the run being loaded, the first time only.
  void AskOnce() {
    if (asked_) return;
    asked_ = true;
    Result<RunRecord> r =
        RunStore(store_, "ws").RequestCancel(run_id_, "ada", Clock::System()->NowMicros());
    ASSERT_TRUE(r.ok()) << r.status();
  }

  int64_t Rows() {
    Snapshot snap = ws_->Current().value();
    return ws_->OpenTable(snap, "accounts").value().ReadAll().value().num_rows();
  }

  // Every object but the run records: the table's files and the manifest.
  std::set<std::string> DataObjects() {
    std::set<std::string> out;
    for (const ObjectInfo& o : store_->ListAll("ws/").value()) {
      if (o.key.rfind("ws/_control/", 0) != 0) out.insert(o.key);
    }
    return out;
  }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::string input_;
  std::string run_id_;
  bool asked_ = false;
};

TEST_F(LoaderCancelTest, ACancelAskedBetweenBatchesEndsTheRunHavingWrittenNothing) {
  for (LoadMode mode : {LoadMode::kAppend, LoadMode::kUpsert, LoadMode::kReplace}) {
    SCOPED_TRACE(std::string(LoadModeName(mode)));
    asked_ = false;
    const std::set<std::string> before = DataObjects();
    LoaderOptions o = Options();
    o.on_progress = [this](const RunRecord& r) {
      run_id_ = r.id;
      if (r.counters.rows_read >= 8) AskOnce();
    };
    Result<RunRecord> run = Loader(ws_, o).Run(Request(mode, std::string(LoadModeName(mode))));
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->state, RunState::kCancelled);
    EXPECT_EQ(run->error, "cancelled by ada while validating; nothing was written");
    EXPECT_EQ(run->error_code, "");
    EXPECT_EQ(run->cancel_requested_by, "ada");
    EXPECT_GT(run->cancel_requested_micros, 0);
    EXPECT_LT(run->counters.rows_read, 40);
    EXPECT_EQ(run->counters.inserted, 0);
    EXPECT_EQ(Rows(), 0);
    EXPECT_EQ(DataObjects(), before);  // nothing staged stays behind
    EXPECT_EQ(RunStore(store_, "ws").Get(run->id).value().state, RunState::kCancelled);
  }
}

TEST_F(LoaderCancelTest, ACancelAskedJustBeforeTheCommitIsHonoured) {
  const std::set<std::string> before = DataObjects();
  LoaderOptions o = Options();
  o.cancel_check_micros = int64_t{3600} * 1'000'000;  // only the look before the commit
  o.failpoint = [this](std::string_view p) {
    if (p == failpoint::kRunBeforeCommit) AskOnce();
    return Status::OK();
  };
  Result<RunRecord> run = Loader(ws_, o).Run(Request(LoadMode::kAppend, "k"));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kCancelled);
  EXPECT_EQ(run->error, "cancelled by ada while committing; nothing was written");
  EXPECT_EQ(run->counters.rows_read, 40);
  EXPECT_EQ(Rows(), 0);
  EXPECT_EQ(DataObjects(), before);
}

TEST_F(LoaderCancelTest, ACancelAskedOnceTheCommitWasAskedForComesTooLate) {
  LoaderOptions o = Options();
  o.commit = [this](const WriteRequest& w) {
    AskOnce();
    return ws_->Write(w);
  };
  Result<RunRecord> run = Loader(ws_, o).Run(Request(LoadMode::kAppend, "k"));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kSucceeded);
  EXPECT_EQ(run->cancel_requested_by, "ada");  // asked, too late: the record says so
  EXPECT_EQ(run->counters.inserted, 40);
  EXPECT_EQ(Rows(), 40);
}

// The request can land between the lease holder's read and its next save:
// the save that loses its swap takes the request (no look needed).
TEST_F(LoaderCancelTest, ASaveThatLosesItsSwapToACancelTakesTheRequest) {
  LoaderOptions o = Options();
  o.cancel_check_micros = int64_t{3600} * 1'000'000;
  o.lease_micros = 3;  // a renewal after every batch
  o.on_progress = [this](const RunRecord& r) {
    run_id_ = r.id;
    if (r.counters.rows_read >= 8) AskOnce();
  };
  Result<RunRecord> run = Loader(ws_, o).Run(Request(LoadMode::kAppend, "k"));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kCancelled);
  EXPECT_EQ(run->error, "cancelled by ada while validating; nothing was written");
  EXPECT_EQ(Rows(), 0);
}

TEST_F(LoaderCancelTest, ARunResumedAfterItsCancelWasAskedEndsCancelled) {
  LoaderOptions o = Options();
  bool crash = true;
  o.failpoint = [&crash](std::string_view p) {
    if (p == failpoint::kRunAfterValidate && crash) {
      crash = false;
      return Status::Unavailable("the process died here");
    }
    return Status::OK();
  };
  Loader loader(ws_, o);
  ASSERT_TRUE(loader.Run(Request(LoadMode::kAppend, "k")).status().IsUnavailable());
  AskOnce();
  Result<RunRecord> run = loader.Run(Request(LoadMode::kAppend, "k"));
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->state, RunState::kCancelled);
  EXPECT_EQ(Rows(), 0);
}

TEST_F(LoaderCancelTest, TheFirstRequestStandsAndAFinishedRunCannotBeCancelled) {
  RunStore runs(store_, "ws");
  RunRecord held;
  held.id = "01J00000000000000000000001";
  held.request = Request(LoadMode::kAppend, "").ToJson();
  held.state = RunState::kValidating;
  std::string etag;
  ASSERT_TRUE(runs.Create(held, &etag).ok());
  EXPECT_TRUE(runs.RequestCancel(held.id, "", 5).status().IsInvalidArgument());  // who asks?
  ASSERT_EQ(runs.RequestCancel(held.id, "ada", 5).value().cancel_requested_by, "ada");
  const RunRecord again = runs.RequestCancel(held.id, "bob", 9).value();
  EXPECT_EQ(again.cancel_requested_by, "ada");
  EXPECT_EQ(again.cancel_requested_micros, 5);
  EXPECT_EQ(runs.Get(held.id).value().cancel_requested_by, "ada");  // read back from JSON

  Result<RunRecord> done = Loader(ws_, Options()).Run(Request(LoadMode::kAppend, "done"));
  ASSERT_TRUE(done.ok()) << done.status();
  Status late = runs.RequestCancel(done->id, "ada", 5).status();
  EXPECT_TRUE(late.Is(ErrorCode::kPreconditionFailed)) << late;
  EXPECT_EQ(late.message(),
            "run " + done->id + " is succeeded: a finished run cannot be cancelled");
  EXPECT_TRUE(runs.RequestCancel("01J00000000000000000000009", "ada", 5).status().IsNotFound());
}

}  // namespace
}  // namespace loam::ingest
