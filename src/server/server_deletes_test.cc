// POST /v1/tables/{name}/deletes over real HTTP: rows deleted by filters or
// by keys as a run (once under its key, one commit, revertable), and every
// refusal with its problem and the table unchanged.
#include <sstream>

#include "common/ulid.h"
#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class DeleteRouteTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                        json{{"name", "feed"}, {"table", "orders"}, {"format", "csv"}}.dump());
    ASSERT_EQ(p.status, 201) << p.body;
    pipeline_ = p.Json()["id"];
    HttpResult r =
        Call("ada", "POST", "/v1/pipelines/" + pipeline_ + "/runs", "/v1/pipelines/{id}/runs",
             "id,amount,note\n1,5.00,a\n2,7.50,b\n3,1.25,c\n4,9.00,a\n",
             {{"Content-Type", "text/csv"}, {"Idempotency-Key", NewUlidString()}});
    ASSERT_EQ(r.status, 202) << r.body;
    ASSERT_EQ(Wait(r.Json()["id"])["state"], "succeeded");
  }
  HttpResult Delete(const json& body, const std::string& key, const std::string& sub = "ada",
                    const std::string& table = "orders") {
    Headers h = {{"Content-Type", "application/json"}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call(sub, "POST", "/v1/tables/" + table + "/deletes", "/v1/tables/{name}/deletes",
                body.dump(), h);
  }
  json Wait(const std::string& run) {
    HttpResult r = Call("ada", "GET", "/v1/runs/" + run + "?wait=30", "/v1/runs/{id}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  }
  // The ids of the table's rows, as "1 2 3".
  std::string Ids() {
    HttpResult r = Call("ada", "GET", "/v1/tables/orders/rows", "/v1/tables/{name}/rows");
    EXPECT_EQ(r.status, 200) << r.body;
    std::map<int64_t, int> ids;
    std::istringstream lines(r.body);
    for (std::string line; std::getline(lines, line);)
      ++ids[json::parse(line)["id"].get<int64_t>()];
    std::string out;  // a row held twice shows twice
    for (const auto& [id, n] : ids) {
      for (int i = 0; i < n; ++i) out += (out.empty() ? "" : " ") + std::to_string(id);
    }
    return out;
  }

  std::string pipeline_;
};

TEST_F(DeleteRouteTest, AFilterDeleteIsARunThatCommitsOnceAndReverts) {
  const json body = {{"where", {"note = a", "amount > 6"}}};
  HttpResult first = Delete(body, "erase-4");
  ASSERT_EQ(first.status, 202) << first.body;
  EXPECT_EQ(first.Json()["pipelineId"], "");
  EXPECT_EQ(first.Header("location"), "/v1/runs/" + first.Json()["id"].get<std::string>());
  const json done = Wait(first.Json()["id"]);
  EXPECT_EQ(done["state"], "succeeded") << done;
  EXPECT_EQ(done["counters"]["deleted"], 1);
  EXPECT_EQ(done["mode"], "delete");
  EXPECT_EQ(done["submittedBy"], "ada");
  EXPECT_EQ(Ids(), "1 2 3");
  // In the table's history: the commit, when, and the run (whose document names who).
  HttpResult history = Call("rex", "GET", "/v1/tables/orders/history", "/v1/tables/{name}/history");
  ASSERT_EQ(history.status, 200) << history.body;
  const json last = history.Json()["history"].back();
  EXPECT_EQ(last["commitId"], done["commit"]["commitId"]) << last;
  EXPECT_EQ(last["runIds"], json::array({done["id"]})) << last;
  EXPECT_FALSE(last["createdAt"].get<std::string>().empty()) << last;
  HttpResult again = Delete(body, "erase-4");
  EXPECT_EQ(again.status, 202);
  EXPECT_EQ(again.Header("idempotency-replayed"), "true");
  EXPECT_EQ(again.Json()["id"], first.Json()["id"]);
  HttpResult other = Delete({{"where", {"id = 1"}}}, "erase-4");
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_EQ(Ids(), "1 2 3");

  const std::string revert = "/v1/runs/" + first.Json()["id"].get<std::string>() + "/revert";
  HttpResult reverted = Call("ada", "POST", revert, "/v1/runs/{id}/revert");
  ASSERT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(Ids(), "1 2 3 4");
  HttpResult twice = Call("ada", "POST", revert, "/v1/runs/{id}/revert");
  EXPECT_EQ(twice.status, 412) << twice.body;
  EXPECT_NE(twice.body.find("reverted already"), std::string::npos) << twice.body;
  EXPECT_EQ(Ids(), "1 2 3 4");
}

// Without declared keys nothing else tells a returned row from another:
// the revert's own commit record lets it happen once.
TEST_F(DeleteRouteTest, ADeleteFromAnUnkeyedTableRevertsOnce) {
  ASSERT_TRUE(ws_->CreateTable("notes", Schema{{{"id", DataType::Int64(), false}}}, {}).ok());
  ASSERT_TRUE(ws_->SetGrant("notes", "ada", Role::kWriter).ok());
  HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                      json{{"name", "notes-feed"}, {"table", "notes"}, {"format", "csv"}}.dump());
  ASSERT_EQ(p.status, 201) << p.body;
  HttpResult load =
      Call("ada", "POST", "/v1/pipelines/" + p.Json()["id"].get<std::string>() + "/runs",
           "/v1/pipelines/{id}/runs", "id\n7\n7\n8\n",
           {{"Content-Type", "text/csv"}, {"Idempotency-Key", NewUlidString()}});
  ASSERT_EQ(Wait(load.Json()["id"])["state"], "succeeded");
  HttpResult del =
      Delete({{"keys", {{{"id", 7}}}}, {"keyColumns", {"id"}}}, NewUlidString(), "ada", "notes");
  ASSERT_EQ(del.status, 202) << del.body;
  EXPECT_EQ(Wait(del.Json()["id"])["counters"]["deleted"], 2);
  const std::string revert = "/v1/runs/" + del.Json()["id"].get<std::string>() + "/revert";
  EXPECT_EQ(Call("ada", "POST", revert, "/v1/runs/{id}/revert").status, 200);
  HttpResult twice = Call("ada", "POST", revert, "/v1/runs/{id}/revert");
  EXPECT_EQ(twice.status, 412) << twice.body;
  HttpResult rows = Call("ada", "GET", "/v1/tables/notes/rows", "/v1/tables/{name}/rows");
  EXPECT_EQ(std::count(rows.body.begin(), rows.body.end(), '\n'), 3) << rows.body;
}

TEST_F(DeleteRouteTest, KeysDeleteTheirRowsAndARevertWaitsForKeysWrittenAgain) {
  HttpResult del = Delete({{"keys", {{{"id", 2}}, {{"id", 3}}, {{"id", 99}}}}}, NewUlidString());
  ASSERT_EQ(del.status, 202) << del.body;
  const json done = Wait(del.Json()["id"]);
  EXPECT_EQ(done["state"], "succeeded") << done;
  EXPECT_EQ(done["counters"]["rowsRead"], 3);
  EXPECT_EQ(done["counters"]["deleted"], 2);
  EXPECT_EQ(Ids(), "1 4");
  // Key 3 written again: the deleted row cannot come back beside it.
  HttpResult load = Call("ada", "POST", "/v1/pipelines/" + pipeline_ + "/runs",
                         "/v1/pipelines/{id}/runs", "id,amount,note\n3,2.00,new\n",
                         {{"Content-Type", "text/csv"}, {"Idempotency-Key", NewUlidString()}});
  ASSERT_EQ(Wait(load.Json()["id"])["state"], "succeeded");
  HttpResult revert =
      Call("ada", "POST", "/v1/runs/" + del.Json()["id"].get<std::string>() + "/revert",
           "/v1/runs/{id}/revert");
  EXPECT_EQ(revert.status, 409) << revert.body;
  EXPECT_EQ(revert.Json()["code"], "revert_blocked") << revert.body;
  EXPECT_EQ(Ids(), "1 3 4");
}

TEST_F(DeleteRouteTest, InvalidKeysFailTheRunListingEachAndDeleteNothing) {
  HttpResult del = Delete({{"keys", {{{"id", "x"}}, {{"id", 1}}, {{"id", 2.5}}}}}, NewUlidString());
  ASSERT_EQ(del.status, 202) << del.body;
  const json done = Wait(del.Json()["id"]);
  EXPECT_EQ(done["state"], "failed") << done;
  EXPECT_EQ(done["errorCode"], "validation_failed") << done;
  HttpResult errors =
      Call("ada", "GET", "/v1/runs/" + del.Json()["id"].get<std::string>() + "/errors",
           "/v1/runs/{id}/errors");
  EXPECT_EQ(std::count(errors.body.begin(), errors.body.end(), '\n'), 2) << errors.body;
  EXPECT_EQ(Ids(), "1 2 3 4");
}

TEST_F(DeleteRouteTest, RefusalsNameTheRuleAndLeaveTheTable) {
  struct Case {
    json body;
    std::string key, sub, table;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{{"where", {"id = 1"}}}, "", "ada", "orders", 400, "idempotency_key_required"},
      {{{"where", {"id = 1"}}}, "k1", "rex", "orders", 403, "rex"},
      {{{"where", {"id = 1"}}}, "k2", "ada", "nope", 404, "nope"},
      {{{"where", {"size > 1"}}}, "k3", "ada", "orders", 400, "delete filter 'size > 1'"},
      {json::object(), "k4", "ada", "orders", 400, "one of the two"},
      {{{"where", {"id = 1"}}, {"keys", {{{"id", 1}}}}},
       "k5",
       "ada",
       "orders",
       400,
       "one of the two"},
      {{{"where", {"id = 1"}}, {"errorPolicy", "skipRows"}},
       "k6",
       "ada",
       "orders",
       400,
       "all or nothing"},
      {{{"keys", {{{"id", 1}}}}, {"keyColumns", {"size"}}},
       "k7",
       "ada",
       "orders",
       400,
       "key column 'size'"},
      {{{"where", {"id = 1"}}, {"expectedTableVersion", 1}},
       "k8",
       "ada",
       "orders",
       412,
       "not the expected 1"},
      {{{"where", {"id = 1"}}, {"limit", 3}}, "k9", "ada", "orders", 400, "unknown field 'limit'"},
      {json::parse(R"({"keys": [{"id": 12345678901234567890.5}]})"), "k10", "ada", "orders", 400,
       "significant digits"},
  };
  for (const Case& c : cases) {
    HttpResult r = Delete(c.body, c.key, c.sub, c.table);
    EXPECT_EQ(r.status, c.status) << c.body << "\n" << r.body;
    EXPECT_NE(r.body.find(c.message), std::string::npos) << c.body << "\n" << r.body;
  }
  HttpResult pipeline = Call(
      "ada", "POST", "/v1/pipelines", "/v1/pipelines",
      json{{"name", "eraser"}, {"table", "orders"}, {"mode", "delete"}, {"format", "csv"}}.dump());
  EXPECT_EQ(pipeline.status, 400) << pipeline.body;
  EXPECT_NE(pipeline.body.find("/v1/tables/{name}/deletes"), std::string::npos) << pipeline.body;
  EXPECT_EQ(Ids(), "1 2 3 4");
}

// A queued delete is cancelled by anyone who may delete from its table.
class QueuedDeleteTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    config_.workers = 0;  // runs stay queued
    ASSERT_TRUE(ws_->SetGrant("orders", "bo", Role::kWriter).ok());
  }
};

TEST_F(QueuedDeleteTest, AnotherWriterCancelsItAndAReaderCannot) {
  HttpResult del = Call("ada", "POST", "/v1/tables/orders/deletes", "/v1/tables/{name}/deletes",
                        json{{"where", {"id = 1"}}}.dump(),
                        {{"Content-Type", "application/json"}, {"Idempotency-Key", "q-1"}});
  ASSERT_EQ(del.status, 202) << del.body;
  EXPECT_EQ(del.Json()["state"], "queued");
  const std::string cancel = "/v1/runs/" + del.Json()["id"].get<std::string>() + "/cancel";
  HttpResult reader = Call("rex", "POST", cancel, "/v1/runs/{id}/cancel");
  EXPECT_EQ(reader.status, 403) << reader.body;
  HttpResult writer = Call("bo", "POST", cancel, "/v1/runs/{id}/cancel");
  EXPECT_EQ(writer.status, 200) << writer.body;
  EXPECT_EQ(writer.Json()["state"], "cancelled");
}

}  // namespace
}  // namespace loam::server
