// Branches and merges over real HTTP: create, list, read and delete (the
// owner), merge with checks (any principal holding the grants), every
// refusal with its problem and main unchanged.
#include <algorithm>

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class BranchRouteTest : public ServerTest {
 protected:
  HttpResult Create(const json& body, const std::string& sub = "owner") {
    return Call(sub, "POST", "/v1/branches", "/v1/branches", body.dump(),
                {{"Content-Type", "application/json"}});
  }
  HttpResult Merge(const std::string& branch, const json& body, const std::string& key = "",
                   const std::string& sub = "ada") {
    Headers h = {{"Content-Type", "application/json"}};
    if (!key.empty()) h.emplace_back("Idempotency-Key", key);
    return Call(sub, "POST", "/v1/branches/" + branch + "/merge", "/v1/branches/{name}/merge",
                body.dump(), h);
  }
  // Rows of orders on `branch`, written through the engine the server shares.
  void Load(const std::vector<int64_t>& ids, const std::string& branch) {
    RecordBatch b(ws_->Current().value().Find("orders")->def.schema);
    for (int64_t id : ids) ASSERT_TRUE(b.AppendRow({id, std::monostate{}, std::monostate{}}).ok());
    WriteRequest w;
    w.table = "orders";
    w.branch = branch;
    w.principal = "owner";
    w.rows = {b};
    ASSERT_TRUE(ws_->Write(w).ok());
  }
  int64_t MainRows() {
    HttpResult r = Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json()["rowCount"].get<int64_t>();
  }
};

TEST_F(BranchRouteTest, TheOwnerMakesBranchesAndAnyoneListsThem) {
  HttpResult made = Create({{"name", "day-1"}});
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(made.Header("location"), "/v1/branches/day-1");
  EXPECT_EQ(made.Json()["parent"], "main");
  HttpResult list = Call("rex", "GET", "/v1/branches", "/v1/branches");
  ASSERT_EQ(list.status, 200) << list.body;
  ASSERT_EQ(list.Json()["branches"].size(), 2u) << list.body;
  EXPECT_EQ(list.Json()["branches"][0]["name"], "day-1");
  EXPECT_EQ(list.Json()["branches"][1]["name"], "main");
  HttpResult one = Call("rex", "GET", "/v1/branches/day-1", "/v1/branches/{name}");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.Json()["parentVersion"], made.Json()["parentVersion"]);
  const struct {
    json body;
    std::string sub;
    int status;
    std::string code;
  } refused[] = {
      {{{"name", "x"}}, "ada", 403, "permission_denied"},
      {{{"name", "bad name"}}, "owner", 400, "invalid_argument"},
      {{{"name", "main"}}, "owner", 400, "invalid_argument"},
      {{{"name", "x"}, {"from", "nope"}}, "owner", 404, "not_found"},
      {{{"name", "x"}, {"colour", "red"}}, "owner", 400, "invalid_argument"},
      {{{"name", "day-1"}}, "owner", 409, "already_exists"},
  };
  for (const auto& r : refused) {
    HttpResult h = Create(r.body, r.sub);
    EXPECT_EQ(h.status, r.status) << r.body << " " << h.body;
    EXPECT_EQ(h.Json()["code"], r.code) << h.body;
  }
  EXPECT_EQ(Call("ada", "DELETE", "/v1/branches/day-1", "/v1/branches/{name}").status, 403);
  EXPECT_EQ(Call("owner", "DELETE", "/v1/branches/main", "/v1/branches/{name}").status, 400);
  EXPECT_EQ(Call("owner", "DELETE", "/v1/branches/nope", "/v1/branches/{name}").status, 404);
  EXPECT_EQ(Call("owner", "DELETE", "/v1/branches/day-1", "/v1/branches/{name}").status, 204);
  EXPECT_EQ(Call("rex", "GET", "/v1/branches/day-1", "/v1/branches/{name}").status, 404);
}

TEST_F(BranchRouteTest, AMergeChecksTheBranchThenPublishesItOnceUnderItsKey) {
  ASSERT_EQ(Create({{"name", "day-1"}}).status, 201);
  Load({1, 2, 3}, "day-1");
  ASSERT_EQ(MainRows(), 0);
  // A failed check: 422 naming it, nothing merged.
  HttpResult failed =
      Merge("day-1", {{"checks", {{{"name", "enough"}, {"table", "orders"}, {"minRows", 10}}}}});
  ASSERT_EQ(failed.status, 422) << failed.body;
  EXPECT_EQ(failed.Json()["code"], "merge_check_failed");
  EXPECT_NE(failed.Json()["detail"].get<std::string>().find("has 3 rows, fewer than 10"),
            std::string::npos)
      << failed.body;
  EXPECT_EQ(MainRows(), 0);
  // A reader may not merge what it may not write.
  HttpResult denied = Merge("day-1", json::object(), "", "rex");
  EXPECT_EQ(denied.status, 403) << denied.body;
  const json checks = {{"checks",
                        {{{"name", "bounded"}, {"table", "orders"}, {"minRows", 1}, {"maxRows", 3}},
                         {{"name", "ids"}, {"table", "orders"}, {"unique", {"id"}}}}}};
  HttpResult merged = Merge("day-1", checks, "day-1-merge");
  ASSERT_EQ(merged.status, 200) << merged.body;
  EXPECT_EQ(merged.Json()["mergeId"], "day-1-merge");
  EXPECT_EQ(merged.Json()["tables"][0]["change"], "updated");
  EXPECT_EQ(MainRows(), 3);
  HttpResult replayed = Merge("day-1", checks, "day-1-merge");
  EXPECT_EQ(replayed.status, 200);
  EXPECT_EQ(replayed.Header("idempotency-replayed"), "true");
  // The merge is in the table's history under its id.
  HttpResult history = Call("ada", "GET", "/v1/tables/orders/history", "/v1/tables/{name}/history");
  EXPECT_EQ(history.Json()["history"].back()["runIds"][0], "merge:day-1-merge") << history.body;
  // Nothing changed since: nothing to merge.
  HttpResult nothing = Merge("day-1", json::object());
  ASSERT_EQ(nothing.status, 200) << nothing.body;
  EXPECT_EQ(nothing.Json()["workspaceVersion"], 0);
}

TEST_F(BranchRouteTest, AMergeIsRevertedAsOneUnitOnce) {
  ASSERT_EQ(Create({{"name", "day-1"}}).status, 201);
  Load({1, 2, 3}, "day-1");
  ASSERT_EQ(Merge("day-1", json::object(), "m-1").status, 200);
  ASSERT_EQ(MainRows(), 3);
  auto revert = [&](const std::string& id, const std::string& sub, const json& body = nullptr) {
    return Call(sub, "POST", "/v1/merges/" + id + "/revert", "/v1/merges/{id}/revert",
                body.is_null() ? "" : body.dump(), {{"Content-Type", "application/json"}});
  };
  const struct {
    std::string id;
    std::string sub;
    json body;
    int status;
    std::string code;
  } refused[] = {
      {"m-1", "rex", nullptr, 403, "permission_denied"},  // a reader
      {"m-9", "ada", nullptr, 404, "not_found"},
      {"m-1", "ada", {{"into", "day-1"}}, 404, "not_found"},  // not merged there
      {"m-1", "ada", {{"colour", "red"}}, 400, "invalid_argument"},
  };
  for (const auto& r : refused) {
    HttpResult h = revert(r.id, r.sub, r.body);
    EXPECT_EQ(h.status, r.status) << r.id << " " << h.body;
    EXPECT_EQ(h.Json()["code"], r.code) << h.body;
  }
  EXPECT_EQ(MainRows(), 3);
  HttpResult reverted = revert("m-1", "ada", {{"into", "main"}});
  ASSERT_EQ(reverted.status, 200) << reverted.body;
  EXPECT_EQ(reverted.Json()["tables"][0]["change"], "restored");
  EXPECT_EQ(reverted.Json()["alreadyReverted"], false);
  EXPECT_EQ(MainRows(), 0);
  HttpResult again = revert("m-1", "ada");
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.Json()["alreadyReverted"], true);
  EXPECT_EQ(again.Json()["workspaceVersion"], reverted.Json()["workspaceVersion"]);
  HttpResult history = Call("ada", "GET", "/v1/tables/orders/history", "/v1/tables/{name}/history");
  EXPECT_EQ(history.Json()["history"].back()["runIds"][0], "merge-revert:m-1") << history.body;
  // Merged again, then loaded on main: the revert is blocked, naming the table.
  ASSERT_EQ(Merge("day-1", json::object(), "m-2").status, 200);
  Load({4}, "");
  HttpResult blocked = revert("m-2", "ada");
  ASSERT_EQ(blocked.status, 409) << blocked.body;
  EXPECT_EQ(blocked.Json()["code"], "revert_blocked");
  EXPECT_EQ(blocked.Json()["table"], "orders");
  EXPECT_EQ(MainRows(), 4);
}

TEST_F(BranchRouteTest, RefusedMergesSayWhyAndChangeNothing) {
  ASSERT_EQ(Create({{"name", "day-1"}}).status, 201);
  ASSERT_EQ(Create({{"name", "day-2"}}).status, 201);
  Load({1}, "day-1");
  Load({2}, "day-2");
  ASSERT_EQ(Merge("day-2", json::object()).status, 200);
  const int64_t rows = MainRows();
  const struct {
    std::string branch;
    json body;
    int status;
    std::string code;
  } refused[] = {
      {"day-1", json::object(), 409, "conflict"},  // main's orders moved: day-2
      {"day-1", {{"into", "day-2"}}, 400, "invalid_argument"},
      {"main", json::object(), 400, "invalid_argument"},
      {"nope", json::object(), 404, "not_found"},
      {"day-1", {{"checks", {{{"name", "q"}, {"sql", "SELECT 1"}}}}}, 501, "unimplemented"},
      {"day-1", {{"checks", {{{"name", "q"}}}}}, 400, "invalid_argument"},
      {"day-1",
       {{"checks", {{{"name", "q"}, {"sql", "SELECT 1"}, {"table", "t"}}}}},
       400,
       "invalid_argument"},
      {"day-1", {{"checks", json::array({1})}}, 400, "invalid_argument"},
      {"day-1", {{"unknown", true}}, 400, "invalid_argument"},
  };
  for (const auto& r : refused) {
    HttpResult h = Merge(r.branch, r.body);
    EXPECT_EQ(h.status, r.status) << r.branch << " " << r.body << " " << h.body;
    EXPECT_EQ(h.Json()["code"], r.code) << h.body;
  }
  HttpResult conflict = Merge("day-1", json::object());
  EXPECT_NE(conflict.Json()["detail"].get<std::string>().find("orders"), std::string::npos);
  EXPECT_EQ(MainRows(), rows);
}

// Write, audit, publish through pipelines: a pipeline loads into its branch,
// reads name the branch, and a merge publishes it.
TEST_F(BranchRouteTest, APipelineLoadsIntoItsBranchUntilAMergePublishesIt) {
  ASSERT_EQ(Create({{"name", "day-1"}}).status, 201);
  HttpResult p = Call(
      "ada", "POST", "/v1/pipelines", "/v1/pipelines",
      json{{"name", "feed"}, {"table", "orders"}, {"format", "csv"}, {"branch", "day-1"}}.dump());
  ASSERT_EQ(p.status, 201) << p.body;
  EXPECT_EQ(p.Json()["branch"], "day-1");
  const std::string id = p.Json()["id"];
  HttpResult r = Call("ada", "POST", "/v1/pipelines/" + id + "/runs", "/v1/pipelines/{id}/runs",
                      "id,amount,note\n1,5.00,a\n2,7.50,b\n",
                      {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-1"}});
  ASSERT_EQ(r.status, 202) << r.body;
  HttpResult done = Call("rex", "GET", "/v1/runs/" + r.Json()["id"].get<std::string>() + "?wait=30",
                         "/v1/runs/{id}");
  ASSERT_EQ(done.Json()["state"], "succeeded") << done.body;
  HttpResult on_branch =
      Call("rex", "GET", "/v1/tables/orders/rows?branch=day-1", "/v1/tables/{name}/rows");
  ASSERT_EQ(on_branch.status, 200) << on_branch.body;
  EXPECT_EQ(std::count(on_branch.body.begin(), on_branch.body.end(), '\n'), 2);
  EXPECT_EQ(MainRows(), 0);
  ASSERT_EQ(Merge("day-1", json::object()).status, 200);
  EXPECT_EQ(MainRows(), 2);
  // The branch is fixed at creation; an unknown one is refused.
  // Main protected: the pipeline's branch is merged; a load into main is refused.
  const auto protect = [&](const std::string& sub, const json& body) {
    return Call(sub, "PATCH", "/v1/branches/main", "/v1/branches/{name}", body.dump(),
                {{"Content-Type", "application/json"}});
  };
  EXPECT_EQ(protect("ada", {{"protected", true}}).status, 403);
  EXPECT_EQ(protect("owner", {{"protected", "yes"}}).status, 400);
  EXPECT_EQ(protect("owner", json::object()).status, 400);
  HttpResult on = protect("owner", {{"protected", true}});
  ASSERT_EQ(on.status, 200) << on.body;
  EXPECT_EQ(on.Json()["protected"], true);
  HttpResult main_feed =
      Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
           json{{"name", "main-feed"}, {"table", "orders"}, {"format", "csv"}}.dump());
  ASSERT_EQ(main_feed.status, 201) << main_feed.body;
  HttpResult direct =
      Call("ada", "POST", "/v1/pipelines/" + main_feed.Json()["id"].get<std::string>() + "/runs",
           "/v1/pipelines/{id}/runs", "id,amount,note\n9,1.00,z\n",
           {{"Content-Type", "text/csv"}, {"Idempotency-Key", "k-9"}});
  ASSERT_EQ(direct.status, 202) << direct.body;
  HttpResult refused =
      Call("ada", "GET", "/v1/runs/" + direct.Json()["id"].get<std::string>() + "?wait=30",
           "/v1/runs/{id}");
  EXPECT_EQ(refused.Json()["state"], "failed") << refused.body;
  EXPECT_NE(refused.body.find("only through merges"), std::string::npos) << refused.body;
  Load({7}, "day-1");
  ASSERT_EQ(Merge("day-1", json::object()).status, 200);
  EXPECT_EQ(MainRows(), 3);
  HttpResult moved = Call("ada", "PATCH", "/v1/pipelines/" + id, "/v1/pipelines/{id}",
                          json{{"branch", "main"}}.dump());
  EXPECT_EQ(moved.status, 400) << moved.body;
  HttpResult nowhere = Call(
      "ada", "POST", "/v1/pipelines", "/v1/pipelines",
      json{{"name", "lost"}, {"table", "orders"}, {"format", "csv"}, {"branch", "nope"}}.dump());
  EXPECT_EQ(nowhere.status, 404) << nowhere.body;
  HttpResult bad =
      Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
           json{{"name", "bad"}, {"table", "orders"}, {"format", "csv"}, {"branch", "a b"}}.dump());
  EXPECT_EQ(bad.status, 400) << bad.body;
}

}  // namespace
}  // namespace loam::server
