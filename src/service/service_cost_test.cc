// What a small run costs in object-store requests. Inline data that
// travels in the run record makes three writes before it is acknowledged
// (reservation, queue entry, run record); larger inline data is staged first
// (data and upload record: five). Either way nothing staged is read back, and
// the run writes its record twice (the claim, which also records validating,
// and the end) and deletes its inputs itself, with no cleanup entry.
#include "io/counting_object_store.h"
#include "service/service_test_util.h"

namespace loam::service {
namespace {

class ServiceCostTest : public ServiceTest {
 protected:
  void SetUp() override {
    ServiceTest::SetUp();
    options_.lease_micros = 30'000'000;  // as in production: a fresh lease needs no renewal
    counting_ = std::make_shared<CountingObjectStore>(store_, /*prefix_depth=*/3);
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    ws_ = WorkspaceEngine::Open(counting_, root_, wo).value();
  }
  // Writes (puts of any kind and deletes) under `sub` of the workspace.
  uint64_t Writes(const IoSnapshot& io, const std::string& sub) const {
    auto it = io.by_prefix.find(root_ + "/" + sub);
    return it == io.by_prefix.end() ? 0 : it->second.writes();
  }

  // One run first, so directories and caches are warm; then the counts are
  // reset and a one-row inline run is submitted.
  Result<Submission> SubmitOneRowWarm() {
    const std::string pipeline = AppendPipeline();
    RETURN_NOT_OK(Svc().SubmitInline(Ctx("ada"), pipeline, "warm", {"text/csv", kRows}).status());
    if (Drain() != 1) return Status::Internal("the warm-up run did not drain");
    counting_->Reset();
    return Svc().SubmitInline(Ctx("ada"), pipeline, "k1",
                              {"text/csv", "id,amount,note\n3,1.50,a\n"});
  }

  std::shared_ptr<CountingObjectStore> counting_;
};

TEST_F(ServiceCostTest, AStagedInlineRunWritesFiveObjectsToBeAcceptedAndTwoRunRecordsToEnd) {
  options_.inline_record_bytes = 0;  // always staged
  Result<Submission> s = SubmitOneRowWarm();
  ASSERT_TRUE(s.ok()) << s.status();
  const IoSnapshot accepted = counting_->Snapshot();
  EXPECT_EQ(accepted.total.writes(), 5u) << accepted.total.ToString();
  for (const char* sub : {"ingestion-staging/v1/", "_control/uploads/", "_control/requests/",
                          "_control/queue/", "_control/runs/"}) {
    EXPECT_EQ(Writes(accepted, sub), 1u) << sub;
  }
  EXPECT_EQ(accepted.by_prefix.count(root_ + "/_control/upload-index/"), 0u);
  // What it staged is not read back; the pipeline is read once.
  for (const char* sub : {"ingestion-staging/v1/", "_control/uploads/"}) {
    EXPECT_EQ(accepted.by_prefix.at(root_ + "/" + sub).reads(), 0u) << sub;
  }
  EXPECT_EQ(accepted.by_prefix.at(root_ + "/_control/pipelines/").reads(), 1u);
  // With the key lookup, the snapshot (grants) and the queue view: 5 (was 14).
  EXPECT_LE(accepted.total.reads(), 5u) << accepted.total.ToString();

  counting_->Reset();
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(Run(s->run.id).state, ingest::RunState::kSucceeded);
  const IoSnapshot ran = counting_->Snapshot();
  EXPECT_EQ(Writes(ran, "_control/runs/"), 2u);
  EXPECT_EQ(Writes(ran, "_control/cleanup/"), 0u);
  // Its inputs went with the run: data, upload record, queue entry.
  EXPECT_EQ(Writes(ran, "ingestion-staging/v1/"), 1u);
  EXPECT_EQ(Writes(ran, "_control/uploads/"), 1u);
  EXPECT_EQ(Writes(ran, "_control/queue/"), 1u);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  EXPECT_EQ(CountUnder("_control/uploads/"), 0);
  counting_->Reset();
  EXPECT_EQ(Svc().RunCleanerOnce().value().entries_done, 0);
  EXPECT_EQ(counting_->Snapshot().total.writes(), 0u);
}

TEST_F(ServiceCostTest, AnInlineRunInItsRecordWritesThreeObjectsToBeAcceptedAndStagesNothing) {
  Result<Submission> s = SubmitOneRowWarm();
  ASSERT_TRUE(s.ok()) << s.status();
  const IoSnapshot accepted = counting_->Snapshot();
  EXPECT_EQ(accepted.total.writes(), 3u) << accepted.total.ToString();
  for (const char* sub : {"_control/requests/", "_control/queue/", "_control/runs/"}) {
    EXPECT_EQ(Writes(accepted, sub), 1u) << sub;
  }
  for (const char* sub : {"ingestion-staging/v1/", "_control/uploads/"}) {
    EXPECT_EQ(Writes(accepted, sub), 0u) << sub;
  }
  EXPECT_LE(accepted.total.reads(), 5u) << accepted.total.ToString();
  // The queued record carries the data; the run names no upload.
  const std::string key = root_ + "/_control/runs/" + s->run.id + ".json";
  EXPECT_NE(store_->Get(key).value().find("\"input\":{\"text\":"), std::string::npos);
  EXPECT_TRUE(s->run.uploads.empty());

  counting_->Reset();
  ASSERT_EQ(Drain(), 1);
  EXPECT_EQ(Run(s->run.id).state, ingest::RunState::kSucceeded);
  EXPECT_EQ(Contents(), "1:150 2:250 3:150 ");
  const IoSnapshot ran = counting_->Snapshot();
  EXPECT_EQ(Writes(ran, "_control/runs/"), 2u);
  EXPECT_EQ(Writes(ran, "_control/queue/"), 1u);
  for (const char* sub : {"ingestion-staging/v1/", "_control/uploads/", "_control/cleanup/"}) {
    EXPECT_EQ(Writes(ran, sub), 0u) << sub;
  }
  // A terminal record keeps no input.
  EXPECT_EQ(store_->Get(key).value().find("\"input\""), std::string::npos);
}

}  // namespace
}  // namespace loam::service
