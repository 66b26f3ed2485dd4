// The API over real HTTP: admission (429, the waiting line, queue room),
// sources, cancel and revert, pipelines, limits and metrics. Every answer is
// checked against docs/openapi.yaml.

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

TEST_F(ApiTest, OverloadIs429WithRetryAfterAndCreatesNothing) {
  config_.limits.principal_burst = 3;  // two upload creations and one submission
  config_.limits.principal_requests_per_second = 0.001;
  const std::string pipeline = MakePipeline();
  const std::string u1 = Upload(pipeline, "id,amount,note\n1,1.00,a\n");
  const std::string u2 = Upload(pipeline, "id,amount,note\n2,1.00,a\n");
  ASSERT_EQ(Submit(pipeline, "first", json{{"uploads", {u1}}}.dump()).status, 202);
  HttpResult full = Submit(pipeline, "second", json{{"uploads", {u2}}}.dump());
  ASSERT_EQ(full.status, 429) << full.body;
  EXPECT_EQ(full.Json()["code"], "overloaded");
  EXPECT_EQ(full.Json()["limit"], "principalRequestRate");
  EXPECT_GE(std::stoll(full.Header("retry-after")), 1);
  EXPECT_EQ(full.Header("ratelimit-policy"), "\"principalRequestRate\";q=3;w=3000");
  EXPECT_EQ(full.Header("ratelimit").substr(0, 23), "\"principalRequestRate\";");
  HttpResult none = Call("ada", "GET", "/v1/runs?idempotencyKey=second", "/v1/runs");
  EXPECT_EQ(none.Json()["runs"].size(), 0u);
  // Creating an upload draws on the same bucket.
  HttpResult upload = Call("ada", "POST", "/v1/pipelines/" + pipeline + "/uploads",
                           "/v1/pipelines/{id}/uploads", json{{"size", 3}}.dump());
  ASSERT_EQ(upload.status, 429) << upload.body;
  EXPECT_EQ(upload.Json()["limit"], "principalRequestRate");
  EXPECT_GE(std::stoll(upload.Header("retry-after")), 1);
  HttpResult metrics = Call("", "GET", "/metrics", "/metrics");
  EXPECT_NE(metrics.body.find("loam_admission_rejections_total{limit=\"principalRequestRate\"} 2"),
            std::string::npos)
      << metrics.body;
}

// A crowd refused for want of room is told successive times, and let in in
// the order it was refused: a newcomer does not take the room a refused
// client was told to come back for.
TEST_F(ApiTest, RefusedClientsAreToldSuccessiveTimesAndLetInInTheirOrder) {
  config_.workers = 0;  // runs stay queued until a worker is asked
  config_.limits.max_queued_runs = 1;
  const std::string pipeline = MakePipeline();
  const auto body = [&](int id) {
    const std::string csv = "id,amount,note\n" + std::to_string(id) + ",1.00,a\n";
    return json{{"uploads", {Upload(pipeline, csv)}}}.dump();
  };
  ASSERT_EQ(Submit(pipeline, "queued", body(1)).status, 202);
  std::vector<std::string> bodies;
  for (int i = 0; i < 3; ++i) {
    bodies.push_back(body(10 + i));
    HttpResult refused = Submit(pipeline, "crowd" + std::to_string(i), bodies.back());
    ASSERT_EQ(refused.status, 429) << refused.body;
    EXPECT_EQ(refused.Json()["limit"], "maxQueuedRuns");
    // No run measured yet: a run is taken to last 1 s, and each client
    // waits for the queued run and for every client refused before it.
    EXPECT_EQ(refused.Header("retry-after"), std::to_string(i + 1)) << refused.body;
  }
  while (Srv().service().RunWorkerOnce().value()) {
  }
  // The queue is empty now, but the three refused clients stand ahead of a
  // newcomer. (The run just finished is measured: the waits are priced
  // from it from here on.)
  const auto detail = [](const HttpResult& r) { return r.Json()["detail"].get<std::string>(); };
  HttpResult newcomer = Submit(pipeline, "newcomer", body(20));
  ASSERT_EQ(newcomer.status, 429) << newcomer.body;
  EXPECT_NE(detail(newcomer).find("0 runs are queued and 3 refused before it"), std::string::npos)
      << newcomer.body;
  EXPECT_EQ(
      Call("ada", "GET", "/v1/runs?idempotencyKey=newcomer", "/v1/runs").Json()["runs"].size(), 0u);
  HttpResult first = Submit(pipeline, "crowd0", bodies[0]);
  EXPECT_EQ(first.status, 202) << first.body;
  HttpResult second = Submit(pipeline, "crowd1", bodies[1]);
  ASSERT_EQ(second.status, 429) << second.body;
  // Next in line: only the run just admitted is ahead of it.
  EXPECT_NE(detail(second).find("1 runs are queued (at most 1)"), std::string::npos) << second.body;
  while (Srv().service().RunWorkerOnce().value()) {
  }
  // The queue is empty again: the next in line gets in, the newcomer waits.
  HttpResult again = Submit(pipeline, "newcomer", body(20));
  ASSERT_EQ(again.status, 429) << again.body;
  EXPECT_NE(detail(again).find("0 runs are queued and 2 refused before it"), std::string::npos)
      << again.body;
  EXPECT_EQ(Submit(pipeline, "crowd1", bodies[1]).status, 202);
}

// Two queued runs of one source into a keyed table: the second fails on the
// source, naming the first, not on the keys the first one's rows now hold.
TEST_F(ApiTest, TheLoserOfASourceFailsAsAlreadyLoadedNamingTheWinner) {
  config_.workers = 0;  // both queued before either runs
  const std::string pipeline =
      MakePipeline(R"({"name":"orders-add","table":"orders","mode":"append","format":"csv"})");
  const std::string csv = "id,amount,note\n1,1.00,a\n";
  std::vector<std::string> ids;
  for (const char* key : {"first", "second"}) {
    HttpResult r =
        Submit(pipeline, key,
               json{{"uploads", {Upload(pipeline, csv)}}, {"source", {{"id", "day-1"}}}}.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.Json()["id"]);
  }
  while (Srv().service().RunWorkerOnce().value()) {
  }
  HttpResult winner = Call("ada", "GET", "/v1/runs/" + ids[0], "/v1/runs/{id}");
  EXPECT_EQ(winner.Json()["state"], "succeeded") << winner.body;
  HttpResult loser = Call("ada", "GET", "/v1/runs/" + ids[1], "/v1/runs/{id}");
  EXPECT_EQ(loser.Json()["state"], "failed") << loser.body;
  EXPECT_EQ(loser.Json()["errorCode"], "source_already_loaded") << loser.body;
  EXPECT_NE(loser.Json()["error"].get<std::string>().find(ids[0]), std::string::npos) << loser.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 1);
}

TEST_F(ApiTest, ARunThatCanNeverFitTheQueueIs422AndCreatesNothing) {
  config_.limits.max_queued_bytes = 16;
  const std::string pipeline = MakePipeline();
  const std::string upload = Upload(pipeline, "id,amount,note\n1,1.00,a\n");  // 24 bytes
  HttpResult never = Submit(pipeline, "never", json{{"uploads", {upload}}}.dump());
  ASSERT_EQ(never.status, 422) << never.body;
  EXPECT_EQ(never.Json()["code"], "limit_exceeded");
  EXPECT_EQ(never.Json()["limit"], "maxQueuedBytes");
  EXPECT_EQ(never.Header("retry-after"), "");
  EXPECT_NE(never.Json()["detail"].get<std::string>().find("can never fit"), std::string::npos);
  EXPECT_EQ(Call("ada", "GET", "/v1/runs?idempotencyKey=never", "/v1/runs").Json()["runs"].size(),
            0u);
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 0);
}

TEST_F(ApiTest, CancelAndRevertRuns) {
  config_.workers = 0;  // runs stay queued until a worker is asked
  const std::string pipeline = MakePipeline();
  const std::string u1 = Upload(pipeline, "id,amount,note\n1,1.00,a\n");
  HttpResult queued = Submit(pipeline, "c1", json{{"uploads", {u1}}}.dump());
  ASSERT_EQ(queued.status, 202);
  const std::string id = queued.Json()["id"];
  HttpResult got = Call("ada", "GET", "/v1/runs/" + id, "/v1/runs/{id}");
  EXPECT_EQ(got.Json()["queuePosition"], 0);
  HttpResult cancelled = Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.Json()["state"], "cancelled");
  HttpResult twice = Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel");
  EXPECT_EQ(twice.status, 412);

  const std::string u2 = Upload(pipeline, "id,amount,note\n5,1.00,a\n");
  HttpResult run = Submit(pipeline, "c2", json{{"uploads", {u2}}}.dump());
  ASSERT_EQ(run.status, 202);
  while (Srv().service().RunWorkerOnce().value()) {
  }
  HttpResult reverted =
      Call("ada", "POST", "/v1/runs/" + run.Json()["id"].get<std::string>() + "/revert",
           "/v1/runs/{id}/revert");
  ASSERT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 0);

  // An append run reverts alone, exactly its rows, although a run committed after it.
  const std::string appends =
      MakePipeline(R"({"name":"orders-add","table":"orders","format":"csv"})");
  std::vector<std::string> ids;
  for (const std::string n : {"7", "8"}) {
    const std::string u = Upload(appends, "id,amount,note\n" + n + ",1.00,a\n");
    HttpResult r = Submit(appends, "a" + n, json{{"uploads", {u}}}.dump());
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.Json()["id"]);
  }
  while (Srv().service().RunWorkerOnce().value()) {
  }
  const std::string revert = "/v1/runs/" + ids[0] + "/revert";
  HttpResult alone = Call("ada", "POST", revert, "/v1/runs/{id}/revert");
  ASSERT_EQ(alone.status, 200) << alone.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 1);
  HttpResult again = Call("ada", "POST", revert, "/v1/runs/{id}/revert");
  EXPECT_EQ(again.status, 412) << again.body;
  EXPECT_EQ(again.Json()["code"], "precondition_failed");
  EXPECT_NE(again.body.find("no longer in table"), std::string::npos) << again.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 1);
  HttpResult unknown = Call("ada", "GET", "/v1/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV", "/v1/runs/{id}");
  EXPECT_EQ(unknown.status, 404);
}

TEST_F(ApiTest, PipelinesCrud) {
  const std::string id = MakePipeline();
  HttpResult dup = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines", kPipeline);
  EXPECT_EQ(dup.status, 409);
  HttpResult list = Call("ada", "GET", "/v1/pipelines", "/v1/pipelines");
  ASSERT_EQ(list.Json()["pipelines"].size(), 1u);
  HttpResult patched = Call("ada", "PATCH", "/v1/pipelines/" + id, "/v1/pipelines/{id}",
                            R"({"errorPolicy":"validationOnly"})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.Json()["errorPolicy"], "validationOnly");
  HttpResult rename =
      Call("ada", "PATCH", "/v1/pipelines/" + id, "/v1/pipelines/{id}", R"({"name":"other"})");
  EXPECT_EQ(rename.status, 400);
  EXPECT_EQ(Call("rex", "DELETE", "/v1/pipelines/" + id, "/v1/pipelines/{id}").status, 403);
  EXPECT_EQ(Call("ada", "DELETE", "/v1/pipelines/" + id, "/v1/pipelines/{id}").status, 204);
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines/" + id, "/v1/pipelines/{id}").status, 404);
}

TEST_F(ApiTest, LimitsAndOpenApi) {
  HttpResult limits = Call("ada", "GET", "/v1/limits", "/v1/limits");
  ASSERT_EQ(limits.status, 200);
  EXPECT_TRUE(limits.Json().is_object());
  HttpResult doc = Call("ada", "GET", "/v1/openapi.json", "/v1/openapi.json");
  ASSERT_EQ(doc.status, 200);
  EXPECT_EQ(doc.Json()["openapi"], "3.1.0");
  EXPECT_TRUE(doc.Json()["paths"].contains("/v1/pipelines/{id}/runs"));
}

// One sample line of the Prometheus text format: name{label="value",...} number.
bool IsPrometheusSample(const std::string& line) {
  const auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && std::isdigit(static_cast<unsigned char>(c)));
  };
  size_t i = 0;
  if (i == line.size() || !name_char(line[i], true)) return false;
  while (i < line.size() && name_char(line[i], false)) ++i;
  if (i < line.size() && line[i] == '{') {
    for (++i;;) {
      const size_t label = i;
      while (i < line.size() && line[i] != ':' && name_char(line[i], i == label)) ++i;
      if (i == label || line.compare(i, 2, "=\"") != 0) return false;
      const size_t close = line.find('"', i + 2);
      if (close == std::string::npos) return false;
      i = close + 1;
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i == line.size() || line[i] != '}') return false;
      ++i;
      break;
    }
  }
  if (i == line.size() || line[i] != ' ') return false;
  const std::string value = line.substr(i + 1);
  if (value == "+Inf" || value == "-Inf" || value == "NaN") return true;
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  return !value.empty() && *end == '\0';
}

// Prometheus text: "# HELP"/"# TYPE" comments and `name{labels} value`.
TEST_F(ApiTest, MetricsParseAndCountWhatHappened) {
  Call("ada", "GET", "/v1/tables", "/v1/tables");
  Call("ada", "GET", "/v1/tables", "/v1/tables");
  HttpCall(Port(), "GET", "/v1/tables");  // 401
  HttpResult m = Call("", "GET", "/metrics", "/metrics");
  ASSERT_EQ(m.status, 200);
  std::map<std::string, double> values;
  std::istringstream in(m.body);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) continue;
    ASSERT_TRUE(IsPrometheusSample(line)) << line;
    values[line.substr(0, line.rfind(' '))] = std::stod(line.substr(line.rfind(' ') + 1));
  }
  EXPECT_EQ(
      (values["loam_http_requests_total{method=\"GET\",route=\"/v1/tables\",status=\"200\"}"]), 2);
  EXPECT_EQ(
      (values["loam_http_requests_total{method=\"GET\",route=\"/v1/tables\",status=\"401\"}"]), 1);
  EXPECT_EQ(values.count("loam_queue_runs"), 1u);
  EXPECT_EQ(values.count("loam_worker_leases_held"), 1u);
}

}  // namespace
}  // namespace loam::server
