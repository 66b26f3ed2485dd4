// The service's rules one by one: context, pipelines and grants, uploads and
// their capabilities, the three identities, admission, quarantine.
#include "service/service.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;

TEST_F(ServiceTest, CallsFromAnotherWorkspaceOrWithoutPrincipalAreRefused) {
  const std::string p = AppendPipeline();
  Status other = Svc().GetPipeline({"01J0000000000000000000000W", "ada"}, p).status();
  EXPECT_TRUE(other.Is(ErrorCode::kPermissionDenied)) << other;
  EXPECT_NE(other.message().find("not this workspace"), std::string::npos) << other;
  Status nobody = Svc().GetPipeline({ws_->id(), ""}, p).status();
  EXPECT_TRUE(nobody.Is(ErrorCode::kPermissionDenied)) << nobody;
  EXPECT_TRUE(Svc()
                  .GetPipeline({ws_->id(), std::string(128, 'a')}, p)
                  .status()
                  .Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(Svc().GetPipeline(Ctx("ada"), p).ok());
}

TEST_F(ServiceTest, PipelinesNeedTheGrantTheirModeNeeds) {
  const std::string replace = R"({"name":"r","table":"orders","format":"csv","mode":"replace"})";
  Status writer = Svc().CreatePipeline(Ctx("ada"), replace).status();
  EXPECT_TRUE(writer.Is(ErrorCode::kPermissionDenied)) << writer;
  EXPECT_NE(writer.message().find("admin"), std::string::npos) << writer;
  EXPECT_TRUE(Svc().CreatePipeline(Ctx("adm"), replace).ok());
  const std::string append = R"({"name":"a","table":"orders","format":"csv"})";
  EXPECT_TRUE(Svc().CreatePipeline(Ctx("rex"), append).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(Svc().CreatePipeline(Ctx("eve"), append).status().Is(ErrorCode::kPermissionDenied));
  Result<Pipeline> made = Svc().CreatePipeline(Ctx("ada"), append);
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ(made->table_sid, ws_->Current().value().tables.at("orders").def.sid);
  EXPECT_EQ(made->created_by, "ada");
  // A reader sees it, a stranger does not.
  EXPECT_TRUE(Svc().GetPipeline(Ctx("rex"), made->id).ok());
  EXPECT_TRUE(Svc().GetPipeline(Ctx("eve"), made->id).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_EQ(Svc().ListPipelines(Ctx("eve")).value().size(), 0u);
  EXPECT_EQ(Svc().ListPipelines(Ctx("rex")).value().size(), 2u);
  // A writer cannot turn it into a replace pipeline; an admin can.
  Status to_replace = Svc().UpdatePipeline(Ctx("ada"), made->id, R"({"mode":"replace"})").status();
  EXPECT_TRUE(to_replace.Is(ErrorCode::kPermissionDenied)) << to_replace;
  EXPECT_EQ(Svc().GetPipeline(Ctx("ada"), made->id).value().spec.mode, ingest::LoadMode::kAppend);
  Result<Pipeline> changed = Svc().UpdatePipeline(Ctx("adm"), made->id, R"({"mode":"replace"})");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed->updated_by, "adm");
  EXPECT_TRUE(Svc()
                  .UpdatePipeline(Ctx("adm"), made->id, R"({"name":"b"})")
                  .status()
                  .Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Svc().DeletePipeline(Ctx("adm"), made->id).ok());
  EXPECT_TRUE(Svc().GetPipeline(Ctx("adm"), made->id).status().Is(ErrorCode::kNotFound));
}

TEST_F(ServiceTest, PipelineDocumentsAreStrictAndLimitsOnlyLower) {
  auto refused = [&](const std::string& spec) {
    return Svc().CreatePipeline(Ctx("ada"), spec).status();
  };
  EXPECT_TRUE(refused(R"({"name":"a","table":"orders","format":"csv","colour":"red"})")
                  .Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(
      refused(R"({"name":"a/b","table":"orders","format":"csv"})").Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(refused(R"({"name":"a","table":"nope","format":"csv"})").Is(ErrorCode::kNotFound));
  EXPECT_TRUE(refused(R"({"name":"a","table":"orders","format":"csv","errorPolicy":"quarantine"})")
                  .Is(ErrorCode::kPermissionDenied));
  Status raised = refused(R"({"name":"a","table":"orders","format":"csv",
                              "limits":{"maxRows":1000000000000}})");
  EXPECT_TRUE(raised.Is(ErrorCode::kInvalidArgument)) << raised;
  EXPECT_NE(raised.message().find("ceiling"), std::string::npos) << raised;
  EXPECT_TRUE(
      refused(R"({"name":"a","table":"orders","format":"csv","limits":{"maxRows":10}})").ok());
  Status twice = refused(R"({"name":"a","table":"orders","format":"jsonl"})");
  EXPECT_TRUE(twice.Is(ErrorCode::kAlreadyExists)) << twice;
}

TEST_F(ServiceTest, AnAcceptedRunCommitsOnceAndItsStagingIsCleanedUp) {
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows).value();
  Result<Submission> sub = Submit(p, "k1", Body(upload));
  ASSERT_TRUE(sub.ok()) << sub.status();
  EXPECT_FALSE(sub->replayed);
  EXPECT_EQ(sub->run.state, "queued");
  EXPECT_EQ(Svc().GetRun(Ctx("ada"), sub->run.id).value().queue_position, 0);
  EXPECT_EQ(Contents(), "");  // acceptance never touches the table
  EXPECT_EQ(Drain(), 1);
  const ingest::RunRecord done = Run(sub->run.id);
  EXPECT_EQ(done.state, RunState::kSucceeded) << done.error;
  EXPECT_EQ(done.counters.rows_read, 2);
  EXPECT_GT(done.started_micros, 0);
  EXPECT_FALSE(done.commit_id.empty());
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  EXPECT_EQ(RunCommits(), 1);
  // The worker deleted the inputs once the run was terminal, before its
  // queue entry: nothing is left for the cleaner.
  EXPECT_EQ(CountUnder("_control/cleanup/"), 0);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
  CleanupReport c = Svc().RunCleanerOnce().value();
  EXPECT_EQ(c.entries_done, 0);
  EXPECT_EQ(CountUnder("_control/uploads/"), 0);
  EXPECT_EQ(CountUnder("_control/queue/"), 0);
  EXPECT_EQ(Svc().CleanupBacklog().value(), 0);
  EXPECT_EQ(Drain(), 0);
}

TEST_F(ServiceTest, StagingKeysComeFromVerifiedFactsOnly) {
  ASSERT_TRUE(ws_->SetGrant("orders", "ops/team lead", Role::kWriter).ok());
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows, "ops/team lead").value();
  std::vector<ObjectInfo> staged = store_->ListAll(root_ + "/ingestion-staging/v1/").value();
  ASSERT_EQ(staged.size(), 1u);
  const std::string& key = staged[0].key;
  const int64_t sid = ws_->Current().value().tables.at("orders").def.sid;
  const std::string tail = "/workspaces/" + ws_->id() + "/subjects/" +
                           EncodeSegment("ops/team lead") + "/pipelines/" + p + "/targets/" +
                           std::to_string(sid) + "/uploads/" + upload + "/data";
  EXPECT_EQ(key.substr(key.size() - tail.size()), tail) << key;
  EXPECT_EQ(key.substr(0, root_.size() + 22), root_ + "/ingestion-staging/v1/");
  EXPECT_EQ(key[root_.size() + 22 + 4], '-');  // .../v1/YYYY-MM-DD/...
  EXPECT_EQ(EncodeSegment("ops/team lead").find('/'), std::string::npos);
  EXPECT_EQ(DecodeSegment(EncodeSegment("ops/team lead")).value(), "ops/team lead");
  EXPECT_EQ(EncodeSegment("ada"), "ada");
  EXPECT_EQ(DecodeSegment(EncodeSegment("..")).value(), "..");
  EXPECT_EQ(DecodeSegment(EncodeSegment("~x")).value(), "~x");
}

TEST_F(ServiceTest, IdempotencyKeysAreRequiredBoundAndScoped) {
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows).value();
  Status none = Submit(p, "", Body(upload)).status();
  EXPECT_TRUE(none.Is(ErrorCode::kIdempotencyKeyRequired)) << none;
  EXPECT_TRUE(
      Submit(p, std::string(256, 'k'), Body(upload)).status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Submit(p, "bad\nkey", Body(upload)).status().Is(ErrorCode::kInvalidArgument));
  EXPECT_EQ(CountUnder("_control/runs/"), 0);

  const Submission first = Submit(p, std::string(255, 'k'), Body(upload)).value();
  const Submission again = Submit(p, std::string(255, 'k'), Body(upload)).value();
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.run.id, first.run.id);
  EXPECT_EQ(CountUnder("_control/runs/"), 1);
  EXPECT_EQ(CountUnder("_control/queue/"), 1);
  // Same key, another body: refused, naming the run.
  Status reused = Submit(p, std::string(255, 'k'), Body(upload, R"("reload":true)")).status();
  EXPECT_TRUE(reused.Is(ErrorCode::kIdempotencyKeyReused)) << reused;
  EXPECT_EQ(reused.detail("run"), first.run.id);
  // The key is scoped to the principal: bob's "same" key is another request.
  const std::string bobs = Upload(p, "id,amount,note\n3,3,c\n", "bob").value();
  Result<Submission> bob = Submit(p, std::string(255, 'k'), Body(bobs), "bob");
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_FALSE(bob->replayed);
  EXPECT_NE(bob->run.id, first.run.id);
  EXPECT_EQ(Drain(), 2);
  // After the run, the replay answers with the terminal run and no new work.
  const Submission later = Submit(p, std::string(255, 'k'), Body(upload)).value();
  EXPECT_TRUE(later.replayed);
  EXPECT_EQ(later.run.state, "succeeded");
  EXPECT_EQ(RunCommits(), 2);
}

TEST_F(ServiceTest, AKeyWhoseFirstRequestIsStillBeingAcceptedIsInFlight) {
  int crashes = 1;
  options_.failpoint = [&](std::string_view point) {
    if (point == failpoint::kSubmitAfterReserve && crashes-- > 0) {
      return Status::Unavailable("crash at " + std::string(point));
    }
    return Status::OK();
  };
  const std::string p = AppendPipeline();
  const std::string upload = Upload(p, kRows).value();
  EXPECT_TRUE(Submit(p, "k", Body(upload)).status().IsUnavailable());
  Status in_flight = Submit(p, "k", Body(upload)).status();
  EXPECT_TRUE(in_flight.Is(ErrorCode::kRequestInFlight)) << in_flight;
  EXPECT_FALSE(in_flight.detail("retryAfterMillis").empty());
  EXPECT_EQ(CountUnder("_control/runs/"), 0);
  // Past the grace the retry finishes the creation under the reserved id.
  clock_.AdvanceMicros(options_.in_flight_grace_micros + 1);
  Result<Submission> resumed = Submit(p, "k", Body(upload));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(in_flight.detail("run"), resumed->run.id);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  EXPECT_EQ(RunCommits(), 1);
}

TEST_F(ServiceTest, ASourceIdentityLoadsOnceUnlessReloadIsAsked) {
  const std::string p = AppendPipeline();
  const std::string src = R"("source":{"id":"orders/2026-12-01.csv"})";
  const Submission first = Submit(p, "k1", Body(Upload(p, kRows).value(), src)).value();
  EXPECT_EQ(Drain(), 1);
  ASSERT_EQ(Run(first.run.id).state, RunState::kSucceeded);
  // The same bytes under the same source id: refused before any run exists.
  Status again = Submit(p, "k2", Body(Upload(p, kRows).value(), src)).status();
  EXPECT_TRUE(again.Is(ErrorCode::kSourceAlreadyLoaded)) << again;
  EXPECT_EQ(again.detail("run"), first.run.id);
  EXPECT_NE(again.message().find(first.run.id), std::string::npos);
  // Other bytes under that id are other data.
  const std::string other = "id,amount,note\n3,3.00,c\n";
  EXPECT_TRUE(Submit(p, "k3", Body(Upload(p, other).value(), src)).ok());
  // reload: true loads the same bytes again on purpose (an upsert would be
  // idempotent; this append pipeline on a keyed table refuses duplicates).
  const std::string upsert =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  const Submission u1 = Submit(upsert, "u1", Body(Upload(upsert, kRows).value(), src)).value();
  EXPECT_EQ(Drain(), 2);
  EXPECT_EQ(Run(u1.run.id).state, RunState::kSucceeded);
  EXPECT_TRUE(Submit(upsert, "u2", Body(Upload(upsert, kRows).value(), src))
                  .status()
                  .Is(ErrorCode::kSourceAlreadyLoaded));
  const Submission u3 =
      Submit(upsert, "u3", Body(Upload(upsert, kRows).value(), src + R"(,"reload":true)")).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(u3.run.id).state, RunState::kSucceeded);
  EXPECT_EQ(Contents(), "1:150 2:250 3:300 ");
}

TEST_F(ServiceTest, TwoRunsOfOneSourceInTheQueueCommitOnce) {
  const std::string p =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  const std::string src = R"("source":{"id":"s"})";
  // Both accepted: neither had loaded when the other was submitted.
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value(), src)).value();
  const Submission b = Submit(p, "b", Body(Upload(p, kRows).value(), src)).value();
  EXPECT_EQ(Drain(), 2);
  const ingest::RunRecord ra = Run(a.run.id), rb = Run(b.run.id);
  EXPECT_EQ(ra.state, RunState::kSucceeded);
  EXPECT_EQ(rb.state, RunState::kFailed);
  EXPECT_EQ(rb.error_code, "source_already_loaded");
  EXPECT_EQ(RunCommits(), 1);
  // An append to the keyed table: the loser fails on the source, not on the
  // keys the winner's rows now hold.
  const std::string append = AppendPipeline();
  const std::string other = "id,amount,note\n7,7.00,g\n";
  const Submission c = Submit(append, "c", Body(Upload(append, other).value(), src)).value();
  const Submission d = Submit(append, "d", Body(Upload(append, other).value(), src)).value();
  EXPECT_EQ(Drain(), 2);
  EXPECT_EQ(Run(c.run.id).state, RunState::kSucceeded);
  const ingest::RunRecord rd = Run(d.run.id);
  EXPECT_EQ(rd.error_code, "source_already_loaded") << rd.error;
  EXPECT_NE(rd.error.find(c.run.id), std::string::npos) << rd.error;
  EXPECT_EQ(RunCommits(), 2);
}

// The first run to claim a source wins. A run that finds the claim held by
// an unfinished run fails at once (no retry, no wait for the holder), naming
// it; the holder goes on to commit.
TEST_F(ServiceTest, ARunWhoseSourceALiveRunHoldsFailsAtOnceNamingIt) {
  int crashes = 1;
  options_.failpoint = [&](std::string_view at) {
    if (at != ingest::failpoint::kRunAfterValidate || crashes == 0) return Status::OK();
    --crashes;
    return Status::Unavailable("crash");
  };
  const std::string p = AppendPipeline();
  const std::string src = R"("source":{"id":"s"})";
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value(), src)).value();
  const Submission b = Submit(p, "b", Body(Upload(p, kRows).value(), src)).value();
  Drain();  // a stops after validation, holding the claim; b runs (a resumes)
  ASSERT_EQ(crashes, 0);
  const ingest::RunRecord rb = Run(b.run.id);
  EXPECT_EQ(rb.state, RunState::kFailed);
  EXPECT_EQ(rb.error_code, "source_already_loaded") << rb.error;
  EXPECT_EQ(rb.attempts, 0);
  EXPECT_NE(rb.error.find("is being loaded by run " + a.run.id), std::string::npos) << rb.error;
  clock_.AdvanceMicros(int64_t{60} * 1'000'000);  // past any backoff of a's
  Drain();
  EXPECT_EQ(Run(a.run.id).state, RunState::kSucceeded);
  EXPECT_EQ(RunCommits(), 1);
  EXPECT_EQ(Contents(), "1:150 2:250 ");
}

TEST_F(ServiceTest, UploadCapabilitiesAdmitExactlyTheirObject) {
  const std::string p = AppendPipeline();
  UploadRequest r{kRows.size(), Sha256Hex(kRows), "text/csv", 60};
  if (testing::TestBackendName() == "s3") {
    // S3: a presigned PUT binding size, checksum and once-only (RGW enforces
    // them: s3_conformance_test); the server's own upload route refuses.
    const UploadTicket s3 = Svc().CreateUpload(Ctx("ada"), p, r).value();
    EXPECT_TRUE(s3.token.empty());
    EXPECT_NE(s3.url.find("X-Amz-Signature="), std::string::npos) << s3.url;
    const std::vector<std::pair<std::string, std::string>> want = {
        {"content-length", std::to_string(kRows.size())},
        {"if-none-match", "*"},
        {"x-amz-content-sha256", Sha256Hex(kRows)}};
    EXPECT_EQ(s3.headers, want);
    StringSource body(kRows);
    EXPECT_TRUE(Svc().AcceptUpload(s3.upload_id, "v1.x.y", body).Is(ErrorCode::kPermissionDenied));
    EXPECT_EQ(CountUnder("ingestion-staging/"), 0);
    return;
  }
  const UploadTicket t = Svc().CreateUpload(Ctx("ada"), p, r).value();
  const UploadTicket other = Svc().CreateUpload(Ctx("ada"), p, r).value();
  auto send = [&](const std::string& id, const std::string& token, const std::string& data) {
    StringSource body(data);
    return Svc().AcceptUpload(id, token, body);
  };
  std::string tampered = t.token;
  tampered[5] = tampered[5] == 'A' ? 'B' : 'A';
  EXPECT_TRUE(send(t.upload_id, tampered, kRows).Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(send(t.upload_id, t.token.substr(0, t.token.size() - 2), kRows)
                  .Is(ErrorCode::kPermissionDenied));
  Status for_other = send(other.upload_id, t.token, kRows);
  EXPECT_TRUE(for_other.Is(ErrorCode::kPermissionDenied)) << for_other;
  Status too_big = send(t.upload_id, t.token, kRows + "3,1.00,x\n");
  EXPECT_TRUE(too_big.Is(ErrorCode::kLimitExceeded)) << too_big;
  Status too_small = send(t.upload_id, t.token, kRows.substr(1));
  EXPECT_TRUE(too_small.Is(ErrorCode::kInvalidArgument)) << too_small;
  std::string flipped = kRows;
  flipped[16] = '9';
  Status wrong_sum = send(t.upload_id, t.token, flipped);
  EXPECT_TRUE(wrong_sum.Is(ErrorCode::kInvalidArgument)) << wrong_sum;
  EXPECT_NE(wrong_sum.message().find("SHA-256"), std::string::npos);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 0);  // nothing refused was stored
  EXPECT_TRUE(send(t.upload_id, t.token, kRows).ok());
  EXPECT_TRUE(send(t.upload_id, t.token, kRows).Is(ErrorCode::kAlreadyExists));
  // Expired.
  clock_.AdvanceMicros(61'000'000);
  Status late = send(other.upload_id, other.token, kRows);
  EXPECT_TRUE(late.Is(ErrorCode::kPermissionDenied)) << late;
  EXPECT_NE(late.message().find("expired"), std::string::npos);
  EXPECT_EQ(CountUnder("ingestion-staging/"), 1);
}

TEST_F(ServiceTest, SubmissionsCheckEveryUploadTheyName) {
  const std::string p = AppendPipeline();
  const std::string q = AppendPipeline("other");
  const std::string bobs = Upload(p, kRows, "bob").value();
  Status foreign = Submit(p, "k1", Body(bobs)).status();
  EXPECT_TRUE(foreign.Is(ErrorCode::kPermissionDenied)) << foreign;
  const std::string for_q = Upload(q, kRows).value();
  EXPECT_TRUE(Submit(p, "k2", Body(for_q)).status().Is(ErrorCode::kInvalidArgument));
  const std::string unsent =
      Svc().CreateUpload(Ctx("ada"), p, UploadRequest{10, "", "", 0}).value().upload_id;
  Status missing = Submit(p, "k3", Body(unsent)).status();
  EXPECT_TRUE(missing.Is(ErrorCode::kPreconditionFailed)) << missing;
  EXPECT_TRUE(
      Submit(p, "k4", Body("01J0000000000000000000000W")).status().Is(ErrorCode::kNotFound));
  EXPECT_TRUE(Submit(p, "k5", Body("../../etc")).status().Is(ErrorCode::kNotFound));
  const std::string mine = Upload(p, kRows).value();
  EXPECT_TRUE(Submit(p, "k6", R"({"uploads":[")" + mine + R"(",")" + mine + R"("]})")
                  .status()
                  .Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Submit(p, "k7", Body(mine)).ok());
  Status used = Submit(p, "k8", Body(mine)).status();
  EXPECT_TRUE(used.Is(ErrorCode::kPreconditionFailed)) << used;
  EXPECT_NE(used.message().find("already submitted"), std::string::npos);
  // Unknown fields, quarantine, raised limits.
  const std::string fresh = Upload(p, kRows).value();
  EXPECT_TRUE(
      Submit(p, "k9", Body(fresh, R"("colour":1)")).status().Is(ErrorCode::kInvalidArgument));
  EXPECT_TRUE(Submit(p, "k10", Body(fresh, R"("quarantine":true)"))
                  .status()
                  .Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(Submit(p, "k11", Body(fresh, R"("limits":{"maxRows":1000000000000})"))
                  .status()
                  .Is(ErrorCode::kInvalidArgument));
  // A source identity needs every upload's digest: S3 uploads must declare it.
  const std::string undeclared = Upload(p, kRows, "ada", /*declare_sha=*/false).value();
  Status digestless = Submit(p, "k12", Body(undeclared, R"("source":{"id":"s"})")).status();
  if (testing::TestBackendName() == "s3") {
    EXPECT_TRUE(digestless.Is(ErrorCode::kInvalidArgument)) << digestless;
  } else {
    EXPECT_TRUE(digestless.ok()) << digestless;  // the server hashed what it received
  }
  EXPECT_EQ(CountUnder("_control/runs/"), digestless.ok() ? 2 : 1);
}

TEST_F(ServiceTest, AdmissionRefusesBeforeAnyRunOrKeyExists) {
  options_.limits.max_queued_runs = 2;
  const std::string p = AppendPipeline();
  ASSERT_TRUE(Submit(p, "a", Body(Upload(p, kRows).value())).ok());
  ASSERT_TRUE(Submit(p, "b", Body(Upload(p, "id,amount,note\n3,1,x\n").value())).ok());
  const std::string third = Upload(p, "id,amount,note\n4,1,x\n").value();
  Status full = Submit(p, "c", Body(third)).status();
  EXPECT_TRUE(full.Is(ErrorCode::kOverloaded)) << full;
  EXPECT_EQ(full.detail("limit"), "maxQueuedRuns");
  const int64_t wait = std::stoll(std::string(full.detail("retryAfterMillis")));
  EXPECT_GE(wait, options_.limits.retry_after_min_millis);
  EXPECT_LE(wait, options_.limits.retry_after_max_millis);
  EXPECT_EQ(CountUnder("_control/runs/"), 2);
  EXPECT_EQ(CountUnder("_control/requests/"), 2);
  // The upload stays for the retry, which after draining is a new request.
  EXPECT_EQ(Drain(), 2);
  Result<Submission> retried = Submit(p, "c", Body(third));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_FALSE(retried->replayed);
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Contents(), "1:150 2:250 3:100 4:100 ");
}

TEST_F(ServiceTest, EachAdmissionLimitTripsWithItsName) {
  {
    // Until runs are measured a run is taken to last 1 s: with a 1 s limit
    // the queue fills within a few runs per worker. (A service without
    // workers measures nothing and does not apply the limit: one worker,
    // not started; Drain runs the queue.)
    options_.limits.max_queue_wait_seconds = 1;
    options_.workers = 1;
    svc_.reset();
    const std::string p = AppendPipeline("wait");
    Status s;
    int admitted = 0;
    for (int i = 0; i < 20 && s.ok(); ++i) {
      const std::string row = "id,amount,note\n" + std::to_string(100 + i) + ",1,x\n";
      s = Submit(p, "w" + std::to_string(i), Body(Upload(p, row).value())).status();
      if (s.ok()) ++admitted;
    }
    EXPECT_EQ(s.detail("limit"), "maxQueueWait") << s;
    EXPECT_NE(s.message().find("would wait about"), std::string::npos) << s;
    EXPECT_GE(std::stoll(std::string(s.detail("retryAfterMillis"))),
              options_.limits.retry_after_min_millis);
    EXPECT_EQ(Drain(), admitted);
  }
  {
    options_.limits = {};
    options_.workers = 0;
    options_.limits.max_queued_bytes = 40;
    svc_.reset();
    const std::string p = AppendPipeline("bytes");
    Status first = Submit(p, "a1", Body(Upload(p, kRows).value())).status();
    ASSERT_TRUE(first.ok()) << first;
    // 21 bytes fit the ceiling alone, not behind the 33 queued.
    Status s = Submit(p, "b1", Body(Upload(p, "id,amount,note\n9,1,x\n").value())).status();
    EXPECT_TRUE(s.Is(ErrorCode::kOverloaded)) << s;
    EXPECT_EQ(s.detail("limit"), "maxQueuedBytes") << s;
    // 51 bytes never fit: refused for good.
    Status never =
        Submit(p, "c1", Body(Upload(p, kRows + "3,1,x\n4,1,y\n5,1,z\n").value())).status();
    EXPECT_TRUE(never.Is(ErrorCode::kLimitExceeded)) << never;
    EXPECT_EQ(never.detail("limit"), "maxQueuedBytes") << never;
    EXPECT_EQ(Drain(), 1);
  }
  {
    options_.limits = {};
    options_.limits.max_concurrent_runs_per_pipeline = 1;
    svc_.reset();
    const std::string p = AppendPipeline("conc");
    Status first = Submit(p, "a2", Body(Upload(p, kRows).value())).status();
    ASSERT_TRUE(first.ok()) << first;
    Status s = Submit(p, "b2", Body(Upload(p, "id,amount,note\n9,1,x\n").value())).status();
    EXPECT_EQ(s.detail("limit"), "maxConcurrentRuns") << s;
    EXPECT_EQ(Drain(), 1);
  }
  {
    options_.limits = {};
    options_.limits.tiny_runs_per_minute = 1;
    svc_.reset();
    const std::string p = AppendPipeline("tiny");
    ASSERT_TRUE(Submit(p, "a3", Body(Upload(p, "id,amount,note\n10,1,x\n").value())).ok());
    Status s = Submit(p, "b3", Body(Upload(p, "id,amount,note\n11,1,x\n").value())).status();
    EXPECT_EQ(s.detail("limit"), "tinyRunsPerMinute") << s;
    EXPECT_NE(s.message().find("batch"), std::string::npos);
    clock_.AdvanceMicros(61'000'000);  // the window moves on
    EXPECT_TRUE(Submit(p, "b3", Body(Upload(p, "id,amount,note\n11,1,x\n").value())).ok());
    EXPECT_EQ(Drain(), 2);
  }
  {
    options_.limits = {};
    // Upload creations and submissions draw on one bucket: three tokens.
    options_.limits.principal_burst = 3;
    options_.limits.principal_requests_per_second = 0.5;
    svc_.reset();
    const std::string p = AppendPipeline("rate");
    ASSERT_TRUE(Submit(p, "a4", Body(Upload(p, "id,amount,note\n12,1,x\n").value())).ok());
    const std::string b4 = Upload(p, "id,amount,note\n13,1,x\n").value();
    Status s = Submit(p, "b4", Body(b4)).status();
    EXPECT_EQ(s.detail("limit"), "principalRequestRate") << s;
    EXPECT_EQ(s.detail("retryAfterMillis"), "2000");  // one token at 0.5/s
    UploadRequest more;
    more.size = 10;
    Status upload = Svc().CreateUpload(Ctx("ada"), p, more).status();
    EXPECT_EQ(upload.detail("limit"), "principalRequestRate") << upload;
    // Another principal has a bucket of its own.
    EXPECT_TRUE(
        Submit(p, "d4", Body(Upload(p, "id,amount,note\n15,1,x\n", "bob").value()), "bob").ok());
  }
  {
    options_.limits = {};
    options_.limits.max_run_bytes = 10;
    svc_.reset();
    const std::string p = AppendPipeline("big");
    Status s = Svc().CreateUpload(Ctx("ada"), p, UploadRequest{11, "", "", 0}).status();
    EXPECT_TRUE(s.Is(ErrorCode::kLimitExceeded)) << s;
  }
}

TEST_F(ServiceTest, QuarantineIsRefusedEverywhere) {
  ASSERT_EQ(::setenv("LOAM_QUARANTINE", "1", 1), 0);
  Result<std::unique_ptr<Service>> refused = Service::Open(ws_, options_);
  ASSERT_EQ(::unsetenv("LOAM_QUARANTINE"), 0);
  EXPECT_TRUE(refused.status().Is(ErrorCode::kPermissionDenied)) << refused.status();
  const std::string p = AppendPipeline();
  Status q = Submit(p, "q", Body(Upload(p, kRows).value(), R"("quarantine":true)")).status();
  EXPECT_TRUE(q.Is(ErrorCode::kPermissionDenied)) << q;
  EXPECT_NE(q.message().find("quarantine"), std::string::npos);
}

TEST_F(ServiceTest, OpenNeedsAStrongUploadSecret) {
  options_.upload_secret = "short";
  Status weak = Service::Open(ws_, options_).status();
  if (testing::TestBackendName() == "s3") {
    EXPECT_TRUE(weak.ok()) << weak;  // S3 presigns with the store's credentials
  } else {
    EXPECT_TRUE(weak.Is(ErrorCode::kInvalidArgument)) << weak;
  }
}

TEST_F(ServiceTest, LimitsArePublished) {
  nlohmann::json l = nlohmann::json::parse(Svc().Limits());
  EXPECT_EQ(l["admission"]["maxQueuedRuns"], options_.limits.max_queued_runs);
  EXPECT_EQ(l["retention"]["idempotencySeconds"], 7 * 24 * 3600);
  EXPECT_EQ(l["load"]["maxRows"], options_.limits.max_rows);
}

// A paused pipeline's queued runs wait, in this process and in one that
// learns of the pause from the store; resumed, they run.
TEST_F(ServiceTest, APausedPipelinesQueuedRunsWaitUntilItIsResumed) {
  const std::string p = AppendPipeline();
  Result<Submission> sub = Submit(p, "k1", Body(Upload(p, kRows).value()));
  ASSERT_TRUE(sub.ok()) << sub.status();
  ASSERT_TRUE(Svc().UpdatePipeline(Ctx("ada"), p, R"({"paused":true})", "").ok());
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(Run(sub->run.id).state, RunState::kQueued);
  // Another process, which never saw the pause being made, leaves it too.
  Restart(nullptr);
  EXPECT_EQ(Drain(), 0);
  EXPECT_EQ(Run(sub->run.id).state, RunState::kQueued);
  EXPECT_EQ(Contents(), "");
  // A new submission is refused before anything is staged or reserved.
  Result<Submission> refused = Svc().SubmitInline(Ctx("ada"), p, "k2", {"text/csv", kRows});
  ASSERT_EQ(refused.status().error_code(), ErrorCode::kPipelinePaused) << refused.status();
  EXPECT_EQ(refused.status().detail("retryAfterMillis"), "30000");
  EXPECT_EQ(CountUnder("_control/requests/"), 1);  // k1 only
  // A caller who may not load through it is not told it is paused.
  EXPECT_TRUE(
      Svc().SubmitInline(Ctx("rex"), p, "k3", {"text/csv", kRows}).status().IsPermissionDenied());

  ASSERT_TRUE(Svc().UpdatePipeline(Ctx("ada"), p, R"({"paused":false})", "").ok());
  EXPECT_EQ(Drain(), 1);
  EXPECT_EQ(Run(sub->run.id).state, RunState::kSucceeded);
  EXPECT_EQ(Contents(), "1:150 2:250 ");
}

}  // namespace
}  // namespace loam::service
