// Hostile requests over real HTTP: forged and misused upload capabilities,
// ids that try to carry a path, malformed JSON bodies, oversized bodies and
// headers, and bad idempotency keys. Each is a 4xx problem that creates
// nothing. Bearer tokens: auth_test.cc; hostile data: security_data_test.cc.
#include "server/security_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

constexpr char kCsv[] = "id,amount,note\n1,1.00,a\n";

// The grant a local upload token carries (staging.h: "v1.<payload>.<mac>").
service::UploadGrant GrantOf(const std::string& token) {
  const size_t dot = token.rfind('.');
  const json p = json::parse(Base64UrlDecode(token.substr(3, dot - 3)).value());
  return {p["u"], p["k"], p["e"], p["s"], p["h"]};
}

// An upload's capability writes that upload only.
TEST_F(SecurityTest, UploadTokenOfOneUploadIsRefusedForAnother) {
  const std::string pipeline = MakePipeline();
  const json a = Ticket(pipeline, kCsv);
  const json b = Ticket(pipeline, kCsv);
  const std::string b_id = b["uploadId"];
  HttpResult cross = Put("/v1/uploads/" + b_id + "?token=" + TokenOf(a), kCsv);
  EXPECT_EQ(cross.status, 403) << cross.body;
  EXPECT_EQ(cross.Json()["code"], "permission_denied");
  for (const std::string& key : Keys("ingestion-staging/")) {
    EXPECT_EQ(key.find(b_id), std::string::npos) << "stored through another token: " << key;
  }
  // Each still takes its own bytes once (nothing was stored for b above).
  EXPECT_EQ(Put(Target(b), kCsv).status, 200);
  EXPECT_EQ(Put(Target(a), kCsv).status, 200);
}

// Tokens re-encoded, re-signed with another secret or past their expiry are
// refused and store nothing. The expiry is configurable only down to one
// second (`ttlSeconds`, ServiceLimits::upload_ttl_seconds), so the expired
// token is minted with the server's upload secret; the same grant with a
// future expiry is accepted, so the expiry alone made the difference.
TEST_F(SecurityTest, ForgedAndExpiredUploadTokensAreRefused) {
  const std::string secret = "upload-secret-for-the-security-test-0123";
  const std::string secret_file = (dir_ / "upload-secret").string();
  std::ofstream(secret_file) << secret << "\n";
  config_.upload_secret_file = secret_file;
  const std::string pipeline = MakePipeline();
  const json ticket = Ticket(pipeline, kCsv, "ada", /*declare_sha=*/false);
  const std::string id = ticket["uploadId"];
  const std::string token = TokenOf(ticket);
  const service::UploadGrant grant = GrantOf(token);
  ASSERT_EQ(grant.upload_id, id);
  const auto put = [&](const std::string& t) {
    return Put("/v1/uploads/" + id + "?token=" + t, kCsv);
  };

  service::UploadGrant bigger = grant;
  bigger.size += 100;
  const std::string with_old_mac = "v1." +
                                   Base64UrlEncode(json{
                                       {"u", bigger.upload_id},
                                       {"k", bigger.key},
                                       {"e", bigger.expires_seconds},
                                       {"s", bigger.size},
                                       {"h",
                                        bigger.sha256}}.dump()) +
                                   token.substr(token.rfind('.'));
  service::UploadGrant expired = grant;
  expired.expires_seconds = Clock::System()->NowMicros() / 1'000'000 - 1;
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"payload re-encoded, original MAC", with_old_mac},
      {"another secret", service::SignUploadToken(grant, std::string(40, 'x'))},
      {"expired", service::SignUploadToken(expired, secret)},
      {"MAC dropped", token.substr(0, token.rfind('.') + 1)},
      {"truncated", token.substr(0, token.size() - 4)},
      {"not a token", "v1..."},
      {"enormous", token + std::string(9000, 'A')},
  };
  for (const auto& [why, t] : refused) {
    HttpResult r = put(t);
    EXPECT_EQ(r.status, 403) << why << ": " << r.body;
    EXPECT_EQ(r.Json()["code"], "permission_denied") << why;
  }
  EXPECT_NE(put(service::SignUploadToken(expired, secret))
                .Json()["detail"]
                .get<std::string>()
                .find("expired"),
            std::string::npos);
  EXPECT_TRUE(Keys("ingestion-staging/").empty());
  service::UploadGrant renewed = grant;
  renewed.expires_seconds += 60;
  EXPECT_EQ(put(service::SignUploadToken(renewed, secret)).status, 200);
}

// A body longer than declared stores nothing (the upload stays writable);
// one over the server's run-byte limit is refused by the HTTP layer.
TEST_F(SecurityTest, UploadBodiesOverTheDeclaredSizeStoreNothing) {
  config_.limits.max_run_bytes = 4096;
  const std::string pipeline = MakePipeline();
  const json ticket = Ticket(pipeline, kCsv, "ada", /*declare_sha=*/false);
  const std::string more = std::string(kCsv) + "2,2.00,b\n";
  HttpResult over = Put(Target(ticket), more);
  EXPECT_EQ(over.status, 413) << over.body;
  EXPECT_EQ(over.Json()["code"], "limit_exceeded");
  HttpResult far_over = Put(Target(ticket), std::string(kCsv) + std::string(8192, 'x'));
  EXPECT_EQ(far_over.status, 413) << far_over.body;
  EXPECT_EQ(far_over.Json()["code"], "limit_exceeded");
  EXPECT_TRUE(Keys("ingestion-staging/").empty());
  HttpResult too_big = Call("ada", "POST", "/v1/pipelines/" + pipeline + "/uploads",
                            "/v1/pipelines/{id}/uploads", json{{"size", 8192}}.dump());
  EXPECT_TRUE(IsClientProblem(too_big)) << too_big.status;
  EXPECT_EQ(Put(Target(ticket), kCsv).status, 200);
}

// Bob may write "orders" too, but an upload belongs to whoever created it.
TEST_F(SecurityTest, AnotherPrincipalsUploadCannotBeSubmitted) {
  ASSERT_TRUE(ws_->SetGrant("orders", "bob", Role::kWriter).ok());
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, kCsv, "ada");
  const std::string body = json{{"uploads", {upload}}}.dump();
  HttpResult stolen = Submit(pipeline, "steal", body, "bob");
  EXPECT_EQ(stolen.status, 403) << stolen.body;
  EXPECT_EQ(stolen.Json()["code"], "permission_denied");
  HttpResult listed = Call("bob", "GET", "/v1/runs?pipeline=" + pipeline, "/v1/runs");
  EXPECT_EQ(listed.Json()["runs"].size(), 0u) << listed.body;
  // The owner's submission of it is untouched by the attempt.
  HttpResult own = Submit(pipeline, "own", body, "ada");
  ASSERT_EQ(own.status, 202) << own.body;
  EXPECT_EQ(WaitRun(own.Json()["id"])["state"], "succeeded");
}

// Segments that name a parent, carry a separator or a NUL are refused on
// every route with an id, and nothing is written anywhere (the listing of
// the fixture's whole directory is unchanged).
TEST_F(SecurityTest, TraversalInEveryIdIsRefusedAndTouchesNothing) {
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, kCsv);
  const json ticket = Ticket(pipeline, kCsv);
  const json run =
      WaitRun(Submit(pipeline, "k", json{{"uploads", {upload}}}.dump()).Json().value("id", "none"));
  ASSERT_EQ(run["state"], "succeeded");
  ASSERT_TRUE(Srv().service().RunCleanerOnce().ok());
  const std::set<std::string> before = FilesOnDisk();
  const auto [version, rows] = TableState();

  // Refused by the router: never a valid segment.
  const std::vector<std::string> separators = {"..",
                                               "%2e%2e",
                                               "%2E%2E",
                                               ".%2e",
                                               ".",
                                               "%2e",
                                               "..%2f..",
                                               "a%2fb",
                                               "%2F",
                                               "%2f..%2f",
                                               "..%5c..",
                                               "%5c",
                                               "a%00b",
                                               "%00",
                                               "..%00",
                                               "%0a",
                                               "a%0d%0ab",
                                               "%7f",
                                               "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
                                               "%"};
  // Valid segments that name nothing (ids are ULIDs, tables are looked up).
  const std::vector<std::string> odd = {"...", "%252e%252e", "~2e2e", "%ff", std::string(600, 'a')};
  struct Route {
    std::string method, pattern, target, body;
  };
  const auto routes = [&](const std::string& e) {
    const std::string submit = json{{"uploads", {upload}}}.dump();
    return std::vector<Route>{
        {"GET", "/v1/pipelines/{id}", "/v1/pipelines/" + e, ""},
        {"PATCH", "/v1/pipelines/{id}", "/v1/pipelines/" + e, R"({"errorPolicy":"failRun"})"},
        {"DELETE", "/v1/pipelines/{id}", "/v1/pipelines/" + e, ""},
        {"POST", "/v1/pipelines/{id}/uploads", "/v1/pipelines/" + e + "/uploads", R"({"size":3})"},
        {"POST", "/v1/pipelines/{id}/runs", "/v1/pipelines/" + e + "/runs", submit},
        {"GET", "/v1/runs/{id}", "/v1/runs/" + e, ""},
        {"POST", "/v1/runs/{id}/cancel", "/v1/runs/" + e + "/cancel", ""},
        {"POST", "/v1/runs/{id}/revert", "/v1/runs/" + e + "/revert", ""},
        {"GET", "/v1/tables/{name}", "/v1/tables/" + e, ""},
        {"GET", "/v1/tables/{name}/rows", "/v1/tables/" + e + "/rows", ""},
        {"GET", "/v1/tables/{name}/history", "/v1/tables/" + e + "/history", ""},
        {"PUT", "/v1/tables/{name}/grants/{principal}", "/v1/tables/" + e + "/grants/bob",
         R"({"role":"writer"})"},
        {"DELETE", "/v1/tables/{name}/grants/{principal}", "/v1/tables/" + e + "/grants/rex", ""},
        {"PUT", "/v1/uploads/{uploadId}", "/v1/uploads/" + e + "?token=" + TokenOf(ticket), kCsv},
    };
  };
  // (A {principal} is a name, never a path: PrincipalsHaveOneDefinition.)
  const auto check = [&](const std::string& e, bool odd_segment) {
    for (const Route& r : routes(e)) {
      // The key submissions need (elsewhere a key's reservation is written).
      Headers h;
      if (r.pattern == "/v1/pipelines/{id}/runs") {
        h.emplace_back("Idempotency-Key", "traversal-" + std::to_string(e.size()));
      }
      HttpResult got = Call("owner", r.method, r.target, r.pattern, r.body, h);
      EXPECT_TRUE(IsClientProblem(got)) << r.method << " " << r.target;
      // The router refuses a segment that is not one: no route. A valid
      // segment on the upload route meets the token first, which names
      // another upload.
      const bool token_first = odd_segment && r.pattern == "/v1/uploads/{uploadId}";
      EXPECT_EQ(got.status, token_first ? 403 : 404)
          << r.method << " " << r.target << ": " << got.body;
    }
  };
  for (const std::string& e : separators) check(e, /*odd_segment=*/false);
  for (const std::string& e : odd) check(e, /*odd_segment=*/true);

  // Ids inside bodies and queries are looked up, never joined into keys.
  for (const char* id : {"../../x", "..", "a/b", "01ARZ3NDEKTSV4RRFFQ69G5FAV/../x"}) {
    HttpResult sub = Submit(pipeline, "body-id", json{{"uploads", {id}}}.dump());
    EXPECT_TRUE(IsClientProblem(sub)) << id;
    HttpResult listed = Call("owner", "GET", std::string("/v1/runs?cursor=") + id, "/v1/runs");
    EXPECT_EQ(listed.status, 400) << id << ": " << listed.body;
  }
  HttpResult p = Call("owner", "POST", "/v1/pipelines", "/v1/pipelines",
                      R"({"name":"../x","table":"orders","mode":"append","format":"csv"})");
  EXPECT_EQ(p.status, 400) << p.body;
  HttpResult t = Call("owner", "POST", "/v1/pipelines", "/v1/pipelines",
                      R"({"name":"p2","table":"../orders","mode":"append","format":"csv"})");
  EXPECT_TRUE(IsClientProblem(t)) << t.status;
  // A grantee that is not UTF-8 cannot be written into the journal: bad
  // input (it once reached the journal's JSON writer and was answered 500).
  HttpResult grantee =
      Call("owner", "PUT", "/v1/tables/orders/grants/ad%FF", "/v1/tables/{name}/grants/{principal}",
           R"({"role":"reader"})", {{"Content-Type", "application/json"}});
  EXPECT_EQ(grantee.status, 400) << grantee.body;
  EXPECT_EQ(grantee.Json()["code"], "invalid_argument") << grantee.body;

  EXPECT_EQ(Added(before, FilesOnDisk()), "");
  EXPECT_EQ(TableState(), std::make_pair(version, rows));
}

// Unknown fields, wrong types and non-objects in every JSON body: 400,
// nothing created.
TEST_F(SecurityTest, MalformedJsonBodiesAreRefusedAndCreateNothing) {
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, kCsv);
  const std::set<std::string> files = FilesOnDisk();
  const std::vector<std::string> not_objects = {"",   "[]", "null",       "\"x\"",
                                                "42", "{",  "{\"a\":1}x", "{\"name\":\"\xff\"}"};
  const auto refused = [&](const std::string& sub, const std::string& method,
                           const std::string& target, const std::string& pattern,
                           const std::vector<std::string>& bodies) {
    std::vector<std::string> all = bodies;
    all.insert(all.end(), not_objects.begin(), not_objects.end());
    for (size_t i = 0; i < all.size(); ++i) {
      Headers h = {{"Content-Type", "application/json"}};
      // The key submissions need (elsewhere a key's reservation is written).
      if (pattern == "/v1/pipelines/{id}/runs") {
        h.emplace_back("Idempotency-Key", "bad-" + std::to_string(i));
      }
      HttpResult r = Call(sub, method, target, pattern, all[i], h);
      EXPECT_EQ(r.status, 400) << method << " " << target << " " << all[i] << ": " << r.body;
      EXPECT_TRUE(IsClientProblem(r));
    }
  };
  const std::string col = R"({"name":"a","type":"int64"})";
  refused("owner", "POST", "/v1/tables", "/v1/tables",
          {R"({"name":"t","columns":[)" + col + R"(],"bogus":1})",
           R"({"name":5,"columns":[)" + col + "]}", R"({"name":"t","columns":"a"})",
           R"({"name":"t","columns":[{"name":"a","type":"int64","extra":true}]})",
           R"({"name":"t","columns":[{"name":"a","type":7}]})",
           R"({"name":"t","columns":[)" + col + R"(],"keys":"a"})",
           R"({"name":"t","columns":[)" + col + R"(],"keys":[1]})",
           R"({"name":"t","name":"u","columns":[)" + col + "]}",
           R"({"name":"t","columns":[{"name":"a","type":"int64","type":"string"}]})"});
  refused(
      "ada", "POST", "/v1/pipelines", "/v1/pipelines",
      {R"({"name":"p","table":"orders","mode":"append","format":"csv","bogus":1})",
       R"({"name":1,"table":"orders","mode":"append","format":"csv"})",
       R"({"name":"p","table":["orders"],"mode":"append","format":"csv"})",
       R"({"name":"p","table":"orders","mode":"sideways","format":"csv"})",
       R"({"name":"p","table":"orders","mode":"append","format":"csv","limits":{"maxRows":"9"}})",
       R"({"name":"p","table":"orders","mode":"append","format":"csv","limits":{"bogus":1}})",
       R"({"name":"p","table":"orders","mode":"append","format":"csv","limits":{"maxRows":-1}})",
       R"({"name":"p","table":"orders","mode":"append","format":"csv","errorPolicy":true})",
       R"({"name":"p","table":"orders","mode":"append","format":"csv","formatOptions":{"csvDelimiter":5}})",
       R"({"name":"p","table":"orders","mode":"append","mode":"upsert","format":"csv"})"});
  refused("ada", "PATCH", "/v1/pipelines/" + pipeline, "/v1/pipelines/{id}",
          {R"({"bogus":1})", R"({"errorPolicy":5})", R"({"limits":{"maxRows":"1"}})",
           R"({"table":"other"})", R"({"errorPolicy":"failRun","errorPolicy":"skipRows"})"});
  refused("ada", "POST", "/v1/pipelines/" + pipeline + "/uploads", "/v1/pipelines/{id}/uploads",
          {R"({"size":"3"})", R"({"size":-1})", R"({"size":3.5})", R"({"size":3,"bogus":1})",
           R"({"size":3,"sha256":"zz"})", R"({"size":3,"ttlSeconds":"1"})", R"({})",
           R"({"size":3,"size":4})"});
  const std::string u = "[\"" + upload + "\"]";
  refused("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs",
          {R"({"uploads":")" + upload + "\"}", R"({"uploads":[1]})", R"({"uploads":[]})",
           R"({"uploads":)" + u + R"(,"bogus":1})", R"({"uploads":)" + u + R"(,"reload":"yes"})",
           R"({"uploads":)" + u + R"(,"expectedTableVersion":"1"})",
           R"({"uploads":)" + u + R"(,"limits":{"maxRows":-1}})",
           R"({"uploads":)" + u + R"(,"source":{"id":5}})",
           R"({"uploads":)" + u + R"(,"source":{"id":"s","extra":1}})",
           R"({"uploads":)" + u + R"(,"errorPolicy":["failRun"]})",
           R"({"uploads":[],"uploads":)" + u + "}",
           R"({"uploads":)" + u + R"(,"source":{"id":"a","id":"b"}})"});
  refused("owner", "PUT", "/v1/tables/orders/grants/bob", "/v1/tables/{name}/grants/{principal}",
          {R"({"role":"reader","bogus":1})", R"({"role":5})", R"({})",
           R"({"role":"reader","role":"admin"})"});

  // A key named twice is named in the answer.
  HttpResult twice = Submit(pipeline, "twice", R"({"uploads":[],"uploads":)" + u + "}");
  EXPECT_NE(twice.Json()["detail"].get<std::string>().find(
                R"(run submission: key "uploads" appears twice in one object)"),
            std::string::npos)
      << twice.body;

  HttpResult tables = Call("owner", "GET", "/v1/tables", "/v1/tables");
  EXPECT_EQ(tables.Json()["tables"].size(), 1u) << tables.body;
  HttpResult pipelines = Call("ada", "GET", "/v1/pipelines", "/v1/pipelines");
  EXPECT_EQ(pipelines.Json()["pipelines"].size(), 1u) << pipelines.body;
  HttpResult same = Call("ada", "GET", "/v1/pipelines/" + pipeline, "/v1/pipelines/{id}");
  EXPECT_EQ(same.Json()["errorPolicy"], "failRun") << same.body;
  HttpResult runs = Call("ada", "GET", "/v1/runs", "/v1/runs");
  EXPECT_EQ(runs.Json()["runs"].size(), 0u) << runs.body;
  EXPECT_EQ(Added(files, FilesOnDisk()), "");
  // The upload none of them could claim still loads.
  HttpResult ok = Submit(pipeline, "good", json{{"uploads", {upload}}}.dump());
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_EQ(WaitRun(ok.Json()["id"])["state"], "succeeded");
}

// Definitions no load could use are refused when they are made, naming the
// rule or the limit, and create nothing.
TEST_F(SecurityTest, DefinitionsTheLoaderCannotUseAreRefused) {
  const auto create = [&](const json& columns, const json& keys) {
    return Call("owner", "POST", "/v1/tables", "/v1/tables",
                json{{"name", "wide"}, {"columns", columns}, {"keys", keys}}.dump(),
                {{"Content-Type", "application/json"}});
  };
  json wide = json::array();
  for (int i = 0; i < 5000; ++i)
    wide.push_back({{"name", "c" + std::to_string(i)}, {"type", "int32"}});
  HttpResult too_wide = create(wide, json::array());
  EXPECT_EQ(too_wide.status, 422) << too_wide.body;
  EXPECT_EQ(too_wide.Json()["code"], "limit_exceeded");
  EXPECT_EQ(too_wide.Json()["limit"], "maxTableColumns");
  EXPECT_NE(too_wide.body.find("5000 columns, over the limit of 1024"), std::string::npos);
  const json id = {{"name", "id"}, {"type", "int64"}, {"nullable", false}};
  for (const std::string& name :
       {std::string("a\0b", 3), std::string("a\nb"), std::string(257, 'n')}) {
    HttpResult bad_name = create({id, {{"name", name}, {"type", "string"}}}, {"id"});
    EXPECT_EQ(bad_name.status, 400) << bad_name.body;
    EXPECT_NE(bad_name.body.find("column 2 has a name that is not 1 to 256 bytes"),
              std::string::npos)
        << bad_name.body;
  }
  HttpResult json_key = create({{{"name", "doc"}, {"type", "json"}, {"nullable", false}}}, {"doc"});
  EXPECT_EQ(json_key.status, 400) << json_key.body;
  EXPECT_NE(json_key.body.find("key column 'doc' is json"), std::string::npos) << json_key.body;

  // An unkeyed table: an upsert pipeline may name its key, but not a json one.
  ASSERT_EQ(create({id, {{"name", "doc"}, {"type", "json"}}}, json::array()).status, 201);
  ASSERT_TRUE(ws_->SetGrant("wide", "ada", Role::kWriter).ok());
  const auto pipeline = [&](const json& spec) {
    return Call("ada", "POST", "/v1/pipelines", "/v1/pipelines", spec.dump(),
                {{"Content-Type", "application/json"}});
  };
  HttpResult keyed_on_json = pipeline({{"name", "u"},
                                       {"table", "wide"},
                                       {"mode", "upsert"},
                                       {"format", "jsonl"},
                                       {"keyColumns", {"doc"}}});
  EXPECT_EQ(keyed_on_json.status, 400) << keyed_on_json.body;
  EXPECT_NE(keyed_on_json.body.find("is json"), std::string::npos) << keyed_on_json.body;
  for (const char* delimiter : {"\x01", "\r", "\xc3\xa9"}) {
    HttpResult nul = pipeline({{"name", "c"},
                               {"table", "orders"},
                               {"mode", "append"},
                               {"format", "csv"},
                               {"formatOptions", {{"csvDelimiter", delimiter}}}});
    EXPECT_EQ(nul.status, 400) << nul.body;
    EXPECT_NE(nul.body.find("must be one printable ASCII character"), std::string::npos)
        << nul.body;
  }
  HttpResult nul = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                        R"({"name":"c","table":"orders","mode":"append","format":"csv",)"
                        R"("formatOptions":{"csvDelimiter":"\u0000"}})",
                        {{"Content-Type", "application/json"}});
  EXPECT_EQ(nul.status, 400) << nul.body;
  HttpResult tables = Call("owner", "GET", "/v1/tables", "/v1/tables");
  EXPECT_EQ(tables.Json()["tables"].size(), 2u) << tables.body;  // orders and the unkeyed one
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json()["pipelines"].size(), 0u);
}

// One query-parameter parser for every route: an unknown, repeated or
// out-of-range parameter is 400 and reads nothing; media types compare
// without case.
TEST_F(SecurityTest, QueryParametersAndMediaTypesHaveOneRule) {
  const std::string pipeline = MakePipeline();
  const std::string rows = "/v1/tables/{name}/rows";
  struct Case {
    std::string target, pattern, fragment;
  };
  const std::vector<Case> refused = {
      {"/v1/tables/orders/rows?limit=1&limit=2", rows, "query parameter 'limit' is given twice"},
      {"/v1/tables/orders/rows?version=18446744073709551616", rows,
       "version must be an integer from 0 to 9223372036854775807"},
      {"/v1/tables/orders/rows?limit=-1", rows, "limit must be an integer from 0"},
      {"/v1/tables/orders/rows?limit=+1", rows, "limit must be an integer from 0"},
      {"/v1/tables/orders/rows?limit=%201", rows, "limit must be an integer from 0"},
      {"/v1/tables/orders/rows?bogus=1", rows, "unknown query parameter 'bogus' (limit, where"},
      {"/v1/tables/orders/history?bogus=1", "/v1/tables/{name}/history",
       "unknown query parameter 'bogus' (this route takes none)"},
      {"/v1/tables/orders?x=1", "/v1/tables/{name}", "unknown query parameter 'x'"},
      {"/v1/tables?x", "/v1/tables", "unknown query parameter 'x'"},
      {"/v1/pipelines/" + pipeline + "?x=1", "/v1/pipelines/{id}", "unknown query parameter 'x'"},
      {"/v1/runs?limit=1001", "/v1/runs", "limit must be an integer from 1 to 1000"},
      {"/v1/runs?state=queued&state=failed", "/v1/runs", "query parameter 'state' is given twice"},
      {"/v1/limits?verbose=1", "/v1/limits", "unknown query parameter 'verbose'"},
  };
  for (const Case& c : refused) {
    HttpResult r = Call("owner", "GET", c.target, c.pattern);
    EXPECT_EQ(r.status, 400) << c.target << ": " << r.body;
    EXPECT_NE(r.body.find(c.fragment), std::string::npos) << c.target << ": " << r.body;
  }
  EXPECT_EQ(HttpCall(Port(), "GET", "/healthz?x=1").status, 400);
  EXPECT_EQ(HttpCall(Port(), "GET", "/v1/tables?x=1").status, 401);  // the token comes first
  EXPECT_EQ(Call("owner", "GET", "/v1/tables/orders/rows?limit=0&where=id%20%3D%201", rows).status,
            200);

  // Media types: any case, with parameters and spaces.
  HttpResult upper = SubmitInline(pipeline, "upper", kCsv, "TEXT/CSV ; charset=UTF-8");
  ASSERT_EQ(upper.status, 202) << upper.body;
  EXPECT_EQ(WaitRun(upper.Json()["id"])["state"], "succeeded");
  const std::string body =
      json{{"uploads", {Upload(pipeline, "id,amount,note\n2,2.00,b\n")}}}.dump();
  HttpResult json_upper =
      Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs", body,
           {{"Content-Type", "Application/JSON"}, {"Idempotency-Key", "json-upper"}});
  ASSERT_EQ(json_upper.status, 202) << json_upper.body;
  HttpResult form =
      Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs",
           "uploads=x", {{"Content-Type", "application/x-www-form-urlencoded"}});
  EXPECT_EQ(form.status, 400) << form.body;
  EXPECT_NE(form.body.find("not 'application/x-www-form-urlencoded'"), std::string::npos);
}

// Over 1 MiB of JSON on any route, or 8 MiB of inline data: 413, unparsed.
TEST_F(SecurityTest, OversizedBodiesAre413OnEveryRoute) {
  const std::string pipeline = MakePipeline();
  const std::string big = json{{"name", std::string((1 << 20) + 10, 'n')}}.dump();
  struct Route {
    std::string method, target, pattern;
  };
  const std::vector<Route> routes = {
      {"POST", "/v1/pipelines", "/v1/pipelines"},
      {"PATCH", "/v1/pipelines/" + pipeline, "/v1/pipelines/{id}"},
      {"POST", "/v1/pipelines/" + pipeline + "/uploads", "/v1/pipelines/{id}/uploads"},
      {"POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs"},
      {"PUT", "/v1/tables/orders/grants/bob", "/v1/tables/{name}/grants/{principal}"},
  };
  for (const Route& r : routes) {
    HttpResult got = Call("owner", r.method, r.target, r.pattern, big,
                          {{"Content-Type", "application/json"}, {"Idempotency-Key", "big"}});
    EXPECT_EQ(got.status, 413) << r.method << " " << r.target << ": " << got.body;
    EXPECT_EQ(got.Json()["code"], "limit_exceeded") << r.target;
  }
  std::string csv = "id,amount,note\n";
  while (csv.size() <= (8u << 20)) csv += "1,1.00," + std::string(100, 'x') + "\n";
  HttpResult inline_big = SubmitInline(pipeline, "big-inline", csv);
  EXPECT_EQ(inline_big.status, 413) << inline_big.body;
  EXPECT_EQ(inline_big.Json()["code"], "limit_exceeded");
  HttpResult runs = Call("ada", "GET", "/v1/runs", "/v1/runs");
  EXPECT_EQ(runs.Json()["runs"].size(), 0u);
  EXPECT_TRUE(LeftBehind().empty());
}

// A header block over 16 KiB (one field or many) is 431 through the API.
// (docs/openapi.yaml declares no 431, so these use HttpCall, not Call.)
TEST_F(SecurityTest, HeadersOverTheLimitAre431) {
  const std::string pipeline = MakePipeline();
  Headers one = Auth("ada");
  one.emplace_back("X-Padding", std::string(20 << 10, 'p'));
  HttpResult big = HttpCall(Port(), "GET", "/v1/tables", "", one);
  EXPECT_EQ(big.status, 431) << big.body;
  EXPECT_EQ(big.Json()["code"], "limit_exceeded");
  Headers many = Auth("ada");
  many.emplace_back("Content-Type", "text/csv");
  many.emplace_back("Idempotency-Key", "many-headers");
  for (int i = 0; i < 400; ++i) many.emplace_back("X-H" + std::to_string(i), std::string(60, 'v'));
  HttpResult lots = HttpCall(Port(), "POST", "/v1/pipelines/" + pipeline + "/runs", kCsv, many);
  EXPECT_EQ(lots.status, 431) << lots.body;
  HttpResult long_key = HttpCall(Port(), "POST", "/v1/pipelines/" + pipeline + "/runs", kCsv,
                                 {{"Authorization", "Bearer " + Token("ada")},
                                  {"Content-Type", "text/csv"},
                                  {"Idempotency-Key", std::string(17 << 10, 'k')}});
  EXPECT_EQ(long_key.status, 431) << long_key.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/runs", "/v1/runs").Json()["runs"].size(), 0u);
  EXPECT_TRUE(LeftBehind().empty());
}

// Idempotency keys: one header, 1-255 printable ASCII; everything else is
// 400 before any data is staged (inline and JSON submissions alike).
TEST_F(SecurityTest, BadIdempotencyKeysAre400AndStageNothing) {
  const std::string pipeline = MakePipeline();
  const std::string target = "/v1/pipelines/" + pipeline + "/runs";
  const auto inline_with = [&](Headers h) {
    h.emplace_back("Content-Type", "text/csv");
    return Call("ada", "POST", target, "/v1/pipelines/{id}/runs", kCsv, h);
  };
  HttpResult same_twice = inline_with({{"Idempotency-Key", "k1"}, {"Idempotency-Key", "k1"}});
  EXPECT_EQ(same_twice.status, 400) << same_twice.body;
  HttpResult two = inline_with({{"Idempotency-Key", "k1"}, {"Idempotency-Key", "k2"}});
  EXPECT_EQ(two.status, 400) << two.body;
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"256 characters", std::string(256, 'k')},
      {"tab", "a\tb"},
      {"DEL",
       "a\x7f"
       "b"},
      {"control",
       "a\x01"
       "b"},
      {"escape", "a\x1b[31m"},
      {"non-ASCII", "cl\xc3\xa9"},
      {"invalid UTF-8", "a\xff"},
  };
  for (const auto& [why, key] : bad) {
    HttpResult r = inline_with({{"Idempotency-Key", key}});
    EXPECT_EQ(r.status, 400) << why << ": " << r.body;
    EXPECT_TRUE(IsClientProblem(r)) << why;
    HttpResult j = Submit(pipeline, key, R"({"uploads":["01ARZ3NDEKTSV4RRFFQ69G5FAV"]})");
    EXPECT_EQ(j.status, 400) << why << ": " << j.body;
  }
  EXPECT_EQ(Call("ada", "GET", "/v1/runs", "/v1/runs").Json()["runs"].size(), 0u);
  EXPECT_TRUE(LeftBehind().empty());
  // The longest key allowed is taken (so the refusals above are the key's).
  HttpResult longest = inline_with({{"Idempotency-Key", std::string(255, 'k')}});
  ASSERT_EQ(longest.status, 202) << longest.body;
  EXPECT_EQ(WaitRun(longest.Json()["id"])["state"], "succeeded");
  EXPECT_TRUE(LeftBehind().empty());
}

}  // namespace
}  // namespace loam::server
