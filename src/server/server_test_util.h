// Test fixture for the server: a workspace with table "orders" on local
// disk, a real `Server` on an ephemeral loopback port, HS256 tokens, and a
// small HTTP/1.1 client (Boost.Beast, synchronous) that talks to it.
#pragma once

#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "common/ulid.h"
#include "loam/object_store.h"
#include "server/jwt.h"
#include "server/openapi.h"
#include "server/server.h"
#include "service/staging.h"

namespace loam::server {

inline constexpr char kTestSecret[] = "server-test-secret-0123456789abcdef";

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json Json() const { return nlohmann::json::parse(body, nullptr, false); }
  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : it->second;
  }
};

using Headers = std::vector<std::pair<std::string, std::string>>;

// An answer as a test sees it: status, lower-case header names, body.
inline HttpResult ResultOf(const boost::beast::http::response<boost::beast::http::string_body>& m) {
  HttpResult out;
  out.status = static_cast<int>(m.result_int());
  for (const auto& f : m) {
    std::string name(f.name_string());
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    out.headers[name] = std::string(f.value());
  }
  out.body = m.body();
  return out;
}

// One request on a fresh connection.
inline HttpResult HttpCall(uint16_t port, const std::string& method, const std::string& target,
                           const std::string& body = "", const Headers& headers = {}) {
  namespace beast = boost::beast;
  namespace http = beast::http;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, "127.0.0.1:" + std::to_string(port));
  for (const auto& [k, v] : headers) {
    if (beast::iequals(k, "host")) {
      req.set(http::field::host, v);  // e.g. the host a presigned URL signed
    } else {
      req.insert(k, v);
    }
  }
  req.body() = body;
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    req.prepare_payload();
  }
  // A server may answer (413, 403) and close before the whole body is
  // sent, as HTTP allows: a failed write still reads the answer.
  beast::error_code write_error;
  http::write(stream, req, write_error);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  http::read(stream, buffer, parser);
  HttpResult out = ResultOf(parser.get());
  beast::error_code ec;
  stream.socket().shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  return out;
}

// The methods and statuses docs/openapi.yaml declares for `pattern`.
class OpenApiDoc {
 public:
  OpenApiDoc() : doc_(nlohmann::json::parse(OpenApiJson().value())) {}
  // Non-empty: what the document does not declare about this answer.
  std::string Undeclared(const std::string& method, const std::string& pattern,
                         const HttpResult& r) const {
    std::string m = method;
    for (char& c : m) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!doc_["paths"].contains(pattern)) return "no path " + pattern;
    const nlohmann::json& path = doc_["paths"][pattern];
    if (!path.contains(m)) return "no " + method + " on " + pattern;
    const nlohmann::json& responses = path[m]["responses"];
    const std::string status = std::to_string(r.status);
    if (!responses.contains(status)) return method + " " + pattern + " does not declare " + status;
    nlohmann::json resp = responses[status];
    if (resp.contains("$ref")) {
      const std::string ref = resp["$ref"];
      resp = doc_["components"]["responses"][ref.substr(ref.rfind('/') + 1)];
    }
    const std::string type = r.Header("content-type");
    if (!resp.contains("content")) return type.empty() ? "" : "unexpected content " + type;
    const std::string media = type.substr(0, type.find(';'));
    if (!resp["content"].contains(media)) {
      return method + " " + pattern + " " + status + " does not declare " + media;
    }
    return "";
  }

 private:
  nlohmann::json doc_;
};

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("loam-server-" + std::to_string(::getpid()) + "-" + NewUlidString());
    std::filesystem::create_directories(dir_);
    secret_file_ = (dir_ / "secret").string();
    std::ofstream(secret_file_) << kTestSecret << "\n";
    store_ = OpenObjectStore((dir_ / "ws").string()).value();
    WorkspaceOptions o;
    o.owner = "owner";
    o.actor = "owner";
    o.recovery_grace_micros = 0;
    ws_ = WorkspaceEngine::Init(store_, "", o).value();
    Schema orders{{{"id", DataType::Int64(), false},
                   {"amount", DataType::Decimal(10, 2)},
                   {"note", DataType::String()}}};
    ASSERT_TRUE(ws_->CreateTable("orders", orders, {"id"}).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "ada", Role::kWriter).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "rex", Role::kReader).ok());
    config_.listen = "127.0.0.1:0";
    config_.hs256_secret_file = secret_file_;
    config_.workers = 1;
    config_.access_log = false;
  }

  void TearDown() override {
    server_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  Server& Srv() {
    if (!server_) server_ = Server::Start(service::Service::OpenerOver(ws_), config_).value();
    return *server_;
  }
  uint16_t Port() { return Srv().port(); }

  std::string Token(const std::string& sub, int64_t ttl = 3600, nlohmann::json extra = {}) {
    const int64_t now = Clock::System()->NowMicros() / 1'000'000;
    nlohmann::json claims = {{"sub", sub}, {"loam_workspace", ws_->id()}, {"exp", now + ttl}};
    if (extra.is_object()) claims.update(extra);
    return SignJwt(kTestSecret, claims.dump(), /*hs256=*/true).value();
  }
  Headers Auth(const std::string& sub) { return {{"Authorization", "Bearer " + Token(sub)}}; }

  // A request as `sub`, checked against the OpenAPI document under `pattern`.
  HttpResult Call(const std::string& sub, const std::string& method, const std::string& target,
                  const std::string& pattern, const std::string& body = "", Headers headers = {}) {
    if (!sub.empty()) headers.emplace_back("Authorization", "Bearer " + Token(sub));
    HttpResult r = HttpCall(Port(), method, target, body, headers);
    EXPECT_EQ(doc_.Undeclared(method, pattern, r), "") << r.body;
    // tests/openapi/validate.mjs checks every body against its schema.
    if (const char* record = std::getenv("LOAM_API_RECORD"); record != nullptr) {
      std::ofstream(record, std::ios::app)
          << nlohmann::json{{"method", method},
                            {"pattern", pattern},
                            {"status", r.status},
                            {"contentType", r.Header("content-type")},
                            {"body", r.body}}
                 .dump()
          << "\n";
    }
    return r;
  }

  // Creates an upload (with `extra` fields, e.g. fileName) and PUTs `data`
  // to its URL exactly as the ticket says.
  std::string Upload(const std::string& pipeline, const std::string& data,
                     const std::string& sub = "ada",
                     const nlohmann::json& extra = nlohmann::json::object()) {
    nlohmann::json req = {{"size", data.size()}, {"sha256", Sha256Hex(data)}};
    req.update(extra);
    HttpResult t = Call(sub, "POST", "/v1/pipelines/" + pipeline + "/uploads",
                        "/v1/pipelines/{id}/uploads", req.dump());
    EXPECT_EQ(t.status, 201) << t.body;
    const nlohmann::json ticket = t.Json();
    Headers headers;
    for (const auto& [k, v] : ticket["headers"].items()) {
      if (k != "content-length") headers.emplace_back(k, v.get<std::string>());
    }
    const std::string url = ticket["url"];
    const std::string prefix = Srv().url();
    EXPECT_EQ(url.substr(0, prefix.size()), prefix);
    HttpResult put =
        Call("", "PUT", url.substr(prefix.size()), "/v1/uploads/{uploadId}", data, headers);
    EXPECT_EQ(put.status, 200) << put.body;
    return ticket["uploadId"];
  }

  // A JSON run submission to `pipeline` as `sub`, with `key` unless empty.
  HttpResult Submit(const std::string& pipeline, const std::string& key, const std::string& body,
                    const std::string& sub = "ada") {
    Headers h = {{"Content-Type", "application/json"}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call(sub, "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs", body,
                h);
  }

  std::filesystem::path dir_;
  std::string secret_file_;
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  ServerConfig config_;
  std::unique_ptr<Server> server_;
  OpenApiDoc doc_;
};

// The API tests' fixture: a server with helpers for pipelines and runs.
inline constexpr char kPipeline[] =
    R"({"name":"orders-in","table":"orders","mode":"upsert","format":"csv"})";

class ApiTest : public ServerTest {
 protected:
  std::string MakePipeline(const std::string& spec = kPipeline) {
    HttpResult r = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines", spec);
    EXPECT_EQ(r.status, 201) << r.body;
    return r.Json().value("id", "");
  }

  nlohmann::json WaitRun(const std::string& run_id) {
    EXPECT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
    HttpResult r = Call("ada", "GET", "/v1/runs/" + run_id, "/v1/runs/{id}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  }
};

}  // namespace loam::server
