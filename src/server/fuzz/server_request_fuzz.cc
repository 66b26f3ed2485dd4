// Fuzz target: whole HTTP requests through the API, as the server would hand
// them over: Beast's parser, then the router, the target and query parsing,
// authentication and every route's JSON or data body, against a real
// service on an in-memory workspace (no workers: submissions queue). A
// request without an Authorization header gets a valid token, so the bytes
// reach the routes. Errors are answers; a crash, a hang, an answer outside
// 200-599, a 500 (an internal error or an exception caught at the edge) or a
// problem without its stable code is a bug.
#include <boost/beast/http.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/workspace.h"
#include "io/memory_object_store.h"
#include "server/api.h"
#include "server/jwt.h"

namespace loam::server {
namespace {

constexpr char kSecret[] = "fuzz-secret-0123456789abcdef-0123456789";

// Collects a chunked answer's body.
class CollectingBody : public ChunkedBody {
 public:
  Status Begin(const Response& head) override {
    begun_ = true;
    status = head.result_int();
    return Status::OK();
  }
  Status Write(std::string_view chunk) override {
    body.append(chunk);
    return Status::OK();
  }
  Status End() override { return Status::OK(); }
  bool begun() const override { return begun_; }
  unsigned status = 0;
  std::string body;

 private:
  bool begun_ = false;
};

struct Fixture {
  std::unique_ptr<service::Service> service;
  std::unique_ptr<Api> api;
  std::string bearer;

  Fixture() {
    WorkspaceOptions o;
    o.owner = "owner";
    o.actor = "owner";
    auto ws = WorkspaceEngine::Init(std::make_shared<MemoryObjectStore>("fuzz"), "", o).value();
    Schema orders{{{"id", DataType::Int64(), false},
                   {"amount", DataType::Decimal(10, 2)},
                   {"note", DataType::String()}}};
    if (!ws->CreateTable("orders", orders, {"id"}).ok()) std::abort();
    service::ServiceOptions so;
    so.workers = 0;
    so.upload_secret = kSecret;
    service = service::Service::Open(ws, so).value();
    ApiOptions ao;
    ao.verifier = JwtVerifier::FromSecret(kSecret, {}).value();
    ao.public_url = "http://127.0.0.1:1";
    api = std::make_unique<Api>(service.get(), ao);
    const nlohmann::json claims = {
        {"sub", "owner"}, {"loam_workspace", ws->id()}, {"exp", int64_t{4} << 30}};
    bearer = "Bearer " + SignJwt(kSecret, claims.dump(), /*hs256=*/true).value();
  }
};

// Prints what broke the rule, then aborts (as libFuzzer expects).
[[noreturn]] void Fail(const Request& request, unsigned status, std::string_view body) {
  std::fprintf(stderr, "fuzz: %s %s answered %u: %.*s\n",
               std::string(request.method_string()).c_str(), std::string(request.target()).c_str(),
               status, static_cast<int>(body.size()), body.data());
  std::abort();
}

}  // namespace
}  // namespace loam::server

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace loam;
  using namespace loam::server;
  static Fixture* f = new Fixture();
  // The header through Beast's parser; the body is whatever follows the
  // blank line (the framing is Beast's, well fuzzed elsewhere: mutations
  // here should reach the routes, not break Content-Length).
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t end = input.find("\r\n\r\n");
  if (end == std::string_view::npos) return 0;
  http::request_parser<http::empty_body> parser;
  parser.header_limit(16 * 1024);
  parser.skip(true);  // the header alone
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(input.data(), end + 4), ec);
  if (ec || !parser.is_header_done()) return 0;
  Request request(parser.release().base());
  request.body() = std::string(input.substr(end + 4));
  if (request.find(http::field::authorization) == request.end()) {
    request.set(http::field::authorization, f->bearer);
  }
  const HttpHandler::BodyPlan plan = f->api->PlanBody(request.base());
  if (request.body().size() > plan.limit) return 0;  // the server answers 413 first
  Response r;
  CollectingBody chunked;
  if (plan.stream) {
    StringSource body(request.body());
    r = f->api->HandleStream(request.base(), body, {});
  } else {
    r = f->api->Handle(request, chunked, {});
  }
  const unsigned status = chunked.begun() ? chunked.status : r.result_int();
  if (status < 200 || status > 599 || status == 500) Fail(request, status, r.body());
  // A handler that began a chunked answer and then hit an exception returns
  // a 500 that never reaches the client: still a bug.
  if (r.result_int() == 500) Fail(request, 500, r.body());
  if (!chunked.begun() && status >= 400) {
    const auto problem = nlohmann::json::parse(r.body(), nullptr, false);
    if (!problem.is_object() || !problem.contains("code") || !problem["code"].is_string()) {
      Fail(request, status, r.body());
    }
  }
  return 0;
}
