// Validate, then load the same upload, over real HTTP: one validationOnly
// run and then one load run may name an upload; a second validation, a
// validation after the load, and a load while the validation runs are refused
// with their codes.

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class ValidateThenLoadTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    config_.workers = 0;  // runs stay queued until the test works them
  }
  std::string MakePipeline() {
    HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                        R"({"name":"v","table":"orders","mode":"upsert","format":"csv"})");
    EXPECT_EQ(p.status, 201) << p.body;
    return p.Json()["id"];
  }
  json UploadState(const std::string& id) {
    return Call("ada", "GET", "/v1/uploads/" + id, "/v1/uploads/{uploadId}").Json();
  }
  int64_t Rows() {
    return Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"];
  }
  json Worked(const std::string& run_id) {
    while (Srv().service().RunWorkerOnce().value()) {
    }
    return Call("ada", "GET", "/v1/runs/" + run_id, "/v1/runs/{id}").Json();
  }
};

TEST_F(ValidateThenLoadTest, AnUploadIsValidatedOnceThenLoadedOnce) {
  const std::string p = MakePipeline();
  const std::string u = Upload(p, "id,amount,note\n1,1.00,a\n2,2.00,b\n");
  const json validate = {{"uploads", {u}}, {"errorPolicy", "validationOnly"}};
  HttpResult v = Submit(p, "v1", validate.dump());
  ASSERT_EQ(v.status, 202) << v.body;
  const std::string vid = v.Json()["id"];

  // A load while the validation is queued: conflict, retried after a second.
  HttpResult early = Submit(p, "l1", json{{"uploads", {u}}}.dump());
  EXPECT_EQ(early.status, 409) << early.body;
  EXPECT_EQ(early.Json()["code"], "conflict");
  EXPECT_EQ(early.Json()["run"], vid);
  EXPECT_EQ(early.Header("retry-after"), "1");

  const json checked = Worked(vid);
  EXPECT_EQ(checked["state"], "succeeded") << checked.dump();
  EXPECT_EQ(checked["counters"]["rowsRead"], 2);
  EXPECT_EQ(Rows(), 0);  // validated, not loaded
  json seen = UploadState(u);
  EXPECT_EQ(seen["validatedBy"], vid) << seen.dump();
  EXPECT_FALSE(seen.contains("runId"));
  EXPECT_EQ(seen["received"], true);  // the validation's cleanup kept the bytes

  HttpResult again = Submit(p, "v2", validate.dump());
  EXPECT_EQ(again.status, 412) << again.body;
  EXPECT_EQ(again.Json()["code"], "precondition_failed");
  EXPECT_EQ(again.Json()["run"], vid);
  EXPECT_NE(again.Json()["detail"].get<std::string>().find("already validated"), std::string::npos);

  HttpResult load = Submit(p, "l1", json{{"uploads", {u}}}.dump());
  ASSERT_EQ(load.status, 202) << load.body;
  const std::string lid = load.Json()["id"];
  HttpResult after = Submit(p, "v3", validate.dump());  // the load holds it now
  EXPECT_EQ(after.status, 412) << after.body;
  EXPECT_EQ(after.Json()["run"], lid);
  EXPECT_EQ(Worked(lid)["state"], "succeeded");
  EXPECT_EQ(Rows(), 2);
  // The load's cleanup removed the upload; a second load finds nothing.
  EXPECT_EQ(Call("ada", "GET", "/v1/uploads/" + u, "/v1/uploads/{uploadId}").status, 404);
  HttpResult twice = Submit(p, "l2", json{{"uploads", {u}}}.dump());
  EXPECT_EQ(twice.status, 404) << twice.body;
  EXPECT_EQ(Rows(), 2);
}

TEST_F(ValidateThenLoadTest, AFailedValidationKeepsTheUploadAndTheTable) {
  const std::string p = MakePipeline();
  const std::string u = Upload(p, "id,amount,note\n1,not-a-number,a\n");
  HttpResult v = Submit(p, "v1", json{{"uploads", {u}}, {"errorPolicy", "validationOnly"}}.dump());
  ASSERT_EQ(v.status, 202) << v.body;
  const json failed = Worked(v.Json()["id"]);
  EXPECT_EQ(failed["state"], "failed");
  EXPECT_EQ(failed["errorCode"], "validation_failed");
  EXPECT_NE(failed["error"].get<std::string>().find("line 2, column 2"), std::string::npos)
      << failed.dump();
  EXPECT_EQ(UploadState(u)["received"], true);
  EXPECT_EQ(Rows(), 0);
}

}  // namespace
}  // namespace loam::server
