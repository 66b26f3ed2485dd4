// End-to-end tests of the `loam` command: every command, exit codes, and the
// malformed-input corpus (each fails with its message, tables unchanged).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>

#include "cli/cli_test_util.h"
#include "common/ulid.h"
#include "ingest/compress_test_util.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

TEST_F(CliTest, InitMintsAWorkspaceIdThatInfoShows) {
  const std::string other = dir_ + "/second";
  CliResult made = Ok({"init", other, "--json"});
  const std::string id = json::parse(made.out).at("workspaceId");
  EXPECT_TRUE(Ulid::Parse(id).ok()) << made.out;
  CliResult info = Ok({"info", "--root", other, "--json"});
  json j = json::parse(info.out);
  EXPECT_EQ(j.at("workspaceId"), id);
  EXPECT_EQ(j.at("branchCount"), 1);
  // 9: tombstone levels, a head directory that Loams from before the format
  // stamp (which read up to 7) refuse rather than serve.
  EXPECT_EQ(j.at("manifestFormat").get<int>(), 9);
  // Each workspace has its own id; the text form says it too.
  CliResult mine = Ok({"info"});
  EXPECT_NE(mine.out.find("workspace id"), std::string::npos) << mine.out;
  EXPECT_EQ(mine.out.find(id), std::string::npos);
  EXPECT_EQ(Run({"info", "--root", dir_ + "/nothing-here"}).code, 4);
}

// `loam --version` names the release, the commit it was built from and the
// formats it reads and writes, with or without a workspace.
TEST_F(CliTest, VersionNamesTheReleaseTheCommitAndTheFormats) {
  CliResult v = Ok({"--version"});
  EXPECT_TRUE(std::regex_search(
      v.out, std::regex(R"(^loam \d+\.\d+\.\d+ \(commit ([0-9a-f]{12}|unknown)\)\n)")))
      << v.out;
  for (const char* line :
       {"workspace format 5 (format 4 and unstamped heads: 'loam migrate')",
        "head directory format 9, reads 5 to 9", "version file format 2, reads 1 to 2",
        "fragment format 1, reads 1", "deletion file format 2, reads 1 to 2"}) {
    EXPECT_NE(v.out.find(line), std::string::npos) << line << "\n" << v.out;
  }
  EXPECT_EQ(Ok({"--root", dir_ + "/nothing-here", "--version"}).out, v.out);
}

TEST_F(CliTest, AdditiveSchemaIsAnAdminSettingAndNeverACliLoad) {
  CliResult stranger = Run({"table", "additive", "events", "on"}, {{"LOAM_PRINCIPAL", "eve"}});
  EXPECT_EQ(stranger.code, 5) << stranger.all();
  EXPECT_EQ(Run({"table", "additive", "events", "maybe"}).code, 2);
  CliResult on = Ok({"table", "additive", "events", "on", "--json"});
  EXPECT_EQ(json::parse(on.out).at("additiveSchema"), true);
  CliResult history = Ok({"history", "events", "--json"});
  EXPECT_NE(history.out.find("loam:additive-schema"), std::string::npos) << history.out;
  File("policy.json", R"({"mode":"additive","addColumns":[{"name":"extra","type":"string"}]})");
  File("x.csv", "id,name,amount,at,tags,extra\n1,a,1.00,,,x\n");
  const auto before = TreeExceptRuns(ws());
  CliResult load = Run({"load", "events", "x.csv", "--schema-policy", "policy.json"});
  EXPECT_EQ(load.code, 5) << load.all();
  EXPECT_NE(load.all().find("service pipeline"), std::string::npos) << load.all();
  EXPECT_EQ(TreeExceptRuns(ws()), before);
}

TEST_F(CliTest, LoadScanAndEveryReadCommand) {
  File("a.csv",
       "id,name,amount,at,tags\n"
       "1,ann,1.50,2026-11-30T00:00:00Z,\"[\"\"x\"\"]\"\n"
       "2,\"b,ob\",2.00,,\n"
       "3,\"\",,2026-11-30T01:02:03.5Z,{}\n");
  CliResult load = Ok({"load", "events", "a.csv"});
  EXPECT_NE(load.out.find("succeeded"), std::string::npos) << load.out;
  EXPECT_NE(load.out.find("inserted 3"), std::string::npos) << load.out;

  File("u.jsonl",
       "{\"id\":2,\"name\":\"b,ob\",\"amount\":2.00}\n{\"id\":3,\"name\":\"cy\"}\n{\"id\":4,"
       "\"name\":\"dee\",\"tags\":[1,{\"k\":null}]}\n");
  CliResult up = Ok({"load", "events", "u.jsonl", "--mode", "upsert", "--json"});
  json run = json::parse(up.out);
  EXPECT_EQ(run["state"], "succeeded");
  EXPECT_EQ(run["counters"]["inserted"], 1);
  EXPECT_EQ(run["counters"]["updated"], 1);
  EXPECT_EQ(run["counters"]["unchanged"], 1);
  const std::string run_id = run["id"];

  EXPECT_EQ(Ok({"count", "events"}).out, "4\n");
  CliResult scan = Ok({"scan", "events", "--where", "id >= 3", "--columns", "id,name"});
  EXPECT_NE(scan.out.find("id  name"), std::string::npos) << scan.out;
  EXPECT_NE(scan.out.find("(2 rows)"), std::string::npos) << scan.out;
  EXPECT_EQ(
      Ok({"scan", "events", "--where", "name = 'b,ob'", "--format", "csv", "--columns", "id"}).out,
      "id\n2\n");
  EXPECT_EQ(Ok({"scan", "events", "--limit", "1", "--format", "jsonl", "--columns", "id,tags"}).out,
            "{\"id\":1,\"tags\":[\"x\"]}\n");
  EXPECT_EQ(
      Ok({"scan", "events", "--where", "at is null", "--format", "csv", "--columns", "id"}).out,
      "id\n2\n3\n4\n");
  CliResult get = Ok({"get", "events", "4"});
  EXPECT_NE(get.out.find("dee"), std::string::npos);
  EXPECT_EQ(Run({"get", "events", "99"}).code, 4);

  // Export, load into a twin table, export again: identical.
  Ok({"export", "events", "--format", "csv", "--output", "out.csv"});
  Ok({"export", "events", "--format", "jsonl", "--output", "out.jsonl"});
  Ok({"table", "create", "twin", "--column", "id:int64:not-null", "--column", "name:string",
      "--column", "amount:decimal(10,2)", "--column", "at:timestamp", "--column", "tags:json",
      "--key", "id"});
  Ok({"load", "twin", "out.csv"});
  Ok({"export", "twin", "--format", "csv", "--output", "twin.csv"});
  EXPECT_EQ(Slurp(dir_ + "/twin.csv"), Slurp(dir_ + "/out.csv"));
  Ok({"load", "twin", "out.jsonl", "--mode", "replace"});
  Ok({"export", "twin", "--format", "jsonl", "--output", "twin.jsonl"});
  EXPECT_EQ(Slurp(dir_ + "/twin.jsonl"), Slurp(dir_ + "/out.jsonl"));
  EXPECT_NE(Slurp(dir_ + "/out.csv").find("1,ann,1.50,2026-11-30T00:00:00Z,\"[\"\"x\"\"]\""),
            std::string::npos)
      << Slurp(dir_ + "/out.csv");

  // Runs.
  CliResult runs = Ok({"runs", "list", "--table", "events"});
  EXPECT_NE(runs.out.find(run_id), std::string::npos);
  EXPECT_EQ(json::parse(Ok({"runs", "list", "--json"}).out).size(), 4u);
  CliResult show = Ok({"runs", "show", run_id});
  EXPECT_NE(show.out.find("updated 1, unchanged 1"), std::string::npos) << show.out;
  EXPECT_EQ(Run({"runs", "show", "01NOPE"}).code, 4);

  // Tables.
  CliResult list = Ok({"table", "list", "--json"});
  EXPECT_EQ(json::parse(list.out).size(), 2u);
  CliResult describe = Ok({"table", "describe", "events", "--json"});
  EXPECT_EQ(json::parse(describe.out)["rows"], 4);
  EXPECT_EQ(json::parse(describe.out)["keys"], json::array({"id"}));
}

TEST_F(CliTest, SchemaFilesDelimitersAndCoercions) {
  File("schema.json",
       R"({"columns":[{"name":"k","type":"int32","nullable":false},)"
       R"({"name":"at","type":"timestamp"},{"name":"x","type":"float64"}],"keys":["k"]})");
  Ok({"table", "create", "readings", "--schema", "schema.json"});
  json d = json::parse(Ok({"table", "describe", "readings", "--json"}).out);
  EXPECT_EQ(d["keys"], json::array({"k"}));
  EXPECT_EQ(d["columns"][0]["nullable"], false);
  File("r.tsv", "k\tat\tx\n1\t2026-11-30T05:00:00+01:00\t2\n");
  CliResult strict = Run({"load", "readings", "r.tsv", "--delimiter", "\\t"});
  EXPECT_EQ(strict.code, 1);
  EXPECT_NE(strict.all().find("declare the iso8601ToTimestamp coercion"), std::string::npos)
      << strict.all();
  File(
      "policy.json",
      R"({"mode":"strict","coercions":[{"sourceColumn":"at","targetColumn":"at","kind":"iso8601ToTimestamp"}]})");
  Ok({"load", "readings", "r.tsv", "--delimiter", "\\t", "--schema-policy", "policy.json",
      "--coerce", "x:intToFloat"});
  EXPECT_EQ(Ok({"scan", "readings", "--format", "csv"}).out,
            "k,at,x\n1,2026-11-30T04:00:00Z,2.0\n");
  EXPECT_EQ(Run({"table", "create", "bad", "--column", "a:int65"}).code, 2);
  // Definitions no load could use: refused when made, and nothing is made.
  CliResult json_key =
      Run({"table", "create", "bad", "--column", "doc:json:not-null", "--key", "doc"});
  EXPECT_EQ(json_key.code, 2) << json_key.all();
  EXPECT_NE(json_key.err.find("key column 'doc' is json"), std::string::npos) << json_key.err;
  CliResult nul = Run({"load", "readings", "r.tsv", "--delimiter", std::string(1, '\x01')});
  EXPECT_EQ(nul.code, 2) << nul.all();
  EXPECT_NE(nul.err.find("--delimiter (\\t for a tab) must be one printable ASCII character"),
            std::string::npos)
      << nul.err;
  EXPECT_EQ(Run({"table", "describe", "bad"}).code, 4);
  EXPECT_EQ(Ok({"count", "readings"}).out, "1\n");
}

TEST_F(CliTest, HistoryBranchesAndTimeTravel) {
  File("a.csv", "id,name\n1,a\n2,b\n");
  Ok({"load", "events", "a.csv"});
  json log = json::parse(Ok({"log", "--json"}).out);
  const int64_t after_first = log[0]["manifestVersion"];
  File("b.csv", "id,name\n3,c\n");
  Ok({"load", "events", "b.csv"});
  EXPECT_EQ(Ok({"count", "events", "--version", std::to_string(after_first)}).out, "2\n");
  EXPECT_EQ(Ok({"count", "events"}).out, "3\n");

  Ok({"branch", "create", "dev", "--from", "main@" + std::to_string(after_first)});
  EXPECT_NE(Ok({"branch", "list"}).out.find("dev"), std::string::npos);
  EXPECT_EQ(Ok({"count", "events", "--branch", "dev"}).out, "2\n");
  File("d.csv", "id,name\n10,dev-only\n");
  Ok({"load", "events", "d.csv", "--branch", "dev"});
  EXPECT_EQ(Ok({"count", "events", "--branch", "dev"}).out, "3\n");
  EXPECT_EQ(Ok({"count", "events"}).out, "3\n");  // main unchanged
  EXPECT_EQ(Ok({"scan", "events", "--branch", "dev", "--where", "id = 10", "--format", "csv",
                "--columns", "name"})
                .out,
            "name\ndev-only\n");
  CliResult dev_log = Ok({"log", "--branch", "dev"});
  EXPECT_NE(dev_log.out.find("version"), std::string::npos);

  json history = json::parse(Ok({"history", "events", "--json"}).out);
  EXPECT_GE(history.size(), 3u);
  Ok({"table", "rename", "events", "happenings"});
  EXPECT_EQ(Run({"count", "events"}).code, 4);
  EXPECT_EQ(Ok({"count", "happenings"}).out, "3\n");
  Ok({"compact", "happenings"});
  Ok({"compact"});
  EXPECT_EQ(Ok({"count", "happenings"}).out, "3\n");
  Ok({"gc", "--grace-seconds", "0"});
  // Names resolve as of the version read: the table was 'events' then.
  EXPECT_EQ(Ok({"count", "events", "--version", std::to_string(after_first)}).out, "2\n");
  CliResult verify = Ok({"heads", "verify"});
  EXPECT_NE(verify.out.find("all match the journal"), std::string::npos) << verify.out;
  Ok({"branch", "delete", "dev"});
  // --json names the drop's commit, as the journal has it.
  json dropped = json::parse(Ok({"--json", "table", "drop", "happenings"}).out);
  EXPECT_EQ(dropped["dropped"], "happenings");
  json newest = json::parse(Ok({"--json", "log"}).out)[0];
  EXPECT_EQ(dropped["manifestVersion"], newest["manifestVersion"]);
  EXPECT_EQ(dropped["commit"], newest["commit"]);
  EXPECT_EQ(Run({"count", "happenings"}).code, 4);
}

// `loam maintain` compacts a table once enough of its fragments are small;
// a bad setting is refused with its message and changes nothing.
TEST_F(CliTest, MaintainCompactsTablesThatAreDue) {
  for (int i = 1; i <= 6; ++i) {
    File("r.csv", "id,name\n" + std::to_string(i) + ",n" + std::to_string(i) + "\n");
    Ok({"load", "events", "r.csv"});
  }
  const std::string before = Ok({"scan", "events", "--format", "csv"}).out;
  CliResult idle = Ok({"maintain", "--min-fragments", "8"});
  EXPECT_NE(idle.out.find("compacted 0 of 1 tables"), std::string::npos) << idle.out;
  CliResult bad = Run({"maintain", "--min-fragments", "1"});
  EXPECT_EQ(bad.code, 2) << bad.all();
  EXPECT_NE(bad.all().find("--min-fragments"), std::string::npos) << bad.all();
  json pass = json::parse(Ok({"--json", "maintain", "--min-fragments", "4"}).out);
  EXPECT_EQ(pass["leaseHeld"], true);
  EXPECT_EQ(pass["compacted"], 1);
  EXPECT_EQ(pass["fragmentsRemoved"], 6);
  EXPECT_EQ(pass["fragments"]["events"], 1);
  EXPECT_EQ(Ok({"scan", "events", "--format", "csv"}).out, before);
  EXPECT_EQ(json::parse(Ok({"--json", "maintain", "--min-fragments", "4"}).out)["compacted"], 0);
}

TEST_F(CliTest, ExitCodesAndRefusals) {
  File("a.csv", "id,name\n1,a\n");
  EXPECT_EQ(Run({"load", "events", "a.csv", "--bogus"}).code, 2);
  EXPECT_EQ(Run({"load", "nosuch", "a.csv"}).code, 4);
  EXPECT_EQ(Run({"load", "events", "missing.csv"}).code, 4);
  EXPECT_EQ(Run({"count", "events"}, {{"LOAM_ROOT", dir_ + "/elsewhere"}}).code, 4);
  for (const char* truthy : {"true", "1", "yes", "ON", "True"}) {
    CliResult q = Run({"count", "events"}, {{"LOAM_QUARANTINE", truthy}});
    EXPECT_EQ(q.code, 5) << truthy;
    EXPECT_NE(q.err.find("refuses to run in quarantine mode"), std::string::npos) << q.err;
  }
  CliResult unknown = Run({"count", "events"}, {{"LOAM_QUARANTINE", "maybe"}});
  EXPECT_EQ(unknown.code, 2) << unknown.all();
  EXPECT_NE(unknown.err.find("unrecognised value 'maybe'"), std::string::npos) << unknown.err;
  for (const char* falsy : {"", "0", "false", "off", "no"}) {
    EXPECT_EQ(Run({"count", "events"}, {{"LOAM_QUARANTINE", falsy}}).code, 0) << falsy;
  }
  CliResult qp = Run({"load", "events", "a.csv", "--error-policy", "quarantine"});
  EXPECT_EQ(qp.code, 5);
  EXPECT_NE(qp.err.find("quarantine error policy is refused"), std::string::npos) << qp.err;
  CliResult skip = Run({"load", "events", "a.csv", "--error-policy", "skipRows"});
  EXPECT_EQ(skip.code, 5);
  EXPECT_NE(skip.err.find("behind a feature flag that is off"), std::string::npos) << skip.err;

  File("skip.csv", "id,name\n7,a\nbad,b\n");
  CliResult partial = Run({"load", "events", "skip.csv", "--error-policy", "skipRows"},
                          {{"LOAM_FEATURE_SKIP_ROWS", "true"}});
  EXPECT_EQ(partial.code, 8) << partial.all();
  EXPECT_NE(partial.out.find("partial"), std::string::npos) << partial.out;
  EXPECT_NE(partial.out.find("rejected: skip.csv: line 3, column 1"), std::string::npos)
      << partial.out;
  EXPECT_EQ(Ok({"count", "events"}).out, "1\n");
  EXPECT_NE(Ok({"get", "events", "7"}).out.find("7"), std::string::npos);

  // A non-owner principal needs a grant; only an admin can give one.
  CliResult denied = Run({"load", "events", "a.csv"}, {{"LOAM_PRINCIPAL", "bob"}});
  EXPECT_EQ(denied.code, 5) << denied.all();
  EXPECT_NE(denied.all().find("'bob' needs the writer grant"), std::string::npos) << denied.all();
  EXPECT_EQ(Run({"table", "grant", "events", "bob", "admin"}, {{"LOAM_PRINCIPAL", "bob"}}).code, 5);
  Ok({"table", "grant", "events", "bob", "writer"});
  Ok({"load", "events", "a.csv"}, {{"LOAM_PRINCIPAL", "bob"}});
  EXPECT_EQ(Run({"load", "events", "a.csv", "--mode", "replace"}, {{"LOAM_PRINCIPAL", "bob"}}).code,
            5);
  EXPECT_EQ(Run({"table", "drop", "events"}, {{"LOAM_PRINCIPAL", "bob"}}).code, 5);
  EXPECT_EQ(Run({"table", "rename", "events", "bobs"}, {{"LOAM_PRINCIPAL", "bob"}}).code, 5);
  // One definition of a principal, as over HTTP: not a grantee, not an actor.
  for (const char* name : {"bob\n", " bob", "bob\x7f"}) {
    CliResult grantee = Run({"table", "grant", "events", name, "reader"});
    EXPECT_EQ(grantee.code, 2) << grantee.all();
    EXPECT_NE(grantee.err.find("printable UTF-8"), std::string::npos) << grantee.err;
    CliResult actor = Run({"count", "events"}, {{"LOAM_PRINCIPAL", name}});
    EXPECT_EQ(actor.code, 2) << actor.all();
    EXPECT_NE(actor.err.find("LOAM_PRINCIPAL"), std::string::npos) << actor.err;
  }
  Ok({"table", "grant", "events", "repo:org/app", "reader"});
  EXPECT_EQ(Ok({"count", "events"}, {{"LOAM_PRINCIPAL", "repo:org/app"}}).out, "2\n");

  // Idempotency: the same request returns the run; another request conflicts.
  File("b.csv", "id,name\n2,b\n");
  CliResult first = Ok({"load", "events", "b.csv", "--idempotency-key", "k1", "--json"});
  CliResult again = Ok({"load", "events", "b.csv", "--idempotency-key", "k1", "--json"});
  EXPECT_EQ(json::parse(again.out)["id"], json::parse(first.out)["id"]);
  EXPECT_EQ(json::parse(again.out)["reused"], true);
  CliResult clash = Run({"load", "events", "b.csv", "--idempotency-key", "k1", "--mode", "upsert"});
  EXPECT_EQ(clash.code, 3);
  EXPECT_NE(clash.err.find("already belongs to run"), std::string::npos) << clash.err;
  EXPECT_EQ(Ok({"count", "events"}).out, "3\n");  // 7 (skipRows), 1 (bob), 2 (k1 once)

  CliResult json_err = Run({"count", "nosuch", "--json"});
  EXPECT_EQ(json_err.code, 4);
  EXPECT_EQ(json::parse(json_err.out)["error"]["exitCode"], 4);
  EXPECT_EQ(json::parse(json_err.out)["error"]["code"], "not_found");
  EXPECT_EQ(json::parse(json_err.out)["error"]["category"], "NotFound");
  EXPECT_EQ(Run({"--help"}).code, 0);
  EXPECT_EQ(Run({"load", "--help"}).code, 0);
}

struct BadInput {
  std::string name;
  std::string data;
  std::string message;  // a part of the documented error
  int exit_code = 1;
  std::vector<std::string> flags = {};
};

std::vector<BadInput> Corpus() {
  const std::string head = "id,name,amount,at,tags\n";
  std::string good_rows;
  for (int i = 100; i < 200; ++i) good_rows += std::to_string(i) + ",n,1.00,,\n";
  const std::string gz = Gzip(head + good_rows), zs = Zstd(head + good_rows);
  return {
      {"unclosed.csv", head + "1,\"open,1.00,,\n",
       "CSV line 2, column 2: a quoted field is never closed"},
      {"stray_quote.csv", head + "1,a\"b,1.00,,\n", "line 2, column 2"},
      {"after_quote.csv", head + "1,\"a\"b,1.00,,\n", "line 2, column 2"},
      {"too_many.csv", head + "1,a,1.00,,,extra\n", "line 2"},
      {"too_few.csv", head + "1,a\n", "line 2"},
      {"dup_header.csv", "id,id\n1,1\n", "line 1"},
      {"empty.csv", "", "CSV input is empty"},
      {"unknown_col.csv", "id,colour\n1,red\n", "column 'colour' is not in the table"},
      {"missing_col.csv", "name\nx\n", "column 'id' (int64, not null) is missing from the header"},
      {"null_key.csv", head + ",a,1.00,,\n", "missing value for non-nullable column 'id'"},
      {"bad_utf8.csv", head + "1,\xff\xfe,1.00,,\n", "invalid UTF-8"},
      {"bad_int.csv", head + "x1,a,1.00,,\n",
       "line 2, column 1 ('id', int64): expected an integer"},
      {"int_overflow.csv", head + "99999999999999999999,a,,,\n", "out of range"},
      {"bad_decimal.csv", head + "1,a,1.234,,\n", "('amount', decimal(10,2)): does not fit"},
      {"decimal_overflow.csv", head + "1,a,123456789.00,,\n", "does not fit"},
      {"bad_time.csv", head + "1,a,,2026-11-30 00:00:00,\n", "expected a UTC timestamp"},
      {"offset_time.csv", head + "1,a,,2026-11-30T00:00:00+01:00,\n",
       "declare the iso8601ToTimestamp coercion"},
      {"bad_json.csv", head + "1,a,,,\"{\"\"a\"\":\"\n", "('tags', json)"},
      {"good_then_bad.csv", head + good_rows + "7,a,,,nope\n", "line 102, column 5 ('tags', json)"},
      {"dup_keys.csv",
       head + "5,a,,,\n6,b,,,\n5,c,,,\n",
       "duplicate upsert key: dup_keys.csv line 2 and dup_keys.csv line 4",
       1,
       {"--mode", "upsert"}},
      {"other_key.csv",
       head + "2,seed,,,\n",
       "an upsert into 'events' must match on its declared key (id)",
       1,
       {"--mode", "upsert", "--key", "name"}},
      {"bad.jsonl", "{\"id\":1}\n{\"id\":2,\"oops\"}\n", "line 2: malformed JSON"},
      {"wrong_type.jsonl", "{\"id\":\"1\"}\n", "expected a JSON integer, got a JSON string"},
      {"unknown_key.jsonl", "{\"id\":1,\"zz\":1}\n", "field 'zz': not a column of the table"},
      {"deep.jsonl",
       "{\"id\":1,\"tags\":[[[1]]]}\n",
       "field 'tags': nested deeper than 2 levels",
       6,
       {"--max-json-depth", "2"}},
      {"deep_json.csv",
       head + "1,a,,,\"[[[1]]]\"\n",
       "('tags', json): nested deeper than 2 levels",
       6,
       {"--max-json-depth", "2"}},
      {"control_byte.jsonl", "{\"id\":1,\"name\":\"a\tb\"}\n", "a control byte inside a string"},
      {"nul.jsonl", std::string("{\"id\":1,\"name\":\"a") + '\0' + "b\"}\n", "control byte"},
      {"trailing.jsonl", "{\"id\":1} x\n", "content follows the JSON value"},
      {"two_docs.jsonl", "{\"id\":1}{\"id\":2}\n", "content follows the JSON value"},
      {"bad_number.jsonl", "{\"id\":1,\"tags\":[01]}\n", "malformed JSON"},
      {"bad_escape.jsonl", "{\"id\":1,\"tags\":[\"\\x\"]}\n", "bad escape"},
      {"trailing_comma.jsonl", "{\"id\":1,\"tags\":{\"a\":1,}}\n", "malformed JSON"},
      {"dup_in_run.csv", head + "5,a,,,\n5,b,,,\n",
       "duplicate key: dup_in_run.csv line 2 and dup_in_run.csv line 3"},
      {"dup_in_table.csv", head + "6,a,,,\n1,b,,,\n",
       "duplicate key: 1 row(s) of the run have a key (id) that table 'events' already holds: "
       "dup_in_table.csv line 3"},
      {"truncated.csv.gz", gz.substr(0, gz.size() / 2), "input ends inside its compressed stream"},
      {"truncated.csv.zst", zs.substr(0, zs.size() / 2), "input ends inside its compressed stream"},
      {"long_field.csv",
       head + "1," + std::string(100, 'x') + ",,,\n",
       "longer than",
       6,
       {"--max-field-bytes", "64"}},
      {"wide.csv",
       head + "1,a,,,\n",
       "more than the limit of 3 columns",
       6,
       {"--max-columns", "3"}},
      {"many_rows.csv",
       head + good_rows,
       "more than 10 rows (the rows-per-run limit)",
       6,
       {"--max-rows", "10"}},
      {"decoded.csv",
       head + good_rows,
       "decodes to more than the limit of 100 bytes",
       6,
       {"--max-decoded-bytes", "100"}},
      {"bomb.csv.gz",
       Gzip(head +
            [] {
              std::string rows;
              // Distinct keys (a keyed table refuses repeats first), long
              // repetitive names: gzip shrinks them several hundred times.
              for (int i = 0; i < 1000; ++i) {
                rows += std::to_string(i) + "," + std::string(5000, 'a') + ",1.00,,\n";
              }
              return rows;
            }()),
       "expands more than 50x",
       6,
       {"--max-expansion-ratio", "50"}},
      {"slow.csv", head + good_rows, "longer than the time budget", 6, {"--time-budget-ms", "-1"}},
  };
}

// A 1 MiB bound spills the key checks of 40,000 keys to TMPDIR: loads,
// refusals and upsert counters are what the in-memory checks give, and the
// scratch directory is gone after each run.
TEST_F(CliTest, KeyChecksSpillPastTheirMemoryBound) {
  const std::string tmp = dir_ + "/tmp";
  std::filesystem::create_directories(tmp);
  const std::map<std::string, std::string> env = {{"TMPDIR", tmp}, {"LOAM_LOG_LEVEL", "debug"}};
  auto rows = [](int first, int last, const std::string& extra = "") {
    std::string out = "id,name\n";
    for (int id = first; id <= last; ++id) {
      out += std::to_string(id) + "," + (id < 35'000 ? "x" : "n") + std::to_string(id) + "\n";
    }
    return out + extra;
  };
  const std::vector<std::string> bound = {"--key-memory-mib", "1"};
  auto load = [&](std::vector<std::string> args) {
    args.insert(args.end(), bound.begin(), bound.end());
    return Run(args, env);
  };
  File("a.csv", rows(0, 39'999));
  CliResult a = load({"load", "events", "a.csv", "--json"});
  ASSERT_EQ(a.code, 0) << a.all();
  EXPECT_NE(a.err.find("keys spill to scratch storage"), std::string::npos) << a.err;
  EXPECT_EQ(json::parse(a.out)["counters"]["inserted"], 40'000);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));

  File("d.csv", rows(100, 30'099, "105,again\n"));
  CliResult d = load({"load", "events", "d.csv", "--mode", "replace"});
  EXPECT_EQ(d.code, 1) << d.all();
  EXPECT_NE(d.all().find("duplicate key: d.csv line 7 and d.csv line 30002 have the same key (id)"),
            std::string::npos)
      << d.all();
  File("h.csv", rows(39'990, 79'999));
  CliResult h = load({"load", "events", "h.csv"});
  EXPECT_EQ(h.code, 1) << h.all();
  EXPECT_NE(h.all().find("duplicate key: 10 row(s) of the run have a key (id) that table 'events' "
                         "already holds: h.csv line 2, h.csv line 3, h.csv line 4, h.csv line 5, "
                         "h.csv line 6 and 5 more"),
            std::string::npos)
      << h.all();
  EXPECT_EQ(Ok({"count", "events"}).out, "40000\n");

  // Ids 30,000..69,999 with every name as a.csv has it, but n instead of x
  // below 35,000: 5,000 renamed, 5,000 unchanged, 30,000 new.
  std::string u = "id,name\n";
  for (int id = 30'000; id <= 69'999; ++id)
    u += std::to_string(id) + ",n" + std::to_string(id) + "\n";
  File("u.csv", u);
  CliResult up = load({"load", "events", "u.csv", "--mode", "upsert", "--json"});
  ASSERT_EQ(up.code, 0) << up.all();
  EXPECT_NE(up.err.find("keys spill to scratch storage"), std::string::npos) << up.err;
  const json c = json::parse(up.out)["counters"];
  EXPECT_EQ(c["inserted"], 30'000);
  EXPECT_EQ(c["updated"], 5'000);
  EXPECT_EQ(c["unchanged"], 5'000);
  EXPECT_EQ(Ok({"count", "events"}).out, "70000\n");
  EXPECT_NE(Ok({"get", "events", "30000"}).out.find("n30000"), std::string::npos);
  EXPECT_TRUE(std::filesystem::is_empty(tmp));

  CliResult zero = Run({"load", "events", "a.csv", "--key-memory-mib", "0"});
  EXPECT_EQ(zero.code, 2) << zero.all();
  EXPECT_NE(zero.all().find("--key-memory-mib"), std::string::npos) << zero.all();
}

// One failed load names every invalid row: the first ten in its output,
// each with `loam runs errors`, never a value, and the table unchanged.
TEST_F(CliTest, AFailedLoadReportsEveryInvalidRow) {
  std::string csv = "id,name,amount\n";
  for (int i = 1; i <= 40; ++i) {
    csv += std::to_string(i) + ",n," + (i % 3 == 0 ? "lots" : "1.25") + "\n";  // 13 invalid
  }
  File("many.csv", csv);
  CliResult r = Run({"load", "events", "many.csv"});
  EXPECT_EQ(r.code, 1) << r.all();
  EXPECT_NE(r.out.find("and 12 more invalid rows"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  invalid: many.csv: line 4, column 3 ('amount'"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(3 more; `loam runs errors "), std::string::npos) << r.out;
  const std::string id = json::parse(Ok({"runs", "list", "--json"}).out).at(0).at("id");
  CliResult all = Ok({"runs", "errors", id, "--json"});
  EXPECT_EQ(all.out.find("lots"), std::string::npos);  // never a value
  std::vector<int64_t> lines;
  std::istringstream in(all.out);
  for (std::string line; std::getline(in, line);) {
    const json e = json::parse(line);
    EXPECT_EQ(e.at("column"), "amount");
    EXPECT_EQ(e.at("code"), "validation_failed");
    lines.push_back(e.at("line"));
  }
  ASSERT_EQ(lines.size(), 13u) << all.out;
  EXPECT_EQ(lines.front(), 4);
  EXPECT_EQ(lines.back(), 40);
  EXPECT_NE(Ok({"runs", "errors", id}).out.find("many.csv"), std::string::npos);

  // --max-errors stops validation there; out of range is a usage error.
  CliResult capped = Run({"load", "events", "many.csv", "--max-errors", "2"});
  EXPECT_EQ(capped.code, 1) << capped.all();
  EXPECT_NE(capped.out.find("validation stopped at 2 errors, the maxErrors limit"),
            std::string::npos)
      << capped.out;
  EXPECT_EQ(Run({"load", "events", "many.csv", "--max-errors", "0"}).code, 2);
  EXPECT_EQ(Run({"runs", "errors", "01J00000000000000000000000"}).code, 4);
  EXPECT_EQ(Ok({"count", "events"}).out, "0\n");
}

TEST_F(CliTest, MalformedInputsFailWithTheirMessageAndChangeNothing) {
  File("seed.csv", "id,name\n1,seed\n");
  Ok({"load", "events", "seed.csv"});
  const auto before = TreeExceptRuns(ws());
  for (const BadInput& bad : Corpus()) {
    SCOPED_TRACE(bad.name);
    File(bad.name, bad.data);
    std::vector<std::string> args = {"load", "events", bad.name};
    args.insert(args.end(), bad.flags.begin(), bad.flags.end());
    args.push_back("--json");
    CliResult r = Run(args);
    EXPECT_EQ(r.code, bad.exit_code) << r.all();
    const std::string code = bad.exit_code == 6                     ? "limit_exceeded"
                             : bad.message.starts_with("duplicate") ? "duplicate_key"
                                                                    : "";
    if (!code.empty()) {
      EXPECT_NE(r.out.find("\"errorCode\":\"" + code + "\""), std::string::npos) << r.out;
    }
    EXPECT_NE(r.all().find(bad.message), std::string::npos) << r.all();
    EXPECT_NE(r.out.find("failed"), std::string::npos) << r.all();
  }
  const auto after = TreeExceptRuns(ws());
  for (const auto& [path, bytes] : after) {
    EXPECT_TRUE(before.count(path) && before.at(path) == bytes) << "changed or added: " << path;
  }
  for (const auto& [path, bytes] : before) EXPECT_TRUE(after.count(path)) << "removed: " << path;
  EXPECT_EQ(Ok({"count", "events"}).out, "1\n");
}

}  // namespace
}  // namespace loam::testing
