// Contract rules over real HTTP that reviews found the code did not keep:
// each test here failed before its fix.

#include "engine/retention.h"
#include "server/server_test_util.h"
#include "service/pipeline.h"

namespace loam::server {
namespace {

using nlohmann::json;

class ContractTest : public ServerTest {
 protected:
  HttpResult CreatePipeline(const json& spec, const std::string& sub = "ada") {
    return Call(sub, "POST", "/v1/pipelines", "/v1/pipelines", spec.dump());
  }
  HttpResult Patch(const std::string& id, const json& patch, const std::string& sub = "ada") {
    return Call(sub, "PATCH", "/v1/pipelines/" + id, "/v1/pipelines/{id}", patch.dump());
  }
  int64_t RowCount() {
    return Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"];
  }
  json Upsert(const std::vector<std::string>& keys) {
    return {{"name", "orders-up"},
            {"table", "orders"},
            {"mode", "upsert"},
            {"format", "csv"},
            {"keyColumns", keys}};
  }
};

// An upsert into a keyed table matches on its declared key, never on other
// columns: else a run could insert a row whose declared key the table holds.
TEST_F(ContractTest, UpsertPipelinesKeyOnTheTablesDeclaredKey) {
  HttpResult other = CreatePipeline(Upsert({"note"}));
  ASSERT_EQ(other.status, 400) << other.body;
  EXPECT_EQ(other.Json()["code"], "invalid_argument");
  EXPECT_NE(other.body.find("must match on its declared key (id)"), std::string::npos)
      << other.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json()["pipelines"].size(), 0u);

  HttpResult same = CreatePipeline(Upsert({"id"}));
  ASSERT_EQ(same.status, 201) << same.body;
  const std::string id = same.Json()["id"];
  HttpResult patched = Patch(id, {{"keyColumns", {"amount", "id"}}});
  ASSERT_EQ(patched.status, 400) << patched.body;
  EXPECT_EQ(patched.Json()["code"], "invalid_argument");
  HttpResult kept = Call("ada", "GET", "/v1/pipelines/" + id, "/v1/pipelines/{id}");
  EXPECT_EQ(kept.Json()["keyColumns"], json({"id"}));
}

// A pipeline stored before the rule (or written by an older build) is
// checked again when its run starts: the run fails and the table is unchanged.
TEST_F(ContractTest, ARunOfAPipelineKeyedOnOtherColumnsFailsAndChangesNothing) {
  service::Pipeline legacy;
  ASSERT_TRUE(service::PipelineSpec::FromJson(Upsert({"note"}).dump()).ok());
  legacy.spec = service::PipelineSpec::FromJson(Upsert({"note"}).dump()).value();
  legacy.id = NewUlidString();
  legacy.table_sid = ws_->Current().value().Find("orders")->def.sid;
  legacy.created_by = legacy.updated_by = "ada";
  ASSERT_TRUE(service::PipelineStore(store_, "").Create(legacy).ok());

  Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "legacy-1"}};
  HttpResult run = Call("ada", "POST", "/v1/pipelines/" + legacy.id + "/runs",
                        "/v1/pipelines/{id}/runs", "id,amount,note\n1,1.00,a\n", h);
  ASSERT_EQ(run.status, 202) << run.body;
  ASSERT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  HttpResult done =
      Call("ada", "GET", "/v1/runs/" + run.Json()["id"].get<std::string>(), "/v1/runs/{id}");
  EXPECT_EQ(done.Json()["state"], "failed") << done.body;
  EXPECT_EQ(done.Json()["errorCode"], "validation_failed") << done.body;
  EXPECT_NE(done.body.find("must match on its declared key (id)"), std::string::npos) << done.body;
  EXPECT_EQ(RowCount(), 0);
}

// A compaction merges the runs' fragments; a run's revert over HTTP still
// removes exactly its rows, and a second revert finds nothing to revert.
TEST_F(ContractTest, AnAppendRunRevertsExactlyItsRowsAfterACompaction) {
  HttpResult made = CreatePipeline(
      {{"name", "orders-in"}, {"table", "orders"}, {"mode", "append"}, {"format", "csv"}});
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string target = "/v1/pipelines/" + made.Json()["id"].get<std::string>() + "/runs";
  std::vector<std::string> runs;
  for (int i = 1; i <= 5; ++i) {
    const std::string id = std::to_string(i);
    Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "c-" + id}};
    HttpResult run = Call("ada", "POST", target, "/v1/pipelines/{id}/runs",
                          "id,amount,note\n" + id + "," + id + ".00,a\n", h);
    ASSERT_EQ(run.status, 202) << run.body;
    runs.push_back(run.Json()["id"]);
    ASSERT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  }
  WriteRequest compact;
  compact.table = "orders";
  compact.mode = WriteMode::kCompact;
  compact.principal = "owner";
  Result<WriteResult> compacted = ws_->Write(compact);
  ASSERT_TRUE(compacted.ok()) << compacted.status();
  ASSERT_EQ(compacted->compacted.fragments_removed, 5);
  HttpResult reverted =
      Call("ada", "POST", "/v1/runs/" + runs[2] + "/revert", "/v1/runs/{id}/revert");
  EXPECT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(RowCount(), 4);
  HttpResult rows = Call("ada", "GET", "/v1/tables/orders/rows", "/v1/tables/{name}/rows");
  EXPECT_EQ(rows.body.find("\"id\":3"), std::string::npos) << rows.body;
  EXPECT_NE(rows.body.find("\"id\":4"), std::string::npos) << rows.body;
  HttpResult again = Call("ada", "POST", "/v1/runs/" + runs[2] + "/revert", "/v1/runs/{id}/revert");
  EXPECT_EQ(again.Json()["code"], "precondition_failed") << again.body;
  EXPECT_EQ(RowCount(), 4);
}

// A PATCH obeys every rule a create obeys.
TEST_F(ContractTest, PatchAppliesEveryCreateRule) {
  HttpResult made = CreatePipeline(
      {{"name", "orders-in"}, {"table", "orders"}, {"mode", "append"}, {"format", "csv"}});
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string id = made.Json()["id"];
  HttpResult skip = Patch(id, {{"errorPolicy", "skipRows"}});
  EXPECT_EQ(skip.status, 403) << skip.body;  // the skipRows flag is off
  EXPECT_NE(skip.body.find("feature flag"), std::string::npos) << skip.body;
  HttpResult additive = Patch(
      id, {{"schemaPolicy",
            {{"mode", "additive"}, {"addColumns", {{{"name", "region"}, {"type", "string"}}}}}}});
  EXPECT_EQ(additive.status, 403) << additive.body;  // the table does not allow it
  HttpResult upsert = Patch(id, {{"mode", "upsert"}, {"keyColumns", {"note"}}});
  EXPECT_EQ(upsert.status, 400) << upsert.body;
  HttpResult kept = Call("ada", "GET", "/v1/pipelines/" + id, "/v1/pipelines/{id}");
  EXPECT_EQ(kept.Json()["mode"], "append");
  EXPECT_EQ(kept.Json()["errorPolicy"], "failRun");
}

// Stable codes for refusals that are not what `conflict` or
// `invalid_argument` promise: a revert blocked by later commits is not worth
// retrying, a wrong method is a 405, and an over-long principal is a bad token.
TEST_F(ContractTest, RefusalsCarryTheirOwnStableCodes) {
  HttpResult method = HttpCall(Port(), "DELETE", "/v1/tables", "", Auth("ada"));
  EXPECT_EQ(method.status, 405);
  EXPECT_EQ(method.Json()["code"], "method_not_allowed");

  HttpResult long_sub = HttpCall(Port(), "GET", "/v1/tables", "", Auth(std::string(128, 'a')));
  EXPECT_EQ(long_sub.status, 401) << long_sub.body;
  EXPECT_EQ(long_sub.Json()["code"], "unauthenticated");
  EXPECT_NE(long_sub.body.find("1 to 127 bytes"), std::string::npos) << long_sub.body;
  EXPECT_EQ(HttpCall(Port(), "GET", "/v1/tables", "", Auth(std::string(127, 'a'))).status, 200);

  HttpResult made = CreatePipeline(Upsert({}));
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string target = "/v1/pipelines/" + made.Json()["id"].get<std::string>() + "/runs";
  // Runs 1 and 2 write key 1; run 3 writes key 3 after them.
  std::vector<std::string> runs;
  for (const std::string id : {"1", "2", "3"}) {
    const std::string rows =
        "id,amount,note\n" + std::string(id == "3" ? "3" : "1") + "," + id + ".00,a\n";
    Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "run-" + id}};
    HttpResult run = Call("ada", "POST", target, "/v1/pipelines/{id}/runs", rows, h);
    ASSERT_EQ(run.status, 202) << run.body;
    runs.push_back(run.Json()["id"]);
    ASSERT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  }
  HttpResult blocked =
      Call("ada", "POST", "/v1/runs/" + runs[0] + "/revert", "/v1/runs/{id}/revert");
  EXPECT_EQ(blocked.status, 409) << blocked.body;
  EXPECT_EQ(blocked.Json()["code"], "revert_blocked");
  EXPECT_EQ(blocked.Json()["run"], runs[0]);
  EXPECT_EQ(RowCount(), 2);
  // Run 2 reverts although run 3 committed after it: key 1 is back to 1.00.
  HttpResult reverted =
      Call("ada", "POST", "/v1/runs/" + runs[1] + "/revert", "/v1/runs/{id}/revert");
  EXPECT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(RowCount(), 2);
  HttpResult rows =
      Call("ada", "GET", "/v1/tables/orders/rows?where=id%20%3D%201", "/v1/tables/{name}/rows");
  EXPECT_EQ(rows.body, "{\"id\":1,\"amount\":1.00,\"note\":\"a\"}\n");
}

// An upsert run whose table state before it is past the time-travel window
// is not reverted: 410 version_expired naming the run, the rows unchanged.
TEST_F(ContractTest, ARevertPastTheWindowIsGone) {
  HttpResult made = CreatePipeline(Upsert({}));
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string target = "/v1/pipelines/" + made.Json()["id"].get<std::string>() + "/runs";
  std::vector<std::string> runs;
  for (const std::string id : {"1", "2"}) {
    Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "w-" + id}};
    HttpResult run = Call("ada", "POST", target, "/v1/pipelines/{id}/runs",
                          "id,amount,note\n" + id + "," + id + ".00,a\n", h);
    ASSERT_EQ(run.status, 202) << run.body;
    runs.push_back(run.Json()["id"]);
    ASSERT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  }
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const int64_t later = std::chrono::duration_cast<std::chrono::microseconds>(now).count() +
                        2 * 3600LL * 1'000'000;  // two hours on, past a one-minute window
  ASSERT_TRUE(ExpireVersions(*ws_, later, 60, 0).ok());
  HttpResult gone = Call("ada", "POST", "/v1/runs/" + runs[1] + "/revert", "/v1/runs/{id}/revert");
  EXPECT_EQ(gone.status, 410) << gone.body;
  EXPECT_EQ(gone.Json()["code"], "version_expired") << gone.body;
  EXPECT_EQ(gone.Json()["run"], runs[1]) << gone.body;
  EXPECT_EQ(RowCount(), 2);
}

// Every 429 names its limit's value in RateLimit-Policy, a pipeline's own
// concurrency limit included.
TEST_F(ContractTest, ConcurrencyRefusalsCarryTheirRateLimitPolicy) {
  config_.workers = 0;  // runs stay queued
  HttpResult made = CreatePipeline({{"name", "one-at-a-time"},
                                    {"table", "orders"},
                                    {"format", "csv"},
                                    {"limits", {{"maxConcurrentRuns", 1}}}});
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string target = "/v1/pipelines/" + made.Json()["id"].get<std::string>() + "/runs";
  std::vector<HttpResult> answers;
  for (const std::string id : {"1", "2"}) {
    Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "c-" + id}};
    answers.push_back(Call("ada", "POST", target, "/v1/pipelines/{id}/runs",
                           "id,amount,note\n" + id + ",1.00,a\n", h));
  }
  EXPECT_EQ(answers[0].status, 202) << answers[0].body;
  ASSERT_EQ(answers[1].status, 429) << answers[1].body;
  EXPECT_EQ(answers[1].Json()["limit"], "maxConcurrentRuns");
  EXPECT_EQ(answers[1].Header("ratelimit-policy"), "\"maxConcurrentRuns\";q=1");
}

// A service run's errors name the upload (its id, and the client's file
// name when it gave one), not the staging object's "data".
TEST_F(ContractTest, RunErrorsNameTheUploadAndItsFileName) {
  HttpResult made = CreatePipeline(Upsert({}));
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string p = made.Json()["id"];
  const std::string upload =
      Upload(p, "id,amount,note\n5,1.00,a\n5,2.00,b\n", "ada", {{"fileName", "orders.csv"}});
  HttpResult run = Submit(p, "dup", json{{"uploads", {upload}}}.dump());
  ASSERT_EQ(run.status, 202) << run.body;
  ASSERT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  HttpResult done =
      Call("ada", "GET", "/v1/runs/" + run.Json()["id"].get<std::string>(), "/v1/runs/{id}");
  EXPECT_EQ(done.Json()["state"], "failed") << done.body;
  const std::string named = "orders.csv (upload " + upload + ")";
  EXPECT_NE(done.body.find(named + " line 2 and " + named + " line 3"), std::string::npos)
      << done.body;
  for (const std::string& bad :
       {std::string("a/b.csv"), std::string(256, 'x'), std::string("tab\there")}) {
    HttpResult refused =
        Call("ada", "POST", "/v1/pipelines/" + p + "/uploads", "/v1/pipelines/{id}/uploads",
             json{{"size", 3}, {"fileName", bad}}.dump());
    EXPECT_EQ(refused.status, 400) << bad;
    EXPECT_NE(refused.body.find("fileName must be"), std::string::npos) << refused.body;
  }
  EXPECT_EQ(RowCount(), 0);
}

// An upload's creator sees whether its bytes arrived (how a client confirms
// a resent PUT's 409 or 412); anyone else finds no such upload.
TEST_F(ContractTest, AnUploadsCreatorSeesWhetherItsBytesArrived) {
  const std::string pipeline =
      CreatePipeline({{"name", "in"}, {"table", "orders"}, {"format", "csv"}}).Json()["id"];
  HttpResult t =
      Call("ada", "POST", "/v1/pipelines/" + pipeline + "/uploads", "/v1/pipelines/{id}/uploads",
           json{{"size", 4}, {"fileName", "a.csv"}}.dump());
  ASSERT_EQ(t.status, 201) << t.body;
  const std::string pending = t.Json()["uploadId"];
  HttpResult before = Call("ada", "GET", "/v1/uploads/" + pending, "/v1/uploads/{uploadId}");
  ASSERT_EQ(before.status, 200) << before.body;
  EXPECT_EQ(before.Json()["received"], false);
  EXPECT_EQ(before.Json()["fileName"], "a.csv");
  const std::string sent = Upload(pipeline, "id,amount,note\n1,1.00,a\n");
  HttpResult after = Call("ada", "GET", "/v1/uploads/" + sent, "/v1/uploads/{uploadId}");
  ASSERT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.Json()["received"], true);
  EXPECT_EQ(Call("rex", "GET", "/v1/uploads/" + sent, "/v1/uploads/{uploadId}").status, 404);
  EXPECT_EQ(Call("ada", "GET", "/v1/uploads/nope", "/v1/uploads/{uploadId}").status, 404);
}

}  // namespace
}  // namespace loam::server
