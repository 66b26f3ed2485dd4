// Idempotency-Key beyond run submissions, over real HTTP: pipeline and
// upload creation, cancel and revert answer a retry with the first answer
// (Idempotency-Replayed) and refuse another request under the key; a
// refusal did nothing and is not kept (a retry is checked afresh).

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class OperationKeyTest : public ServerTest {
 protected:
  HttpResult Keyed(const std::string& method, const std::string& target, const std::string& pattern,
                   const std::string& key, const std::string& body = "") {
    Headers h = {{"Content-Type", "application/json"}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call("ada", method, target, pattern, body, h);
  }
  std::string Pipeline(const std::string& name) {
    HttpResult p = Keyed("POST", "/v1/pipelines", "/v1/pipelines", "",
                         R"({"name":")" + name + R"(","table":"orders","format":"csv"})");
    EXPECT_EQ(p.status, 201) << p.body;
    return p.Json()["id"];
  }
  std::string Inline(const std::string& pipeline, const std::string& key, const std::string& id) {
    HttpResult r = Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs",
                        "/v1/pipelines/{id}/runs", "id,amount,note\n" + id + ",1.00,x\n",
                        {{"Content-Type", "text/csv"}, {"Idempotency-Key", key}});
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json()["id"];
  }
};

TEST_F(OperationKeyTest, APipelineIsCreatedOnceUnderOneKey) {
  const std::string spec = R"({"name":"k1","table":"orders","format":"csv"})";
  HttpResult first = Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k1", spec);
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.Header("idempotency-replayed"), "");
  HttpResult again = Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k1", spec);
  ASSERT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(again.Json()["id"], first.Json()["id"]);
  EXPECT_EQ(again.Header("location"), first.Header("location"));
  EXPECT_EQ(again.Header("etag"), first.Header("etag"));
  EXPECT_EQ(again.Header("content-type"), "application/json");
  // Without the key the same request is a second create: the name is taken.
  EXPECT_EQ(Keyed("POST", "/v1/pipelines", "/v1/pipelines", "", spec).status, 409);
  HttpResult other = Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k1",
                           R"({"name":"k2","table":"orders","format":"csv"})");
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_EQ(other.Json()["code"], "idempotency_key_reused");
  // A refusal leaves nothing behind, not even its key: the key is free.
  const std::string bad = R"({"name":"k3","table":"nope","format":"csv"})";
  EXPECT_EQ(Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k3", bad).status, 404);
  HttpResult bad_again = Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k3", bad);
  EXPECT_EQ(bad_again.status, 404);
  EXPECT_EQ(bad_again.Header("idempotency-replayed"), "");
  EXPECT_EQ(store_->ListAll("_control/operation-keys/").value().size(), 1u);  // create-k1's
  EXPECT_EQ(Keyed("POST", "/v1/pipelines", "/v1/pipelines", "create-k3",
                  R"({"name":"k3","table":"orders","format":"csv"})")
                .status,
            201);
  HttpResult long_key =
      Keyed("POST", "/v1/pipelines", "/v1/pipelines", std::string(256, 'k'), spec);
  EXPECT_EQ(long_key.status, 400) << long_key.body;
  EXPECT_NE(long_key.body.find("at most 255 characters"), std::string::npos);
}

TEST_F(OperationKeyTest, AnUploadTicketIsHandedOutOnceAndA429IsNotKept) {
  const std::string p = Pipeline("up");
  const std::string path = "/v1/pipelines/" + p + "/uploads";
  const std::string req = R"({"size":3})";
  HttpResult first = Keyed("POST", path, "/v1/pipelines/{id}/uploads", "up-1", req);
  ASSERT_EQ(first.status, 201) << first.body;
  HttpResult again = Keyed("POST", path, "/v1/pipelines/{id}/uploads", "up-1", req);
  ASSERT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.Json()["uploadId"], first.Json()["uploadId"]);
  EXPECT_EQ(again.Json()["url"], first.Json()["url"]);

  ASSERT_EQ(
      Keyed("PATCH", "/v1/pipelines/" + p, "/v1/pipelines/{id}", "", R"({"paused":true})").status,
      200);
  EXPECT_EQ(Keyed("POST", path, "/v1/pipelines/{id}/uploads", "up-2", req).status, 429);
  ASSERT_EQ(
      Keyed("PATCH", "/v1/pipelines/" + p, "/v1/pipelines/{id}", "", R"({"paused":false})").status,
      200);
  HttpResult after = Keyed("POST", path, "/v1/pipelines/{id}/uploads", "up-2", req);
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.Header("idempotency-replayed"), "");
  EXPECT_NE(after.Json()["uploadId"], first.Json()["uploadId"]);
}

TEST_F(OperationKeyTest, CancelAndRevertAnswerARetryAsTheFirstTime) {
  const std::string p = Pipeline("cr");
  const std::string run = Inline(p, "run-1", "1");
  HttpResult done = Call("ada", "GET", "/v1/runs/" + run + "?wait=30", "/v1/runs/{id}");
  ASSERT_EQ(done.Json()["state"], "succeeded") << done.body;
  const std::string revert = "/v1/runs/" + run + "/revert";
  HttpResult first = Keyed("POST", revert, "/v1/runs/{id}/revert", "revert-1");
  ASSERT_EQ(first.status, 200) << first.body;
  HttpResult again = Keyed("POST", revert, "/v1/runs/{id}/revert", "revert-1");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.Json()["commitId"], first.Json()["commitId"]);
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  // Without a key, a second revert finds nothing to revert.
  EXPECT_EQ(Keyed("POST", revert, "/v1/runs/{id}/revert", "").status, 412);
  // The key names that revert only: not a cancel of the same run.
  HttpResult cancel =
      Keyed("POST", "/v1/runs/" + run + "/cancel", "/v1/runs/{id}/cancel", "revert-1");
  EXPECT_EQ(cancel.status, 422) << cancel.body;
  EXPECT_EQ(cancel.Json()["code"], "idempotency_key_reused");
  // A cancel's refusal (the run is no longer queued) is checked again on a retry.
  HttpResult late = Keyed("POST", "/v1/runs/" + run + "/cancel", "/v1/runs/{id}/cancel", "c-1");
  EXPECT_EQ(late.status, 412) << late.body;
  HttpResult late_again =
      Keyed("POST", "/v1/runs/" + run + "/cancel", "/v1/runs/{id}/cancel", "c-1");
  EXPECT_EQ(late_again.status, 412);
  EXPECT_EQ(late_again.Header("idempotency-replayed"), "");
}

}  // namespace
}  // namespace loam::server
