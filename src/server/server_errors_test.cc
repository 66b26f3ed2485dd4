// A run's every error over real HTTP: the run document counts them and
// holds the first ten; GET /v1/runs/{id}/errors lists each as JSON Lines,
// in input order, never a value; `limits.maxErrors` lowers the cap.

#include "common/ulid.h"
#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class RunErrorsHttpTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    HttpResult p = Call(
        "ada", "POST", "/v1/pipelines", "/v1/pipelines",
        json{{"name", "orders-feed"}, {"table", "orders"}, {"mode", "append"}, {"format", "csv"}}
            .dump());
    ASSERT_EQ(p.status, 201) << p.body;
    pipeline_ = p.Json()["id"];
  }

  // 30 orders; those numbered in `bad` have an amount that is no number.
  static std::string Orders(const std::vector<int>& bad) {
    std::string csv = "id,amount,note\n";
    for (int i = 1; i <= 30; ++i) {
      const bool invalid = std::find(bad.begin(), bad.end(), i) != bad.end();
      csv += std::to_string(i) + "," + (invalid ? "lots" : "1.00") + ",n\n";
    }
    return csv;
  }

  // The run `submission` started, once terminal.
  json Finished(const HttpResult& submission) {
    EXPECT_EQ(submission.status, 202) << submission.body;
    const std::string id = submission.Json()["id"];
    for (int i = 0; i < 10; ++i) {
      HttpResult r = Call("ada", "GET", "/v1/runs/" + id + "?wait=30", "/v1/runs/{id}");
      const json run = r.Json();
      if (run["state"] != "queued" && run["state"] != "validating" &&
          run["state"] != "committing") {
        return run;
      }
    }
    ADD_FAILURE() << "run " << id << " never ended";
    return json::object();
  }

  HttpResult Inline(const std::string& csv) {
    return Call("ada", "POST", "/v1/pipelines/" + pipeline_ + "/runs", "/v1/pipelines/{id}/runs",
                csv, {{"Content-Type", "text/csv"}, {"Idempotency-Key", NewUlidString()}});
  }

  int64_t OrderRows() {
    HttpResult t = Call("ada", "GET", "/v1/tables/orders", "/v1/tables/{name}");
    return t.Json()["rowCount"];
  }

  std::string pipeline_;
};

TEST_F(RunErrorsHttpTest, EveryInvalidRowIsListedInInputOrder) {
  const std::vector<int> bad = {2, 4, 7, 9, 11, 13, 17, 19, 23, 25, 28, 30};
  const json run = Finished(Inline(Orders(bad)));
  EXPECT_EQ(run["state"], "failed") << run.dump();
  EXPECT_EQ(run["errorCode"], "validation_failed");
  EXPECT_NE(run["error"].get<std::string>().find("and 11 more invalid rows"), std::string::npos)
      << run.dump();
  const json counters = run["counters"];
  EXPECT_EQ(counters["errorCount"], 12);
  ASSERT_EQ(counters["errors"].size(), 10u);
  const json first = counters["errors"][0];
  EXPECT_EQ(first["line"], 3);  // the header is line 1
  EXPECT_EQ(first["column"], "amount");
  EXPECT_EQ(first["code"], "validation_failed");
  EXPECT_EQ(first["offset"], std::string("id,amount,note\n1,1.00,n\n").size());

  HttpResult all = Call("ada", "GET", "/v1/runs/" + run["id"].get<std::string>() + "/errors",
                        "/v1/runs/{id}/errors");
  ASSERT_EQ(all.status, 200) << all.body;
  EXPECT_EQ(all.Header("content-type"), "application/x-ndjson");
  EXPECT_EQ(all.body.find("lots"), std::string::npos);  // positions and reasons, never values
  std::vector<int64_t> lines;
  size_t at = 0;
  while (at < all.body.size()) {
    const size_t end = all.body.find('\n', at);
    ASSERT_NE(end, std::string::npos) << "a line without its end";
    const json e = json::parse(all.body.substr(at, end - at));
    EXPECT_EQ(e["file"], "inline data");
    lines.push_back(e["line"]);
    at = end + 1;
  }
  std::vector<int64_t> want;
  for (int i : bad) want.push_back(i + 1);
  EXPECT_EQ(lines, want);
  EXPECT_EQ(OrderRows(), 0);
}

TEST_F(RunErrorsHttpTest, MaxErrorsLowersTheCapAndIsItselfChecked) {
  const std::string upload = Upload(pipeline_, Orders({3, 6, 9, 12}));
  const json run =
      Finished(Submit(pipeline_, NewUlidString(),
                      json{{"uploads", {upload}}, {"limits", {{"maxErrors", 2}}}}.dump()));
  EXPECT_EQ(run["state"], "failed") << run.dump();
  EXPECT_NE(run["error"].get<std::string>().find("validation stopped at 2 errors"),
            std::string::npos)
      << run.dump();
  EXPECT_EQ(run["counters"]["errorCount"], 2);

  // Above the server's ceiling (1,000), or below one: refused before a run exists.
  for (const int64_t bad : {int64_t{1001}, int64_t{0}}) {
    const std::string other = Upload(pipeline_, Orders({}));
    HttpResult r = Submit(pipeline_, NewUlidString(),
                          json{{"uploads", {other}}, {"limits", {{"maxErrors", bad}}}}.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.Json()["code"], "invalid_argument") << r.body;
    EXPECT_NE(r.Json()["detail"].get<std::string>().find("maxErrors"), std::string::npos) << r.body;
  }
  HttpResult limits = Call("ada", "GET", "/v1/limits", "/v1/limits");
  EXPECT_EQ(limits.Json()["load"]["maxErrors"], 1000) << limits.body;
  EXPECT_EQ(OrderRows(), 0);
}

TEST_F(RunErrorsHttpTest, ErrorsAreReadLikeTheRun) {
  const json ok = Finished(Inline(Orders({})));
  EXPECT_EQ(ok["state"], "succeeded") << ok.dump();
  const std::string id = ok["id"];
  HttpResult none = Call("ada", "GET", "/v1/runs/" + id + "/errors", "/v1/runs/{id}/errors");
  EXPECT_EQ(none.status, 200) << none.body;
  EXPECT_EQ(none.body, "");
  HttpResult hidden = Call("nobody", "GET", "/v1/runs/" + id + "/errors", "/v1/runs/{id}/errors");
  EXPECT_EQ(hidden.status, 403) << hidden.body;
  EXPECT_EQ(hidden.Json()["code"], "permission_denied");
  HttpResult unknown =
      Call("ada", "GET", "/v1/runs/" + NewUlidString() + "/errors", "/v1/runs/{id}/errors");
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  EXPECT_EQ(unknown.Json()["code"], "not_found");
}

}  // namespace
}  // namespace loam::server
