// The upload path end to end over HTTP on the test backend: in memory the
// ticket names this server's PUT route; on S3 (the "/s3" copy, against Ceph
// RGW) it is a presigned URL to the bucket that signs the size, the digest
// and if-none-match, and the client sends its bytes there.
#include "common/status_macros.h"
#include "io/test_store.h"
#include "server/server_test_util.h"
#include "service/staging.h"

namespace loam::server {
namespace {

using nlohmann::json;

struct Url {
  std::string host;  // host:port, as signed
  uint16_t port = 0;
  std::string target;  // path?query
};
// "http://host:port/path?query"; the host must be loopback (this machine).
Url SplitUrl(const std::string& url) {
  const size_t host = url.find("://") + 3;
  const size_t path = url.find('/', host);
  const size_t colon = url.rfind(':', path);
  return {url.substr(host, path - host),
          static_cast<uint16_t>(std::stoi(url.substr(colon + 1, path - colon - 1))),
          url.substr(path)};
}

TEST(ServerBackendTest, UploadSubmitAndReadThroughTheTicketsUrl) {
  auto store = testing::NewTestStore();
  const std::string root = "srv" + std::to_string(::getpid()) + "-" + NewUlidString();
  WorkspaceOptions o;
  o.owner = "owner";
  auto ws = WorkspaceEngine::Init(store, root, o).value();
  ASSERT_TRUE(ws->CreateTable("t", Schema{{{"id", DataType::Int64(), false}}}, {"id"}).ok());
  const std::filesystem::path secret =
      std::filesystem::temp_directory_path() / ("loam-secret-" + NewUlidString());
  std::ofstream(secret) << kTestSecret;
  ServerConfig config;
  config.listen = "127.0.0.1:0";
  config.hs256_secret_file = secret.string();
  config.workers = 1;
  config.access_log = false;
  auto server = Server::Start(service::Service::OpenerOver(ws), config).value();
  const int64_t now = Clock::System()->NowMicros() / 1'000'000;
  const Headers auth = {
      {"Authorization",
       "Bearer " +
           SignJwt(kTestSecret,
                   json{{"sub", "owner"}, {"loam_workspace", ws->id()}, {"exp", now + 600}}.dump(),
                   true)
               .value()}};
  HttpResult p = HttpCall(server->port(), "POST", "/v1/pipelines",
                          R"({"name":"p","table":"t","format":"csv"})", auth);
  ASSERT_EQ(p.status, 201) << p.body;
  const std::string pipeline = p.Json()["id"];
  const std::string data = "id\n1\n2\n3\n";
  HttpResult t = HttpCall(server->port(), "POST", "/v1/pipelines/" + pipeline + "/uploads",
                          json{{"size", data.size()}, {"sha256", Sha256Hex(data)}}.dump(), auth);
  ASSERT_EQ(t.status, 201) << t.body;
  const json ticket = t.Json();
  Headers headers;
  for (const auto& [k, v] : ticket["headers"].items()) {
    if (k != "content-length") headers.emplace_back(k, v.get<std::string>());
  }
  const Url url = SplitUrl(ticket["url"]);
  const uint16_t port = url.port;
  const std::string& target = url.target;
  headers.emplace_back("Host", url.host);
  EXPECT_EQ(port == server->port(), testing::TestBackendName() != "s3") << ticket.dump();
  HttpResult wrong = HttpCall(port, ticket["method"], target, "id\n9\n9\n9\n", headers);
  EXPECT_GE(wrong.status, 400) << "other bytes of the same size are refused";
  HttpResult put = HttpCall(port, ticket["method"], target, data, headers);
  ASSERT_EQ(put.status, 200) << put.body;
  HttpResult again = HttpCall(port, ticket["method"], target, data, headers);
  EXPECT_GE(again.status, 400) << "an upload is received once";
  Headers submit = auth;
  submit.emplace_back("Idempotency-Key", "k1");
  HttpResult run = HttpCall(server->port(), "POST", "/v1/pipelines/" + pipeline + "/runs",
                            json{{"uploads", {ticket["uploadId"]}}}.dump(), submit);
  ASSERT_EQ(run.status, 202) << run.body;
  ASSERT_TRUE(server->service().WaitForEmptyQueue(std::chrono::seconds(120)).ok());
  HttpResult done =
      HttpCall(server->port(), "GET", "/v1/runs/" + run.Json()["id"].get<std::string>(), "", auth);
  EXPECT_EQ(done.Json()["state"], "succeeded") << done.body;
  HttpResult rows = HttpCall(server->port(), "GET", "/v1/tables/t/rows", "", auth);
  EXPECT_EQ(rows.body, "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
  server.reset();
  std::filesystem::remove(secret);
  if (testing::TestBackendName() == "s3") {
    for (const ObjectInfo& obj : store->ListAll(root + "/").value()) {
      static_cast<void>(store->Delete(obj.key));
    }
  }
}

}  // namespace
}  // namespace loam::server
