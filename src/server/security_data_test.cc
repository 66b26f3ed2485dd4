// Hostile data through the server: every load limit of docs/ingest.md that
// HTTP can reach (lowered per pipeline), a gzip bomb, invalid UTF-8, and
// CSV / JSON Lines edge cases. A refused run leaves the table as it was and
// no staging object once it is terminal.
#include <zlib.h>

#include "server/security_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

std::string Gzip(const std::string& data) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, data.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The rows of a JSON Lines answer, parsed.
std::vector<json> ParseLines(const std::string& body) {
  std::vector<json> out;
  for (size_t at = 0; at < body.size();) {
    const size_t end = std::min(body.find('\n', at), body.size());
    out.push_back(json::parse(body.substr(at, end - at), nullptr, false));
    at = end + 1;
  }
  return out;
}

class SecurityDataTest : public SecurityTest {
 protected:
  void SetUp() override {
    SecurityTest::SetUp();
    Schema docs{{{"id", DataType::Int64(), false}, {"doc", DataType::Json()}}};
    ASSERT_TRUE(ws_->CreateTable("docs", docs, {"id"}).ok());
    Schema events{{{"id", DataType::Int64(), false}, {"note", DataType::String()}}};
    ASSERT_TRUE(ws_->CreateTable("events", events, {}).ok());
    std::vector<Field> wide;
    for (int i = 0; i < 20; ++i) wide.push_back({"c" + std::to_string(i), DataType::String()});
    ASSERT_TRUE(ws_->CreateTable("wide", Schema{wide}, {}).ok());
    for (const char* t : {"docs", "events", "wide"}) {
      ASSERT_TRUE(ws_->SetGrant(t, "ada", Role::kWriter).ok());
    }
  }

  // A pipeline named `name` into `table` with `limits`.
  std::string LimitedPipeline(const std::string& name, const std::string& table,
                              const std::string& format, const json& limits,
                              const std::string& mode = "append") {
    json spec = {{"name", name}, {"table", table}, {"mode", mode}, {"format", format}};
    if (!limits.empty()) spec["limits"] = limits;
    return MakePipeline(spec.dump());
  }

  // One row in `table` first, so "unchanged" is a version with data.
  void Seed(const std::string& table, const std::string& format, const std::string& data) {
    const std::string p = LimitedPipeline("seed-" + table + "-" + format, table, format, {});
    ASSERT_EQ(LoadInline(p, "seed-" + table + format, data,
                         format == "csv" ? "text/csv" : "application/x-ndjson")["state"],
              "succeeded");
  }

  // `data` through pipeline `p` fails its run with `code` (the message
  // holding `fragment`), leaves `table` as it was and nothing staged.
  void ExpectRefusedRun(const std::string& why, const std::string& table, const std::string& p,
                        const std::string& data, const std::string& type, const std::string& code,
                        const std::string& fragment) {
    const auto before = TableState(table);
    HttpResult r = SubmitInline(p, "refused-" + why, data, type);
    ASSERT_EQ(r.status, 202) << why << ": " << r.body;
    const json run = WaitRun(r.Json()["id"]);
    EXPECT_EQ(run["state"], "failed") << why << ": " << run.dump();
    EXPECT_EQ(run.value("errorCode", ""), code) << why << ": " << run.dump();
    EXPECT_NE(run.value("error", "").find(fragment), std::string::npos)
        << why << ": " << run.value("error", "");
    EXPECT_EQ(TableState(table), before) << why;
    EXPECT_EQ(LeftBehind(), std::set<std::string>()) << why;
  }
};

TEST_F(SecurityDataTest, EveryLoadLimitFailsTheRunAndChangesNothing) {
  Seed("orders", "csv", "id,amount,note\n100,1.00,seed\n");
  Seed("docs", "jsonl", "{\"id\":100,\"doc\":{\"a\":1}}\n");
  Seed("wide", "csv", "c0\nseed\n");
  struct Case {
    std::string why, table, format, data, fragment;
    json limits;
  };
  const std::string long_note(100, 'n');
  std::string wide_header, wide_row, wide_unquoted;
  for (int i = 0; i < 20; ++i) {
    wide_header += (i ? "," : "") + ("c" + std::to_string(i));
    wide_row += (i ? ",\"" : "\"") + std::string(15, 'w') + "\"";
    wide_unquoted += (i ? "," : "") + std::string(15, 'w');
  }
  const std::vector<Case> cases = {
      {"columns-csv",
       "orders",
       "csv",
       "id,amount,note\n1,1.00,a\n",
       "limit of 2 columns",
       {{"maxColumns", 2}}},
      {"columns-jsonl",
       "orders",
       "jsonl",
       "{\"id\":1,\"amount\":1.00,\"note\":\"a\"}\n",
       "2",
       {{"maxColumns", 2}}},
      {"field-csv",
       "orders",
       "csv",
       "id,amount,note\n1,1.00," + long_note + "\n",
       "longer than",
       {{"maxFieldBytes", 16}}},
      {"field-jsonl",
       "orders",
       "jsonl",
       "{\"id\":1,\"note\":\"" + long_note + "\"}\n",
       "longer than",
       {{"maxFieldBytes", 16}}},
      {"record-csv",
       "wide",
       "csv",
       wide_header + "\n" + wide_row + "\n",
       "longer than the limit",
       {{"maxFieldBytes", 16}}},
      {"record-csv-unquoted",
       "wide",
       "csv",
       wide_header + "\n" + wide_unquoted + "\n",
       "longer than the limit",
       {{"maxFieldBytes", 16}}},
      {"record-jsonl",
       "orders",
       "jsonl",
       "{\"id\":1," + std::string(300, ' ') + "\"note\":\"a\"}\n",
       "longer than 256 bytes",
       {{"maxFieldBytes", 16}}},
      {"depth-csv",
       "docs",
       "csv",
       "id,doc\n1,\"[[[[[1]]]]]\"\n",
       "deeper than 3",
       {{"maxJsonDepth", 3}}},
      {"depth-jsonl",
       "docs",
       "jsonl",
       "{\"id\":1,\"doc\":[[[[[1]]]]]}\n",
       "deeper than 3",
       {{"maxJsonDepth", 3}}},
      {"rows-csv",
       "orders",
       "csv",
       "id,amount,note\n1,1.00,a\n2,1.00,b\n3,1.00,c\n",
       "more than 2 rows",
       {{"maxRows", 2}}},
      {"rows-jsonl",
       "orders",
       "jsonl",
       "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n",
       "more than 2 rows",
       {{"maxRows", 2}}},
      {"decoded-csv",
       "orders",
       "csv",
       "id,amount,note\n1,1.00," + long_note + "\n",
       "decodes to more than the limit of 64 bytes",
       {{"maxDecodedBytes", 64}}},
  };
  for (const Case& c : cases) {
    const std::string p = LimitedPipeline(c.why, c.table, c.format, c.limits);
    ExpectRefusedRun(c.why, c.table, p, c.data,
                     c.format == "csv" ? "text/csv" : "application/x-ndjson", "limit_exceeded",
                     c.fragment);
  }
  // The uploads of a run over maxRunBytes: refused at submission, no run.
  const std::string small = LimitedPipeline("run-bytes", "orders", "csv", {{"maxRunBytes", 10}});
  HttpResult over = SubmitInline(small, "run-bytes", "id,amount,note\n1,1.00,a\n");
  EXPECT_TRUE(IsClientProblem(over)) << over.status;
  EXPECT_EQ(over.Json()["code"], "limit_exceeded") << over.body;
  EXPECT_EQ(Call("ada", "GET", "/v1/runs?pipeline=" + small, "/v1/runs").Json()["runs"].size(), 0u);
  EXPECT_EQ(LeftBehind(), std::set<std::string>());
}

// Parsing over the time budget (1 ms for 150,000 rows, checked per batch).
TEST_F(SecurityDataTest, TimeBudgetFailsTheRun) {
  const std::string p = LimitedPipeline("slow", "events", "csv", {{"timeBudgetMs", 1}});
  std::string csv = "id,note\n";
  for (int i = 0; i < 150000; ++i) csv += std::to_string(i) + "," + std::string(40, 'n') + "\n";
  const auto before = TableState("events");
  const std::string upload = Upload(p, csv);
  HttpResult r = Submit(p, "slow", json{{"uploads", {upload}}}.dump());
  ASSERT_EQ(r.status, 202) << r.body;
  const json run = WaitRun(r.Json()["id"]);
  EXPECT_EQ(run["state"], "failed") << run.dump();
  EXPECT_EQ(run.value("errorCode", ""), "limit_exceeded");
  EXPECT_NE(run.value("error", "").find("time budget of 1 ms"), std::string::npos) << run.dump();
  EXPECT_EQ(TableState("events"), before);
  EXPECT_EQ(LeftBehind(), std::set<std::string>());
}

// A few KiB of gzip that inflate to 8 MiB trip the expansion ratio (default
// 200x, checked after 1 MiB) or a lower decoded-bytes limit; a genuine
// gzip upload loads.
TEST_F(SecurityDataTest, GzipBombsFailTheRun) {
  std::string rows = "id,note\n";
  while (rows.size() < (8u << 20)) rows += "1,a\n";
  const std::string bomb = Gzip(rows);
  ASSERT_LT(bomb.size(), 64u << 10);
  const std::string p = LimitedPipeline("gz", "events", "csv", {});
  const auto before = TableState("events");
  const auto load = [&](const std::string& pipeline, const std::string& key,
                        const std::string& data) {
    HttpResult r = Submit(pipeline, key, json{{"uploads", {Upload(pipeline, data)}}}.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return WaitRun(r.Json().value("id", "none"));
  };
  const json ratio = load(p, "bomb", bomb);
  EXPECT_EQ(ratio["state"], "failed") << ratio.dump();
  EXPECT_EQ(ratio.value("errorCode", ""), "limit_exceeded");
  EXPECT_NE(ratio.value("error", "").find("expands more than 200x"), std::string::npos)
      << ratio.dump();
  const std::string capped =
      LimitedPipeline("gz-capped", "events", "csv", {{"maxDecodedBytes", 512 << 10}});
  const json decoded = load(capped, "bomb-2", bomb);
  EXPECT_EQ(decoded["state"], "failed") << decoded.dump();
  EXPECT_EQ(decoded.value("errorCode", ""), "limit_exceeded");
  EXPECT_NE(decoded.value("error", "").find("decodes to more than"), std::string::npos);
  EXPECT_EQ(TableState("events"), before);
  EXPECT_EQ(LeftBehind(), std::set<std::string>());
  const json fine = load(p, "genuine", Gzip("id,note\n1,a\n2,b\n"));
  EXPECT_EQ(fine["state"], "succeeded") << fine.dump();
  EXPECT_EQ(TableState("events").second, 2);
}

TEST_F(SecurityDataTest, InvalidUtf8FailsValidation) {
  Seed("orders", "csv", "id,amount,note\n100,1.00,seed\n");
  const std::string csv = LimitedPipeline("utf8-csv", "orders", "csv", {});
  const std::string jsonl = LimitedPipeline("utf8-jsonl", "orders", "jsonl", {});
  ExpectRefusedRun("utf8-csv-value", "orders", csv, "id,amount,note\n1,1.00,a\xff\xfe\n",
                   "text/csv", "validation_failed", "UTF-8");
  ExpectRefusedRun("utf8-csv-overlong", "orders", csv, "id,amount,note\n1,1.00,\xc0\xaf\n",
                   "text/csv", "validation_failed", "UTF-8");
  ExpectRefusedRun("utf8-jsonl-value", "orders", jsonl, "{\"id\":1,\"note\":\"a\xff\"}\n",
                   "application/x-ndjson", "validation_failed", "UTF-8");
  ExpectRefusedRun("utf8-jsonl-surrogate", "orders", jsonl,
                   "{\"id\":1,\"note\":\"\xed\xa0\x80\"}\n", "application/x-ndjson",
                   "validation_failed", "UTF-8");
  // A column name with invalid UTF-8 is quoted in the run's error: the run
  // record replaces the bytes (it once threw on the worker thread and ended
  // the server).
  ExpectRefusedRun("utf8-csv-header", "orders", csv, "id,amount,no\xfft\n1,1.00,a\n", "text/csv",
                   "validation_failed", "");
  ExpectRefusedRun("utf8-jsonl-key", "orders", jsonl, "{\"id\":1,\"no\xfe\":\"a\"}\n",
                   "application/x-ndjson", "validation_failed", "");
  EXPECT_EQ(Rows(), "{\"id\":100,\"amount\":1.00,\"note\":\"seed\"}\n");
}

// Small inline data travels in the run record: the run names no upload, its
// errors call the data "inline data" with the line, and nothing is staged.
TEST_F(SecurityDataTest, SmallInlineDataTravelsInTheRunRecord) {
  Seed("orders", "csv", "id,amount,note\n100,1.00,seed\n");
  const std::string p = LimitedPipeline("record-inline", "orders", "csv", {});
  ExpectRefusedRun("record-bad-row", "orders", p, "id,amount,note\n1,1.00,a\n2,x,b\n", "text/csv",
                   "validation_failed", "inline data: line 3");
  HttpResult ok = SubmitInline(p, "record-good", "id,amount,note\n1,1.00,a\n");
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_TRUE(Keys("ingestion-staging/").empty());
  const json run = WaitRun(ok.Json()["id"]);
  EXPECT_EQ(run["state"], "succeeded") << run.dump();
  EXPECT_EQ(run["uploads"], json::array()) << run.dump();
  EXPECT_EQ(run["inputBytes"], 24) << run.dump();
  EXPECT_EQ(Rows(),
            "{\"id\":100,\"amount\":1.00,\"note\":\"seed\"}\n"
            "{\"id\":1,\"amount\":1.00,\"note\":\"a\"}\n");
  EXPECT_EQ(LeftBehind(), std::set<std::string>());
}

// A json value is one RFC 8259 document, whatever its numbers: 1e400 and a
// 5,000-digit integer load through JSON Lines and CSV alike and read back as
// sent (the page writer once refused what the loader accepted, failing the
// run without a position while its counters claimed an inserted row).
TEST_F(SecurityDataTest, JsonValuesWithHugeNumbersLoadAsSent) {
  const std::string digits(5000, '7');
  const std::string jsonl = LimitedPipeline("huge-jsonl", "docs", "jsonl", {});
  const json a = LoadInline(jsonl, "huge-jsonl",
                            "{\"id\":1,\"doc\":1e400}\n{\"id\":2,\"doc\":{\"n\":" + digits + "}}\n",
                            "application/x-ndjson");
  EXPECT_EQ(a["state"], "succeeded") << a.dump();
  EXPECT_EQ(a["counters"]["inserted"], 2) << a.dump();
  const std::string csv = LimitedPipeline("huge-csv", "docs", "csv", {});
  const json b = LoadInline(csv, "huge-csv", "id,doc\n3,-1E+400\n");
  EXPECT_EQ(b["state"], "succeeded") << b.dump();
  const std::string rows = Rows("docs");
  EXPECT_NE(rows.find("{\"id\":1,\"doc\":1e400}"), std::string::npos) << rows.substr(0, 200);
  EXPECT_NE(rows.find("{\"n\":" + digits + "}"), std::string::npos);
  EXPECT_NE(rows.find("{\"id\":3,\"doc\":-1E+400}"), std::string::npos) << rows.substr(0, 200);
}

// Edge cases loaded by a replace pipeline: each success is the whole table.
TEST_F(SecurityDataTest, CsvAndJsonLinesEdgeCasesLoadAsDocumented) {
  ASSERT_TRUE(ws_->SetGrant("orders", "ada", Role::kAdmin).ok());  // replace needs admin
  const std::string csv = LimitedPipeline("edge-csv", "orders", "csv", {}, "replace");
  const std::string jsonl = LimitedPipeline("edge-jsonl", "orders", "jsonl", {}, "replace");
  struct Case {
    std::string why, pipeline, data;
    std::vector<std::string> rows;  // expected JSON rows; empty + fails = refused
    bool fails = false;
  };
  const std::vector<Case> cases = {
      {"quoted newline and delimiter",
       csv,
       "id,amount,note\n1,1.00,\"line1\nline2\"\n2,2.00,\"a,b\"\"c\"\n",
       {R"({"id":1,"amount":1.00,"note":"line1\nline2"})",
        R"({"id":2,"amount":2.00,"note":"a,b\"c"})"}},
      {"byte-order mark",
       csv,
       "\xEF\xBB\xBFid,amount,note\n3,3.00,c\n",
       {R"({"id":3,"amount":3.00,"note":"c"})"}},
      {"CRLF",
       csv,
       "id,amount,note\r\n4,4.00,d\r\n5,5.00,\"e\r\nf\"\r\n",
       {R"({"id":4,"amount":4.00,"note":"d"})", R"({"id":5,"amount":5.00,"note":"e\r\nf"})"}},
      {"no final newline",
       csv,
       "id,amount,note\n7,7.00,h",
       {R"({"id":7,"amount":7.00,"note":"h"})"}},
      {"empty and quoted empty",
       csv,
       "id,amount,note\n8,,\"\"\n",
       {R"({"id":8,"amount":null,"note":""})"}},
      {"trailing delimiter", csv, "id,amount,note\n6,6.00,g,\n", {}, true},
      {"trailing delimiter in header", csv, "id,amount,note,\n6,6.00,g\n", {}, true},
      {"empty file", csv, "", {}, true},
      {"unclosed quote", csv, "id,amount,note\n9,9.00,\"open\n", {}, true},
      {"header only", csv, "id,amount,note\n", {}},
      {"JSONL CRLF and blank lines",
       jsonl,
       "{\"id\":1,\"note\":\"a\\nb\"}\r\n\r\n\n{\"id\":2,\"amount\":2.50}\r\n",
       {R"({"id":1,"amount":null,"note":"a\nb"})", R"({"id":2,"amount":2.50,"note":null})"}},
      {"JSONL byte-order mark",
       jsonl,
       "\xEF\xBB\xBF{\"id\":3}\n",
       {R"({"id":3,"amount":null,"note":null})"}},
      {"JSONL byte-order mark after the start",
       jsonl,
       "{\"id\":3}\n\xEF\xBB\xBF{\"id\":4}\n",
       {},
       true},
      {"JSONL no final newline", jsonl, "{\"id\":3}", {R"({"id":3,"amount":null,"note":null})"}},
      {"JSONL trailing content", jsonl, "{\"id\":4} {\"id\":5}\n", {}, true},
      {"JSONL duplicate key", jsonl, "{\"id\":4,\"id\":5}\n", {}, true},
      {"JSONL unknown key", jsonl, "{\"id\":4,\"extra\":1}\n", {}, true},
      {"JSONL raw newline in string", jsonl, "{\"id\":4,\"note\":\"a\nb\"}\n", {}, true},
      {"JSONL NUL", jsonl, std::string("{\"id\":4,\"note\":\"a\0b\"}\n", 22), {}, true},
      {"JSONL not an object", jsonl, "[1,2]\n", {}, true},
      {"JSONL empty file", jsonl, "", {}},  // no lines: no rows
  };
  int n = 0;
  for (const Case& c : cases) {
    const auto before = TableState();
    const std::string rows_before = Rows();
    const std::string type = c.pipeline == csv ? "text/csv" : "application/x-ndjson";
    HttpResult r = SubmitInline(c.pipeline, "edge-" + std::to_string(n++), c.data, type);
    if (r.status != 202) {
      // Refused before a run exists (an empty body): only failures may be.
      EXPECT_TRUE(c.fails) << c.why << ": " << r.body;
      EXPECT_TRUE(IsClientProblem(r)) << c.why;
      EXPECT_EQ(TableState(), before) << c.why;
      continue;
    }
    const json run = WaitRun(r.Json()["id"]);
    if (c.fails) {
      EXPECT_EQ(run["state"], "failed") << c.why << ": " << run.dump();
      EXPECT_EQ(run.value("errorCode", ""), "validation_failed") << c.why << ": " << run.dump();
      EXPECT_EQ(TableState(), before) << c.why;
      EXPECT_EQ(Rows(), rows_before) << c.why;
      continue;
    }
    EXPECT_EQ(run["state"], "succeeded") << c.why << ": " << run.dump();
    std::vector<json> want;
    for (const std::string& row : c.rows) want.push_back(json::parse(row));
    EXPECT_EQ(ParseLines(Rows()), want) << c.why;
  }
  EXPECT_EQ(LeftBehind(), std::set<std::string>());
}

}  // namespace
}  // namespace loam::server
