// Entity tags over real HTTP: every pipeline answer carries ETag, and a
// PATCH or DELETE with a stale If-Match is 412 and changes nothing; a
// table's ETag makes If-None-Match 304 until a commit changes the table.
// Also pausing a pipeline through PATCH, and its CSV format options.

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class PipelineEtagTest : public ServerTest {};

TEST_F(PipelineEtagTest, IfMatchRefusesChangesToAStateThatIsGone) {
  HttpResult created = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                            R"({"name":"e","table":"orders","mode":"upsert","format":"csv"})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id = created.Json()["id"];
  const std::string path = "/v1/pipelines/" + id;
  const std::string first = created.Header("etag");
  ASSERT_EQ(first.size(), 18u) << first;  // a quoted tag
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").Header("etag"), first);

  HttpResult changed = Call("ada", "PATCH", path, "/v1/pipelines/{id}",
                            R"({"errorPolicy":"validationOnly"})", {{"If-Match", first}});
  ASSERT_EQ(changed.status, 200) << changed.body;
  const std::string second = changed.Header("etag");
  EXPECT_NE(second, first);

  HttpResult stale = Call("ada", "PATCH", path, "/v1/pipelines/{id}",
                          R"({"errorPolicy":"failRun"})", {{"If-Match", first}});
  EXPECT_EQ(stale.status, 412) << stale.body;
  EXPECT_EQ(stale.Json()["code"], "precondition_failed");
  EXPECT_NE(stale.Json()["detail"].get<std::string>().find("changed"), std::string::npos);
  HttpResult now = Call("ada", "GET", path, "/v1/pipelines/{id}");
  EXPECT_EQ(now.Json()["errorPolicy"], "validationOnly");  // unchanged by the refusal
  EXPECT_EQ(now.Header("etag"), second);

  HttpResult two =
      Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", first + ", " + second}});
  EXPECT_EQ(two.status, 400) << two.body;
  HttpResult gone = Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", first}});
  EXPECT_EQ(gone.status, 412) << gone.body;
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").status, 200);  // still there
  EXPECT_EQ(Call("ada", "PATCH", path, "/v1/pipelines/{id}", R"({"errorPolicy":"failRun"})",
                 {{"If-Match", "*"}})
                .status,
            200);
  const std::string third = Call("ada", "GET", path, "/v1/pipelines/{id}").Header("etag");
  EXPECT_EQ(Call("ada", "DELETE", path, "/v1/pipelines/{id}", "", {{"If-Match", third}}).status,
            204);
  EXPECT_EQ(Call("ada", "GET", path, "/v1/pipelines/{id}").status, 404);
}

// GET /v1/pipelines and /v1/tables a page at a time: every item once, in
// order, across pages; no limit answers the whole listing.
TEST_F(PipelineEtagTest, ListingsComeAPageAtATime) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                        json{{"name", "p" + std::to_string(i)},
                             {"table", "orders"},
                             {"mode", "upsert"},
                             {"format", "csv"}}
                            .dump());
    ASSERT_EQ(p.status, 201) << p.body;
    ids.push_back(p.Json()["id"]);
  }
  std::vector<std::string> seen;
  std::string cursor;
  int pages = 0;
  do {
    const std::string target =
        "/v1/pipelines?limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor);
    HttpResult page = Call("ada", "GET", target, "/v1/pipelines");
    ASSERT_EQ(page.status, 200) << page.body;
    const json body = page.Json();
    EXPECT_LE(body["pipelines"].size(), 2u);
    for (const json& p : body["pipelines"]) seen.push_back(p["id"]);
    cursor = body["nextCursor"].is_null() ? "" : body["nextCursor"].get<std::string>();
    ASSERT_LT(++pages, 10);
  } while (!cursor.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(seen, ids);  // ULIDs: creation order
  const json whole = Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json();
  EXPECT_EQ(whole["pipelines"].size(), 5u);
  EXPECT_TRUE(whole["nextCursor"].is_null());
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines?limit=0", "/v1/pipelines").status, 400);

  const json tables = Call("ada", "GET", "/v1/tables?limit=1", "/v1/tables").Json();
  ASSERT_EQ(tables["tables"].size(), 1u);
  EXPECT_EQ(tables["tables"][0]["name"], "orders");
  EXPECT_TRUE(tables["nextCursor"].is_null());  // the only table
  const json after = Call("ada", "GET", "/v1/tables?limit=1&cursor=orders", "/v1/tables").Json();
  EXPECT_EQ(after["tables"].size(), 0u);
}

// Pausing through PATCH: new uploads and submissions are 429
// pipeline_paused with Retry-After, an accepted run's replay is answered as
// always, and once resumed the refused request goes through with its key.
TEST_F(PipelineEtagTest, APausedPipelineRefusesNewWorkUntilResumed) {
  HttpResult created = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                            R"({"name":"pz","table":"orders","mode":"upsert","format":"csv"})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["paused"], false);
  const std::string id = created.Json()["id"];
  const std::string path = "/v1/pipelines/" + id;
  const std::string runs = path + "/runs";
  const Headers csv_a = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "pz-a"}};
  const Headers csv_b = {{"Content-Type", "text/csv"}, {"Idempotency-Key", "pz-b"}};
  const std::string row_a = "id,amount,note\n1,1.00,a\n", row_b = "id,amount,note\n2,2.00,b\n";
  HttpResult a = Call("ada", "POST", runs, "/v1/pipelines/{id}/runs", row_a, csv_a);
  ASSERT_EQ(a.status, 202) << a.body;

  HttpResult paused = Call("ada", "PATCH", path, "/v1/pipelines/{id}", R"({"paused":true})",
                           {{"If-Match", created.Header("etag")}});
  ASSERT_EQ(paused.status, 200) << paused.body;
  EXPECT_EQ(paused.Json()["paused"], true);
  EXPECT_EQ(
      Call("rex", "GET", "/v1/pipelines?limit=5", "/v1/pipelines").Json()["pipelines"][0]["paused"],
      true);

  HttpResult b = Call("ada", "POST", runs, "/v1/pipelines/{id}/runs", row_b, csv_b);
  EXPECT_EQ(b.status, 429) << b.body;
  EXPECT_EQ(b.Json()["code"], "pipeline_paused");
  EXPECT_EQ(b.Header("retry-after"), "30");
  EXPECT_NE(b.Json()["detail"].get<std::string>().find("is paused"), std::string::npos);
  HttpResult upload =
      Call("ada", "POST", path + "/uploads", "/v1/pipelines/{id}/uploads", R"({"size":3})");
  EXPECT_EQ(upload.status, 429) << upload.body;
  EXPECT_EQ(upload.Json()["code"], "pipeline_paused");
  HttpResult replay = Call("ada", "POST", runs, "/v1/pipelines/{id}/runs", row_a, csv_a);
  EXPECT_EQ(replay.status, 202) << replay.body;
  EXPECT_EQ(replay.Json()["id"], a.Json()["id"]);
  EXPECT_EQ(replay.Header("idempotency-replayed"), "true");
  // A reader is refused for its grant, not told of the pause.
  HttpResult reader = Call("rex", "POST", runs, "/v1/pipelines/{id}/runs", row_b,
                           {{"Content-Type", "text/csv"}, {"Idempotency-Key", "pz-r"}});
  EXPECT_EQ(reader.status, 403) << reader.body;
  HttpResult bad = Call("ada", "PATCH", path, "/v1/pipelines/{id}", R"({"paused":"yes"})");
  EXPECT_EQ(bad.status, 400) << bad.body;

  HttpResult resumed = Call("ada", "PATCH", path, "/v1/pipelines/{id}", R"({"paused":false})");
  ASSERT_EQ(resumed.status, 200) << resumed.body;
  EXPECT_EQ(resumed.Json()["paused"], false);
  HttpResult again = Call("ada", "POST", runs, "/v1/pipelines/{id}/runs", row_b, csv_b);
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_NE(again.Header("idempotency-replayed"), "true");  // the refusal created nothing
  for (const HttpResult* r : {&a, &again}) {
    const std::string run = r->Json()["id"];
    HttpResult done = Call("ada", "GET", "/v1/runs/" + run + "?wait=30", "/v1/runs/{id}");
    EXPECT_EQ(done.Json()["state"], "succeeded") << done.body;
  }
}

// A table's ETag: If-None-Match naming it is 304 until a commit changes the
// table (a load, a grant).
TEST_F(PipelineEtagTest, ATablesEtagChangesWithEveryCommitThatChangesIt) {
  const auto get = [&](const std::string& if_none) {
    Headers h;
    if (!if_none.empty()) h.emplace_back("If-None-Match", if_none);
    return Call("rex", "GET", "/v1/tables/orders", "/v1/tables/{name}", "", h);
  };
  HttpResult first = get("");
  ASSERT_EQ(first.status, 200) << first.body;
  const std::string tag = first.Header("etag");
  ASSERT_GT(tag.size(), 2u);
  HttpResult same = get(tag);
  EXPECT_EQ(same.status, 304);
  EXPECT_EQ(same.body, "");
  EXPECT_EQ(same.Header("etag"), tag);

  HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                      R"({"name":"tag","table":"orders","format":"csv"})");
  ASSERT_EQ(p.status, 201) << p.body;
  HttpResult run =
      Call("ada", "POST", "/v1/pipelines/" + p.Json()["id"].get<std::string>() + "/runs",
           "/v1/pipelines/{id}/runs", "id,amount,note\n7,1.00,x\n",
           {{"Content-Type", "text/csv"}, {"Idempotency-Key", "tag-1"}});
  ASSERT_EQ(run.status, 202) << run.body;
  HttpResult done =
      Call("ada", "GET", "/v1/runs/" + run.Json()["id"].get<std::string>() + "?wait=30",
           "/v1/runs/{id}");
  ASSERT_EQ(done.Json()["state"], "succeeded") << done.body;
  HttpResult loaded = get(tag);
  ASSERT_EQ(loaded.status, 200);
  EXPECT_EQ(loaded.Json()["rowCount"], 1);
  const std::string after_load = loaded.Header("etag");
  EXPECT_NE(after_load, tag);

  ASSERT_TRUE(ws_->SetGrant("orders", "bob", Role::kReader).ok());
  HttpResult granted = get(after_load);
  EXPECT_EQ(granted.status, 200);
  EXPECT_NE(granted.Header("etag"), after_load);
}

// A grant change with If-Match: only from the table's state the tag names,
// checked inside the grant's commit (412, nothing changed, otherwise).
TEST_F(PipelineEtagTest, AGrantChangesOnlyFromTheTableStateItsIfMatchNames) {
  const std::string table = "/v1/tables/orders";
  const std::string bob = table + "/grants/bob";
  const char* pattern = "/v1/tables/{name}/grants/{principal}";
  const std::string tag = Call("owner", "GET", table, "/v1/tables/{name}").Header("etag");
  ASSERT_GT(tag.size(), 2u);
  auto with = [&](const std::string& if_match) {
    Headers h = {{"Content-Type", "application/json"}};
    h.emplace_back("If-Match", if_match);
    return h;
  };
  HttpResult granted = Call("owner", "PUT", bob, pattern, R"({"role":"reader"})", with(tag));
  ASSERT_EQ(granted.status, 200) << granted.body;
  // The same tag again names a state that is gone.
  HttpResult stale = Call("owner", "PUT", bob, pattern, R"({"role":"admin"})", with(tag));
  EXPECT_EQ(stale.status, 412) << stale.body;
  EXPECT_EQ(stale.Json()["code"], "precondition_failed");
  EXPECT_NE(stale.Json()["detail"].get<std::string>().find("changed"), std::string::npos);
  EXPECT_EQ(Call("owner", "DELETE", bob, pattern, "", with(tag)).status, 412);
  EXPECT_EQ(Call("owner", "PUT", bob, pattern, R"({"role":"admin"})", with("\"nope\"")).status,
            412);
  HttpResult now = Call("owner", "GET", table, "/v1/tables/{name}");
  bool bob_reads = false;
  const json body = now.Json();
  for (const json& g : body["grants"]) {
    if (g["principal"] == "bob") bob_reads = g["role"] == "reader";
  }
  EXPECT_TRUE(bob_reads) << now.body;  // unchanged by the refusals
  EXPECT_EQ(Call("owner", "DELETE", bob, pattern, "", with(now.Header("etag"))).status, 204);
  EXPECT_EQ(Call("owner", "PUT", bob, pattern, R"({"role":"reader"})", with("*")).status, 200);
}

// CSV options through a pipeline: a file without a header, with a preamble,
// comments, another quote and a null marker loads; options that cannot be
// are refused (400) and no pipeline is created.
TEST_F(PipelineEtagTest, CsvFormatOptionsLoadAFileWrittenOtherwise) {
  config_.workers = 0;
  const json options = {{"csvDelimiter", ";"},    {"csvQuote", "'"},
                        {"csvHeader", false},     {"csvColumns", {"id", "amount", "note"}},
                        {"csvNullMarker", "NA"},  {"csvSkipLines", 1},
                        {"csvCommentPrefix", "#"}};
  const json spec = {{"name", "export"},
                     {"table", "orders"},
                     {"mode", "append"},
                     {"format", "csv"},
                     {"formatOptions", options}};
  HttpResult created = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines", spec.dump());
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["formatOptions"], options);
  const std::string id = created.Json()["id"];
  const std::string upload = Upload(id, "exported 2026-12-06\n1;1.50;'a; b'\n# a note\n2;NA;NA\n");
  HttpResult run = Submit(id, "csv-options", json{{"uploads", {upload}}}.dump());
  ASSERT_EQ(run.status, 202) << run.body;
  while (Srv().service().RunWorkerOnce().value()) {
  }
  HttpResult done =
      Call("ada", "GET", "/v1/runs/" + run.Json()["id"].get<std::string>(), "/v1/runs/{id}");
  EXPECT_EQ(done.Json()["state"], "succeeded") << done.body;
  EXPECT_EQ(done.Json()["counters"]["inserted"], 2) << done.body;
  const Snapshot snap = ws_->Current().value();
  const RecordBatch rows = ws_->OpenTable(snap, "orders").value().ReadAll().value();
  ASSERT_EQ(rows.num_rows(), 2);
  const int64_t first = rows.columns[0].GetInt64(0) == 1 ? 0 : 1;
  EXPECT_EQ(rows.columns[2].GetBytes(first), "a; b");
  EXPECT_TRUE(rows.columns[1].IsNull(1 - first));  // NA unquoted: missing
  EXPECT_TRUE(rows.columns[2].IsNull(1 - first));

  struct Bad {
    json format_options;
    std::string format, message;
  };
  const std::vector<Bad> bad = {
      {{{"csvHeader", false}}, "csv", "an input without a header needs its columns named"},
      {{{"csvDelimiter", ";"}, {"csvQuote", ";"}}, "csv", "the quote must be one printable"},
      {{{"csvSkipLines", "1"}}, "csv", "\"csvSkipLines\" must be an integer"},
      {{{"csvEscape", "\\"}}, "csv", "unknown field 'csvEscape'"},
      {{{"csvNullMarker", "NA"}}, "jsonl", "the CSV options are for format \"csv\" only"},
  };
  for (const Bad& b : bad) {
    const json body = {{"name", "bad"},
                       {"table", "orders"},
                       {"format", b.format},
                       {"formatOptions", b.format_options}};
    HttpResult r = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines", body.dump());
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_NE(r.Json().value("detail", "").find(b.message), std::string::npos)
        << b.message << ": " << r.body;
  }
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json()["pipelines"].size(), 1u);
}

// A pipeline's schema policy maps input columns to table columns of other
// names; a map that cannot be is refused (400) at creation.
TEST_F(PipelineEtagTest, AColumnMapLoadsInputColumnsOfOtherNames) {
  config_.workers = 0;
  const json policy = {{"mode", "strict"},
                       {"coercions", json::array()},
                       {"columnMap",
                        {{{"sourceColumn", "Order ID"}, {"targetColumn", "id"}},
                         {{"sourceColumn", "Total"}, {"targetColumn", "amount"}}}}};
  HttpResult created = Call(
      "ada", "POST", "/v1/pipelines", "/v1/pipelines",
      json{{"name", "mapped"}, {"table", "orders"}, {"format", "csv"}, {"schemaPolicy", policy}}
          .dump());
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.Json()["schemaPolicy"], policy);
  const std::string id = created.Json()["id"];
  const std::string upload = Upload(id, "Order ID,Total,note\n5,2.50,x\n");
  ASSERT_EQ(Submit(id, "mapped-1", json{{"uploads", {upload}}}.dump()).status, 202);
  while (Srv().service().RunWorkerOnce().value()) {
  }
  const RecordBatch rows =
      ws_->OpenTable(ws_->Current().value(), "orders").value().ReadAll().value();
  ASSERT_EQ(rows.num_rows(), 1);
  EXPECT_EQ(rows.columns[0].GetInt64(0), 5);
  EXPECT_EQ(rows.columns[1].GetInt128(0).lo, 250u);

  json bad = policy;
  bad["columnMap"][1]["targetColumn"] = "id";
  HttpResult refused =
      Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
           json{{"name", "twice"}, {"table", "orders"}, {"format", "csv"}, {"schemaPolicy", bad}}
               .dump());
  EXPECT_EQ(refused.status, 400) << refused.body;
  EXPECT_EQ(refused.Json()["detail"],
            "column map: 'Order ID' and 'Total' both map to column 'id'; map one of them");
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json()["pipelines"].size(), 1u);
}

}  // namespace
}  // namespace loam::server
