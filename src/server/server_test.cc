// The API over real HTTP: routes, statuses, auth, identities, uploads
// and limits of bodies and targets. Every answer is checked against
// docs/openapi.yaml.

#include "common/logging.h"
#include "io/fault_injection_object_store.h"
#include "server/server_test_util.h"
#include "service/staging.h"

namespace loam::server {
namespace {

using nlohmann::json;

TEST_F(ApiTest, HealthAndReadiness) {
  HttpResult h = Call("", "GET", "/healthz", "/healthz");
  EXPECT_EQ(h.status, 200);
  HttpResult r = Call("", "GET", "/readyz", "/readyz");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["workspaceId"], ws_->id());
  Srv().service().Stop();  // workers gone: not ready
  HttpResult stopped = Call("", "GET", "/readyz", "/readyz");
  EXPECT_EQ(stopped.status, 503);
  EXPECT_EQ(stopped.Json()["code"], "unavailable");
}

TEST_F(ApiTest, UnknownRoutesAndMethods) {
  HttpResult r = HttpCall(Port(), "GET", "/v1/nothing", "", Auth("ada"));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.Header("content-type"), "application/problem+json");
  EXPECT_EQ(r.Json()["code"], "not_found");
  HttpResult m = HttpCall(Port(), "DELETE", "/v1/tables", "", Auth("ada"));
  EXPECT_EQ(m.status, 405);
  EXPECT_EQ(m.Header("allow"), "POST, GET");
}

TEST_F(ApiTest, EveryAnswerCarriesARequestId) {
  HttpResult fresh = HttpCall(Port(), "GET", "/healthz");
  EXPECT_EQ(fresh.Header("request-id").size(), 26u) << fresh.Header("request-id");  // a ULID
  EXPECT_NE(HttpCall(Port(), "GET", "/healthz").Header("request-id"), fresh.Header("request-id"));
  // A client's own id comes back, in the header and in a problem body.
  const std::string mine = "client-42:a/b=+_.";
  HttpResult refused = HttpCall(Port(), "GET", "/v1/tables", "", {{"Request-Id", mine}});
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.Header("request-id"), mine);
  EXPECT_EQ(refused.Json()["requestId"], mine);
  HttpResult missing = HttpCall(Port(), "GET", "/v1/nothing", "", Auth("ada"));
  EXPECT_EQ(missing.Json()["requestId"], missing.Header("request-id"));
  HttpResult ok = HttpCall(Port(), "GET", "/v1/tables", "", {{"Request-Id", mine}, Auth("ada")[0]});
  EXPECT_EQ(ok.status, 200);
  EXPECT_EQ(ok.Header("request-id"), mine);
  // One that is not an id is replaced, never refused.
  for (const std::string& bad :
       {std::string("has space"), std::string(129, 'a'), std::string("quote\"")}) {
    HttpResult r = HttpCall(Port(), "GET", "/healthz", "", {{"Request-Id", bad}});
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.Header("request-id").size(), 26u) << bad;
  }
}

TEST_F(ApiTest, EveryV1RouteNeedsABearerToken) {
  for (const char* target : {"/v1/tables", "/v1/pipelines", "/v1/runs", "/v1/limits",
                             "/v1/openapi.json", "/v1/tables/orders"}) {
    HttpResult r = HttpCall(Port(), "GET", target);
    EXPECT_EQ(r.status, 401) << target;
    EXPECT_EQ(r.Json()["code"], "unauthenticated") << target;
    EXPECT_EQ(r.Header("www-authenticate").substr(0, 6), "Bearer") << target;
  }
}

TEST_F(ApiTest, TablesCreateDescribeReadHistoryAndGrants) {
  const std::string doc =
      R"({"name":"events","columns":[{"name":"id","type":"int64","nullable":false},{"name":"v","type":"string"}],"keys":["id"]})";
  HttpResult denied = Call("ada", "POST", "/v1/tables", "/v1/tables", doc);
  EXPECT_EQ(denied.status, 403) << denied.body;
  HttpResult created = Call("owner", "POST", "/v1/tables", "/v1/tables", doc);
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Header("location"), "/v1/tables/events");
  EXPECT_EQ(created.Json()["keys"], json::array({"id"}));
  EXPECT_EQ(created.Json()["rowCount"], 0);
  HttpResult again = Call("owner", "POST", "/v1/tables", "/v1/tables", doc);
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.Json()["code"], "already_exists");
  HttpResult bad = Call("owner", "POST", "/v1/tables", "/v1/tables", R"({"name":"x","colums":[]})");
  EXPECT_EQ(bad.status, 400);

  HttpResult list = Call("rex", "GET", "/v1/tables", "/v1/tables");
  ASSERT_EQ(list.status, 200);
  ASSERT_EQ(list.Json()["tables"].size(), 1u);  // rex reads orders only
  EXPECT_EQ(list.Json()["tables"][0]["name"], "orders");
  HttpResult hidden = Call("rex", "GET", "/v1/tables/events", "/v1/tables/{name}");
  EXPECT_EQ(hidden.status, 403);
  HttpResult missing = Call("rex", "GET", "/v1/tables/nope", "/v1/tables/{name}");
  EXPECT_EQ(missing.status, 404);

  HttpResult grant = Call("owner", "PUT", "/v1/tables/events/grants/rex",
                          "/v1/tables/{name}/grants/{principal}", R"({"role":"reader"})");
  ASSERT_EQ(grant.status, 200) << grant.body;
  EXPECT_EQ(Call("rex", "GET", "/v1/tables/events", "/v1/tables/{name}").status, 200);
  HttpResult not_admin = Call("rex", "PUT", "/v1/tables/events/grants/bob",
                              "/v1/tables/{name}/grants/{principal}", R"({"role":"admin"})");
  EXPECT_EQ(not_admin.status, 403);
  HttpResult bad_role = Call("owner", "PUT", "/v1/tables/events/grants/bob",
                             "/v1/tables/{name}/grants/{principal}", R"({"role":"god"})");
  EXPECT_EQ(bad_role.status, 400);
  HttpResult revoke = Call("owner", "DELETE", "/v1/tables/events/grants/rex",
                           "/v1/tables/{name}/grants/{principal}");
  EXPECT_EQ(revoke.status, 204);
  EXPECT_EQ(Call("rex", "GET", "/v1/tables/events", "/v1/tables/{name}").status, 403);

  HttpResult history =
      Call("owner", "GET", "/v1/tables/events/history", "/v1/tables/{name}/history");
  ASSERT_EQ(history.status, 200);
  EXPECT_GE(history.Json()["history"].size(), 3u);  // created, granted, revoked
}

TEST_F(ApiTest, UploadSubmitRunAndReadRows) {
  const std::string pipeline = MakePipeline();
  const int64_t before =
      Call("rex", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["manifestVersion"];
  const std::string upload = Upload(pipeline, "id,amount,note\n1,9.50,a\n2,3.25,b\n3,1.00,c\n");
  const std::string body = json{{"uploads", {upload}}, {"source", {{"id", "day-1"}}}}.dump();
  HttpResult run = Submit(pipeline, "key-1", body);
  ASSERT_EQ(run.status, 202) << run.body;
  const std::string run_id = run.Json()["id"];
  EXPECT_EQ(run.Header("location"), "/v1/runs/" + run_id);
  EXPECT_EQ(run.Json()["pipelineId"], pipeline);
  EXPECT_EQ(run.Header("idempotency-replayed"), "");

  HttpResult replay = Submit(pipeline, "key-1", body);
  ASSERT_EQ(replay.status, 202) << replay.body;
  EXPECT_EQ(replay.Json()["id"], run_id);
  EXPECT_EQ(replay.Header("idempotency-replayed"), "true");

  const json done = WaitRun(run_id);
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["counters"]["inserted"], 3);
  EXPECT_EQ(done["counters"]["rowsRead"], 3);
  EXPECT_TRUE(done["commit"]["commitId"].is_string());

  HttpResult rows = Call("rex", "GET", "/v1/tables/orders/rows?limit=2", "/v1/tables/{name}/rows");
  ASSERT_EQ(rows.status, 200) << rows.body;
  EXPECT_EQ(rows.Header("content-type"), "application/x-ndjson");
  EXPECT_EQ(
      rows.body,
      "{\"id\":1,\"amount\":9.50,\"note\":\"a\"}\n{\"id\":2,\"amount\":3.25,\"note\":\"b\"}\n");
  HttpResult where =
      Call("rex", "GET", "/v1/tables/orders/rows?where=note%20%3D%20c", "/v1/tables/{name}/rows");
  EXPECT_EQ(where.body, "{\"id\":3,\"amount\":1.00,\"note\":\"c\"}\n");
  HttpResult old = Call("rex", "GET", "/v1/tables/orders/rows?version=" + std::to_string(before),
                        "/v1/tables/{name}/rows");
  EXPECT_EQ(old.status, 200) << old.body;
  EXPECT_EQ(old.body, "");  // before any load
  HttpResult table = Call("rex", "GET", "/v1/tables/orders", "/v1/tables/{name}");
  EXPECT_EQ(table.Json()["rowCount"], 3);

  // The same source again is refused; a listing finds the run by its key.
  const std::string upload2 = Upload(pipeline, "id,amount,note\n1,9.50,a\n2,3.25,b\n3,1.00,c\n");
  HttpResult dup =
      Submit(pipeline, "key-2", json{{"uploads", {upload2}}, {"source", {{"id", "day-1"}}}}.dump());
  EXPECT_EQ(dup.status, 409) << dup.body;
  EXPECT_EQ(dup.Json()["code"], "source_already_loaded");
  EXPECT_EQ(dup.Json()["run"], run_id);
  HttpResult listed = Call("ada", "GET", "/v1/runs?idempotencyKey=key-1", "/v1/runs");
  ASSERT_EQ(listed.status, 200);
  ASSERT_EQ(listed.Json()["runs"].size(), 1u);
  EXPECT_EQ(listed.Json()["runs"][0]["id"], run_id);
  HttpResult by_state =
      Call("ada", "GET", "/v1/runs?state=succeeded&pipeline=" + pipeline, "/v1/runs");
  EXPECT_EQ(by_state.Json()["runs"].size(), 1u);
  EXPECT_TRUE(by_state.Json()["nextCursor"].is_null());
  // The service, not the route, knows the states.
  HttpResult unknown_state = Call("ada", "GET", "/v1/runs?state=done", "/v1/runs");
  EXPECT_EQ(unknown_state.status, 400) << unknown_state.body;
  EXPECT_EQ(unknown_state.Json()["code"], "invalid_argument");
  EXPECT_NE(unknown_state.body.find("unknown run state 'done' (one of queued, validating, "),
            std::string::npos)
      << unknown_state.body;
}

TEST_F(ApiTest, IdempotencyRulesThroughHttp) {
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, "id,amount,note\n1,1.00,a\n");
  const std::string body = json{{"uploads", {upload}}}.dump();
  HttpResult no_key = Submit(pipeline, "", body);
  EXPECT_EQ(no_key.status, 400);
  EXPECT_EQ(no_key.Json()["code"], "idempotency_key_required");
  HttpResult long_key = Submit(pipeline, std::string(256, 'k'), body);
  EXPECT_EQ(long_key.status, 400);
  HttpResult two_keys =
      Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs", body,
           {{"Idempotency-Key", "a"}, {"Idempotency-Key", "b"}});
  EXPECT_EQ(two_keys.status, 400);
  ASSERT_EQ(Submit(pipeline, "k", body).status, 202);
  HttpResult reused = Submit(pipeline, "k", json{{"uploads", {upload}}, {"reload", true}}.dump());
  EXPECT_EQ(reused.status, 422);
  EXPECT_EQ(reused.Json()["code"], "idempotency_key_reused");
  HttpResult unknown_field = Submit(pipeline, "k2", R"({"uploads":["x"],"bogus":1})");
  EXPECT_EQ(unknown_field.status, 400);
  EXPECT_NE(unknown_field.Json()["detail"].get<std::string>().find("bogus"), std::string::npos);
}

TEST_F(ApiTest, InlineDataReplaysByItsBytes) {
  const std::string pipeline = MakePipeline();
  const std::string csv = "id,amount,note\n7,7.00,x\n";
  Headers h = {
      {"Content-Type", "text/csv"}, {"Idempotency-Key", "inline-1"}, {"Loam-Source-Id", "feed-7"}};
  const std::string target = "/v1/pipelines/" + pipeline + "/runs";
  HttpResult first = Call("ada", "POST", target, "/v1/pipelines/{id}/runs", csv, h);
  ASSERT_EQ(first.status, 202) << first.body;
  HttpResult again = Call("ada", "POST", target, "/v1/pipelines/{id}/runs", csv, h);
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_EQ(again.Json()["id"], first.Json()["id"]);
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  HttpResult other = Call("ada", "POST", target, "/v1/pipelines/{id}/runs", csv + "8,1.00,y\n", h);
  EXPECT_EQ(other.status, 422) << other.body;
  Headers json_lines = {{"Content-Type", "application/x-ndjson"}, {"Idempotency-Key", "inline-2"}};
  HttpResult wrong =
      Call("ada", "POST", target, "/v1/pipelines/{id}/runs", "{\"id\":1}\n", json_lines);
  EXPECT_EQ(wrong.status, 400) << wrong.body;  // the pipeline loads CSV
  const json done = WaitRun(first.Json()["id"]);
  EXPECT_EQ(done["state"], "succeeded") << done.dump();
  EXPECT_EQ(done["counters"]["inserted"], 1);
}

// A rows answer larger than one chunk streams as the scan produces it: the
// client gets every row once; small answers still carry Content-Length, and
// errors found before the first chunk are problems.
TEST_F(ApiTest, LargeRowsAnswersStreamInChunks) {
  const std::string pipeline = MakePipeline();
  constexpr int kRows = 20000;
  std::string csv = "id,amount,note\n";
  for (int i = 0; i < kRows; ++i) {
    csv +=
        std::to_string(i) + "," + std::to_string(i % 997) + ".25,note-" + std::to_string(i) + "\n";
  }
  Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "big-1"}};
  HttpResult run =
      Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs", csv, h);
  ASSERT_EQ(run.status, 202) << run.body;
  ASSERT_EQ(WaitRun(run.Json()["id"])["state"], "succeeded");

  HttpResult all = Call("rex", "GET", "/v1/tables/orders/rows", "/v1/tables/{name}/rows");
  ASSERT_EQ(all.status, 200) << all.body.substr(0, 500);
  EXPECT_EQ(all.Header("transfer-encoding"), "chunked");
  EXPECT_EQ(all.Header("content-type"), "application/x-ndjson");
  EXPECT_GT(all.body.size(), size_t{256} << 10);  // over one chunk
  std::vector<int> seen(kRows, 0);
  size_t lines = 0;
  for (size_t at = 0; at < all.body.size();) {
    const size_t end = all.body.find('\n', at);
    ASSERT_NE(end, std::string::npos) << "an unterminated last line";
    const json row = json::parse(all.body.substr(at, end - at));
    const int64_t id = row["id"];
    ASSERT_TRUE(id >= 0 && id < kRows) << row.dump();
    EXPECT_EQ(row["note"], "note-" + std::to_string(id));
    ++seen[id];
    ++lines;
    at = end + 1;
  }
  EXPECT_EQ(lines, static_cast<size_t>(kRows));
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), kRows);

  HttpResult few = Call("rex", "GET", "/v1/tables/orders/rows?limit=3", "/v1/tables/{name}/rows");
  EXPECT_EQ(few.Header("transfer-encoding"), "");
  EXPECT_EQ(few.Header("content-length"), std::to_string(few.body.size()));
  EXPECT_EQ(std::count(few.body.begin(), few.body.end(), '\n'), 3);

  HttpResult bad =
      Call("rex", "GET", "/v1/tables/orders/rows?where=nope%20%3D%201", "/v1/tables/{name}/rows");
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.Header("content-type"), "application/problem+json");
  EXPECT_EQ(bad.Json()["code"], "invalid_argument") << bad.body;
}

// The store failing after the first chunk went out: the connection closes
// without the last chunk, so the client knows the answer is incomplete.
TEST_F(ApiTest, RowsAnswerCutShortMidScanIsIncompleteToTheClient) {
  const std::string pipeline =
      MakePipeline(R"({"name":"orders-in","table":"orders","mode":"append","format":"csv"})");
  for (int load = 0; load < 2; ++load) {  // two fragments, each over one chunk
    std::string csv = "id,amount,note\n";
    for (int i = 0; i < 10000; ++i) {
      csv += std::to_string(load * 10000 + i) + ",1.00," + std::string(30, 'n') + "\n";
    }
    Headers h = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "load-" + std::to_string(load)}};
    HttpResult run = Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs",
                          "/v1/pipelines/{id}/runs", csv, h);
    ASSERT_EQ(run.status, 202) << run.body;
    ASSERT_EQ(WaitRun(run.Json()["id"])["state"], "succeeded");
  }
  std::vector<std::string> fragments;  // the table's, in key (ULID: load) order
  for (const ObjectInfo& o : store_->ListAll("").value()) {
    if (o.key.ends_with(".lfrag") && o.key.find("__manifest") == std::string::npos) {
      fragments.push_back(o.key);
    }
  }
  ASSERT_EQ(fragments.size(), 2u);
  server_.reset();
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  FaultRule rule = FaultRule::FailNth("second-fragment", kAllOps, 1,
                                      Status::Unavailable("injected read failure"),
                                      fragments[1]);  // the later load, scanned second
  rule.times = FaultRule::kForever;
  faulty->AddRule(rule);
  WorkspaceOptions o;
  o.actor = "owner";
  ws_ = WorkspaceEngine::Open(faulty, "", o).value();

  namespace beast = boost::beast;
  boost::asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  stream.connect({boost::asio::ip::make_address("127.0.0.1"), Port()});
  http::request<http::empty_body> req{http::verb::get, "/v1/tables/orders/rows", 11};
  req.set(http::field::host, "x");
  req.set(http::field::authorization, "Bearer " + Token("rex"));
  http::write(stream, req);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  beast::error_code ec;
  http::read(stream, buffer, parser, ec);
  EXPECT_EQ(ec, http::error::partial_message) << ec.message();
  EXPECT_EQ(parser.get().result_int(), 200);
  EXPECT_TRUE(parser.get().chunked());
  EXPECT_NE(parser.get().body().find("{\"id\":0,"), std::string::npos);
  EXPECT_EQ(parser.get().body().find("{\"id\":10000,"), std::string::npos);
  EXPECT_GE(faulty->Fired("second-fragment"), 1u);
}

TEST_F(ApiTest, UploadCapabilityRefusals) {
  const std::string pipeline = MakePipeline();
  const std::string data = "id,amount,note\n1,1.00,a\n";
  const json req = {{"size", data.size()}};
  HttpResult t = Call("ada", "POST", "/v1/pipelines/" + pipeline + "/uploads",
                      "/v1/pipelines/{id}/uploads", req.dump());
  ASSERT_EQ(t.status, 201) << t.body;
  const std::string url = t.Json()["url"].get<std::string>().substr(Srv().url().size());
  const std::string id = t.Json()["uploadId"];
  const std::string token = url.substr(url.find("token=") + 6);
  std::string tampered = token;
  tampered[tampered.size() / 2] = tampered[tampered.size() / 2] == 'A' ? 'B' : 'A';
  const std::string p = "/v1/uploads/{uploadId}";
  EXPECT_EQ(Call("", "PUT", "/v1/uploads/" + id + "?token=" + tampered, p, data).status, 403);
  EXPECT_EQ(Call("", "PUT", "/v1/uploads/" + id, p, data).status, 403);
  HttpResult short_body = Call("", "PUT", url, p, data.substr(1));
  EXPECT_EQ(short_body.status, 400) << short_body.body;
  ASSERT_EQ(Call("", "PUT", url, p, data).status, 200);
  HttpResult twice = Call("", "PUT", url, p, data);
  EXPECT_EQ(twice.status, 409);
  for (const char* evil : {"..", "%2e%2e", "a%2Fb", "a%00b", "%2F"}) {
    HttpResult r =
        HttpCall(Port(), "PUT", std::string("/v1/uploads/") + evil + "?token=" + token, data);
    EXPECT_EQ(r.status, 404) << evil << " " << r.body;
  }
  // Another principal's pipeline upload: rex holds no writer grant.
  HttpResult rex = Call("rex", "POST", "/v1/pipelines/" + pipeline + "/uploads",
                        "/v1/pipelines/{id}/uploads", req.dump());
  EXPECT_EQ(rex.status, 403);
}

TEST_F(ApiTest, BodiesOverTheLimitAre413) {
  const std::string big(2 << 20, ' ');
  HttpResult r = Call("owner", "POST", "/v1/tables", "/v1/tables", "{" + big + "}");
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(r.Json()["code"], "limit_exceeded");
}

TEST_F(ApiTest, DeeplyNestedBodiesAreRefusedUnparsed) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  HttpResult r = Call("owner", "POST", "/v1/tables", "/v1/tables", deep);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.Json()["detail"].get<std::string>().find("nests deeper"), std::string::npos);
  // Brackets inside strings are text, not nesting.
  const std::string name(200, '[');
  HttpResult ok =
      Call("owner", "POST", "/v1/tables", "/v1/tables",
           json{{"name", "t" + name}, {"columns", {{{"name", "a"}, {"type", "int64"}}}}}.dump());
  EXPECT_EQ(ok.body.find("nests deeper"), std::string::npos) << ok.body;
}

TEST_F(ApiTest, HostileBytesInTargetsAndMethodsAreAnsweredNotFatal) {
  HttpResult bad = HttpCall(Port(), "GET", "/\xff\xfe", "", {});
  EXPECT_EQ(bad.status, 404);
  EXPECT_TRUE(bad.Json().is_object()) << bad.body;
  HttpResult in_name = HttpCall(Port(), "GET", "/v1/tables/%FF%FE", "", Auth("owner"));
  EXPECT_EQ(in_name.status, 404) << in_name.body;
  HttpResult source = HttpCall(Port(), "POST", "/v1/pipelines/" + MakePipeline() + "/runs",
                               "id,amount,note\n1,1.00,a\n",
                               {{"Authorization", "Bearer " + Token("ada")},
                                {"Content-Type", "text/csv"},
                                {"Idempotency-Key", "k"},
                                {"Loam-Source-Id", "\xff"}});
  EXPECT_EQ(source.status, 400) << source.body;
  {
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::socket raw(ioc);
    raw.connect({boost::asio::ip::make_address("127.0.0.1"), Port()});
    boost::asio::write(
        raw, boost::asio::buffer(
                 std::string("BREW /v1/tables HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")));
    std::string out;
    char buf[1024];
    boost::system::error_code ec;
    for (size_t n; (n = raw.read_some(boost::asio::buffer(buf), ec)), !ec;) out.append(buf, n);
    EXPECT_EQ(out.substr(0, 12), "HTTP/1.1 405") << out;
  }
  HttpResult m = Call("", "GET", "/metrics", "/metrics");
  EXPECT_EQ(m.body.find("BREW"), std::string::npos);
  EXPECT_NE(m.body.find("method=\"other\""), std::string::npos);
  EXPECT_EQ(Call("", "GET", "/healthz", "/healthz").status, 200);  // still serving
}

// Failed best-effort removals are counted process-wide and exposed.
TEST_F(ApiTest, MetricsCountFailedCleanups) {
  NoteCleanupFailure("removing nothing", Status::OK());  // success is not counted
  const int64_t before = CleanupFailureCount();
  NoteCleanupFailure("removing a test object", Status::Unavailable("injected"));
  EXPECT_EQ(CleanupFailureCount(), before + 1);
  HttpResult m = Call("", "GET", "/metrics", "/metrics");
  EXPECT_NE(m.body.find("loam_cleanup_failures_total " + std::to_string(before + 1) + "\n"),
            std::string::npos)
      << m.body;
}

TEST_F(ApiTest, TimeTravelReadsOnlyTheGrantedTableAndHistoryHidesGrants) {
  // "orders" at an old version is another table than the one rex may read now.
  const int64_t old =
      Call("owner", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["manifestVersion"];
  ASSERT_TRUE(ws_->RenameTable("orders", "orders_old").ok());
  const std::string doc =
      R"({"name":"orders","columns":[{"name":"id","type":"int64","nullable":false}]})";
  ASSERT_EQ(Call("owner", "POST", "/v1/tables", "/v1/tables", doc).status, 201);
  ASSERT_EQ(Call("owner", "PUT", "/v1/tables/orders/grants/bob",
                 "/v1/tables/{name}/grants/{principal}", R"({"role":"reader"})")
                .status,
            200);
  HttpResult now = Call("bob", "GET", "/v1/tables/orders/rows", "/v1/tables/{name}/rows");
  EXPECT_EQ(now.status, 200);
  HttpResult then = Call("bob", "GET", "/v1/tables/orders/rows?version=" + std::to_string(old),
                         "/v1/tables/{name}/rows");
  EXPECT_EQ(then.status, 404) << then.body;
  HttpResult history = Call("bob", "GET", "/v1/tables/orders/history", "/v1/tables/{name}/history");
  ASSERT_EQ(history.status, 200);
  const json events = history.Json()["history"];
  ASSERT_FALSE(events.empty());
  for (const json& e : events) EXPECT_NE(e["event"], "table_grant") << e.dump();
  HttpResult admin_view =
      Call("owner", "GET", "/v1/tables/orders/history", "/v1/tables/{name}/history");
  bool saw_grant = false;
  const json all = admin_view.Json()["history"];
  for (const json& e : all) saw_grant = saw_grant || e["event"] == "table_grant";
  EXPECT_TRUE(saw_grant) << admin_view.body;
}

TEST_F(ApiTest, FailedExpectedTableVersionIs412) {
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, "id,amount,note\n1,1.00,a\n");
  HttpResult stale =
      Submit(pipeline, "v", json{{"uploads", {upload}}, {"expectedTableVersion", 99}}.dump());
  EXPECT_EQ(stale.status, 412) << stale.body;
  EXPECT_EQ(stale.Json()["code"], "precondition_failed");
  const int64_t at = Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["version"];
  HttpResult fresh =
      Submit(pipeline, "v", json{{"uploads", {upload}}, {"expectedTableVersion", at}}.dump());
  ASSERT_EQ(fresh.status, 202) << fresh.body;  // the refusal freed the key and the upload
  EXPECT_EQ(WaitRun(fresh.Json()["id"])["state"], "succeeded");
}

}  // namespace
}  // namespace loam::server
