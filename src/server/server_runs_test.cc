// GET /v1/runs over real HTTP: newest first by default, a stable cursor in
// either order, and the table / since / until filters, each refusing bad
// input with a clear problem. The cancel of a started run.

#include <ctime>

#include "common/ulid.h"
#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

std::string Rfc3339(int64_t ms) {
  const std::time_t secs = ms / 1000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char text[96];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return text;
}

int64_t MillisOf(const std::string& run_id) {
  return static_cast<int64_t>(Ulid::Parse(run_id).value().millis());
}

class RunListingTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    config_.workers = 0;  // runs stay queued
    Schema refunds{{{"id", DataType::Int64(), false}}};
    ASSERT_TRUE(ws_->CreateTable("refunds", refunds, {"id"}).ok());
    ASSERT_TRUE(ws_->SetGrant("refunds", "ada", Role::kWriter).ok());
  }
  std::string Pipeline(const std::string& name, const std::string& table) {
    HttpResult p =
        Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
             json{{"name", name}, {"table", table}, {"mode", "append"}, {"format", "csv"}}.dump());
    EXPECT_EQ(p.status, 201) << p.body;
    return p.Json()["id"];
  }
  std::string Run(const std::string& pipeline, const std::string& csv) {
    HttpResult r =
        Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs", csv,
             {{"Content-Type", "text/csv"}, {"Idempotency-Key", NewUlidString()}});
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json()["id"];
  }
  // Every page of `query`, `limit` runs at a time, following nextCursor.
  std::vector<std::string> Pages(const std::string& query, int limit, int* pages = nullptr) {
    std::vector<std::string> ids;
    std::string cursor;
    for (int n = 1;; ++n) {
      std::string target = "/v1/runs?limit=" + std::to_string(limit) + query;
      if (!cursor.empty()) target += "&cursor=" + cursor;
      HttpResult r = Call("ada", "GET", target, "/v1/runs");
      EXPECT_EQ(r.status, 200) << r.body;
      if (r.status != 200) return ids;
      const json body = r.Json();
      for (const json& run : body["runs"]) ids.push_back(run["id"]);
      if (body["nextCursor"].is_null()) {
        if (pages != nullptr) *pages = n;
        return ids;
      }
      cursor = body["nextCursor"];
    }
  }
};

TEST_F(RunListingTest, NewestFirstWithAStableCursorAndFilters) {
  const std::string orders = Pipeline("orders-feed", "orders");
  const std::string refunds = Pipeline("refunds-feed", "refunds");
  std::vector<std::string> ids;  // submission order
  for (int i = 0; i < 5; ++i) {
    const std::string id = std::to_string(i + 1);
    ids.push_back(i % 2 == 0 ? Run(orders, "id,amount,note\n" + id + ",1.00,x\n")
                             : Run(refunds, "id\n" + id + "\n"));
  }
  const std::vector<std::string> newest(ids.rbegin(), ids.rend());
  int pages = 0;
  EXPECT_EQ(Pages("", 2, &pages), newest);
  EXPECT_EQ(pages, 3);  // 2 + 2 + 1, the last without a cursor
  EXPECT_EQ(Pages("&order=newest", 5), newest);
  EXPECT_EQ(Pages("&order=oldest", 2), ids);

  EXPECT_EQ(Pages("&table=refunds", 1), (std::vector<std::string>{ids[3], ids[1]}));
  EXPECT_EQ(Pages("&table=orders&order=oldest", 10),
            (std::vector<std::string>{ids[0], ids[2], ids[4]}));
  EXPECT_EQ(Pages("&table=refunds&pipeline=" + orders, 10), std::vector<std::string>{});

  // since is inclusive and until exclusive, to the millisecond of the id.
  const int64_t t = MillisOf(ids[2]);
  std::vector<std::string> since, until;
  for (const std::string& id : newest) (MillisOf(id) >= t ? since : until).push_back(id);
  EXPECT_EQ(Pages("&since=" + Rfc3339(t), 2), since);
  EXPECT_EQ(Pages("&until=" + Rfc3339(t), 2), until);
  EXPECT_EQ(Pages("&since=" + Rfc3339(t) + "&until=" + Rfc3339(t + 1) + "&order=oldest", 1).front(),
            ids[2]);
  // An offset is honoured: the same instant written in another zone ('+'
  // percent-encoded, as a query's '+' is a space).
  const std::string in_tokyo = Rfc3339(t + 9 * 3600 * 1000).substr(0, 23) + "%2B09:00";
  EXPECT_EQ(Pages("&since=" + in_tokyo, 10), since);
}

TEST_F(RunListingTest, BadFiltersAreRefusedClearly) {
  struct Case {
    std::string query;
    int status;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"order=sideways", 400, "order must be 'newest' or 'oldest'"},
      {"since=yesterday", 400, "since: "},
      {"until=2026-12-01T10:00:00", 400, "until: "},  // no offset: ambiguous
      {"table=nope", 404, "table 'nope' does not exist"},
      // A cursor is an id in its canonical spelling: another sorts elsewhere.
      {"cursor=01arz3ndektsv4rrffq69g5fav", 400, "cursor is not one this server gave"},
      {"cursor=ZZZZ", 400, "cursor is not one this server gave"},
      {"since=2026-12-01T10:00:00Z&since=2026-12-02T10:00:00Z", 400,
       "query parameter 'since' is given twice"},
  };
  for (const Case& c : cases) {
    HttpResult r = Call("ada", "GET", "/v1/runs?" + c.query, "/v1/runs");
    EXPECT_EQ(r.status, c.status) << c.query << ": " << r.body;
    EXPECT_NE(r.Json().value("detail", "").find(c.message), std::string::npos)
        << c.query << ": " << r.body;
  }
  // A table the caller holds no grant on is not listed through the filter.
  HttpResult hidden = Call("rex", "GET", "/v1/runs?table=refunds", "/v1/runs");
  EXPECT_EQ(hidden.status, 403) << hidden.body;
  EXPECT_EQ(hidden.Json()["code"], "permission_denied");
}

// A run a worker holds is asked to stop (202, `cancelRequest`); it ends
// cancelled before its commit, having written nothing.
TEST_F(RunListingTest, ACancelOfAStartedRunStopsItBeforeItsCommit) {
  std::string id;
  HttpResult asked;
  auto open = [&](service::ServiceOptions so) {
    // The cancel arrives while the worker holds the run, validated.
    so.failpoint = [&](std::string_view point) {
      if (point == "run.before_commit" && asked.status == 0) {  // the loader's, by name
        asked = Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel");
      }
      return Status::OK();
    };
    return service::Service::OpenerOver(ws_)(std::move(so));
  };
  server_ = Server::Start(open, config_).value();
  id = Run(Pipeline("orders-feed", "orders"), "id,amount,note\n1,1.00,x\n2,2.00,y\n");
  while (Srv().service().RunWorkerOnce().value()) {
  }
  ASSERT_EQ(asked.status, 202) << asked.body;
  EXPECT_FALSE(asked.Json()["state"] == "cancelled") << asked.body;
  EXPECT_EQ(asked.Json()["cancelRequest"]["by"], "ada") << asked.body;
  HttpResult done = Call("ada", "GET", "/v1/runs/" + id, "/v1/runs/{id}");
  EXPECT_EQ(done.Json()["state"], "cancelled") << done.body;
  EXPECT_EQ(done.Json()["error"], "cancelled by ada while committing; nothing was written");
  EXPECT_EQ(done.Json()["cancelRequest"]["by"], "ada");
  EXPECT_EQ(done.Json()["counters"]["inserted"], 0);
  EXPECT_EQ(Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}").Json()["rowCount"], 0);
  // A finished run cannot be cancelled; a reader cannot cancel at all.
  HttpResult late = Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel");
  EXPECT_EQ(late.status, 412) << late.body;
  EXPECT_EQ(late.Json()["detail"],
            "run " + id + " is cancelled: a finished run cannot be cancelled");
  EXPECT_EQ(Call("rex", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel").status, 403);
}

}  // namespace
}  // namespace loam::server
