// Pipelines' entity tags over real HTTP: every answer carries ETag, and a
// PATCH or DELETE with a stale If-Match is 412 and changes nothing.

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class PipelineEtagTest : public ServerTest {};

TEST_F(PipelineEtagTest, IfMatchRefusesChangesToAStateThatIsGone) {
  HttpResult created = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                            R"({"name":"e","table":"orders","mode":"upsert","format":"csv"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.Json()["id"];
  const std::string path = "/v1/pipelines/" + id;
  const std::string first = created.Header("etag");
  ASSERT_EQ(first.size(), 18u) << first;  // a quoted tag
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").Header("etag"), first);

  HttpResult changed = Call("ada", "PATCH", path, "/v1/pipelines/{id}",
                            R"({"errorPolicy":"validationOnly"})", {{"If-Match", first}});
  ASSERT_EQ(changed.status, 200) << changed.body;
  const std::string second = changed.Header("etag");
  EXPECT_NE(second, first);

  HttpResult stale = Call("ada", "PATCH", path, "/v1/pipelines/{id}",
                          R"({"errorPolicy":"failRun"})", {{"If-Match", first}});
  EXPECT_EQ(stale.status, 412) << stale.body;
  EXPECT_EQ(stale.Json()["code"], "precondition_failed");
  EXPECT_NE(stale.Json()["detail"].get<std::string>().find("changed"), std::string::npos);
  HttpResult now = Call("ada", "GET", path, "/v1/pipelines/{id}");
  EXPECT_EQ(now.Json()["errorPolicy"], "validationOnly");  // unchanged by the refusal
  EXPECT_EQ(now.Header("etag"), second);

  HttpResult two =
      Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", first + ", " + second}});
  EXPECT_EQ(two.status, 400) << two.body;
  HttpResult gone = Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", first}});
  EXPECT_EQ(gone.status, 412) << gone.body;
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").status, 200);  // still there
  EXPECT_EQ(Call("ada", "PATCH", path, "/v1/pipelines/{id}", R"({"errorPolicy":"failRun"})",
                 {{"If-Match", "*"}})
                .status,
            200);
  const std::string third = Call("ada", "GET", path, "/v1/pipelines/{id}").Header("etag");
  EXPECT_EQ(Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", third}}).status,
            204);
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").status, 404);
}

}  // namespace
}  // namespace loam::server
