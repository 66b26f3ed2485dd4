// GET /v1/usage over real HTTP: the numbers admission uses for the caller,
// moved by exactly what the caller did.

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class UsageTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    config_.workers = 0;                                   // runs stay queued
    config_.limits.principal_burst = 10;                   // tokens that do not refill
    config_.limits.principal_requests_per_second = 0.001;  // during the test
  }
  json Usage(const std::string& sub = "ada") {
    HttpResult r = Call(sub, "GET", "/v1/usage", "/v1/usage");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  }
};

TEST_F(UsageTest, CountsWhatTheCallerHoldsAgainstItsLimits) {
  const json fresh = Usage();
  EXPECT_EQ(fresh["principal"], "ada");
  EXPECT_EQ(fresh["requests"]["tokens"], 10);
  EXPECT_EQ(fresh["requests"]["burst"], 10);
  EXPECT_EQ(fresh["queue"]["runs"], 0);
  EXPECT_EQ(fresh["uploads"]["outstanding"], 0);
  EXPECT_EQ(fresh["uploads"]["maxReceiving"], config_.limits.max_receiving_uploads_per_principal);
  EXPECT_EQ(fresh["pipelines"], json::object());

  HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                      R"({"name":"u","table":"orders","mode":"upsert","format":"csv"})");
  ASSERT_EQ(p.status, 201) << p.body;
  const std::string pipeline = p.Json()["id"];
  const std::string data = "id,amount,note\n1,1.00,a\n";
  const std::string submitted = Upload(pipeline, data);  // a token each
  Upload(pipeline, data);                                // handed out, never submitted
  ASSERT_EQ(Submit(pipeline, "k1", json{{"uploads", {submitted}}}.dump()).status, 202);

  const json now = Usage();
  EXPECT_EQ(now["requests"]["tokens"], 7);  // two upload creations and a submission
  EXPECT_EQ(now["queue"]["runs"], 1);
  EXPECT_EQ(now["queue"]["bytes"], data.size());
  EXPECT_EQ(now["uploads"]["outstanding"], 1);
  EXPECT_EQ(now["pipelines"][pipeline]["activeRuns"], 1) << now.dump();
  EXPECT_EQ(now["pipelines"][pipeline]["tinyRunsLastMinute"], 1) << now.dump();
  // Another principal's bucket is its own.
  EXPECT_EQ(Usage("rex")["requests"]["tokens"], 10);
  EXPECT_EQ(HttpCall(Port(), "GET", "/v1/usage").status, 401);
}

}  // namespace
}  // namespace loam::server
