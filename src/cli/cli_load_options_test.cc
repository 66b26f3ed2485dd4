// `loam load`'s CSV options and column mapping, and `loam runs cancel`,
// end to end: each rule refused with its message, tables unchanged.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_test_util.h"

namespace loam::testing {
namespace {

using json = nlohmann::json;

// `loam runs cancel` asks the process that holds a run to stop it; a
// finished run is refused.
TEST_F(CliTest, RunsCancelAsksTheHolderToStopAndRefusesAFinishedRun) {
  File("one.csv", "id,name\n1,ann\n");
  Ok({"load", "events", "one.csv"});
  const std::string done = json::parse(Ok({"runs", "list", "--json"}).out).at(0).at("id");
  // A run another process holds: that run's record, as it looks mid-validation.
  const std::string held = "01J00000000000000000000077";
  json record = json::parse(Slurp(ws() + "/_control/runs/" + done + ".json"));
  record["id"] = held;
  record["state"] = "validating";
  record["timings"]["finishedMicros"] = 0;
  record["lease"] = {{"owner", "another process"}, {"expiresMicros", int64_t{1} << 60}};
  WriteFile(ws() + "/_control/runs/" + held + ".json", record.dump());
  const auto before = TreeExceptRuns(ws());

  CliResult asked = Ok({"runs", "cancel", held});
  EXPECT_NE(asked.out.find("run " + held + " (validating) asked to stop"), std::string::npos)
      << asked.out;
  const json shown = json::parse(Ok({"runs", "show", held, "--json"}).out);
  EXPECT_EQ(shown.at("state"), "validating");  // its holder ends it
  EXPECT_FALSE(shown.at("cancel").at("by").get<std::string>().empty()) << shown;
  EXPECT_EQ(TreeExceptRuns(ws()), before);

  CliResult late = Run({"runs", "cancel", done});
  EXPECT_EQ(late.code, 3) << late.all();
  EXPECT_NE(late.err.find("is succeeded: a finished run cannot be cancelled"), std::string::npos)
      << late.err;
  EXPECT_EQ(Run({"runs", "cancel", "01J00000000000000000000000"}).code, 4);
  EXPECT_EQ(Ok({"count", "events"}).out, "1\n");
}

// CSV options read a file written otherwise: no header, a preamble,
// comments, another quote, a null marker. Bad options are usage errors that
// change nothing.
TEST_F(CliTest, CsvOptionsReadAFileWrittenOtherwise) {
  File("export.txt",
       "report of 2026-12-06\n# id;name;amount\n1;'Ann; Lee';NA\n# skipped\n2;NA;3.50\n");
  const std::vector<std::string> load = {"load",
                                         "events",
                                         "export.txt",
                                         "--format",
                                         "csv",
                                         "--delimiter",
                                         ";",
                                         "--quote",
                                         "'",
                                         "--no-header",
                                         "--columns",
                                         "id,name,amount",
                                         "--skip-lines",
                                         "1",
                                         "--comment-prefix",
                                         "#",
                                         "--null-marker",
                                         "NA"};
  Ok(load);
  EXPECT_EQ(Ok({"scan", "events", "--format", "jsonl", "--columns", "id,name,amount"}).out,
            "{\"id\":1,\"name\":\"Ann; Lee\",\"amount\":null}\n"
            "{\"id\":2,\"name\":null,\"amount\":3.50}\n");
  const auto tree = TreeExceptRuns(ws());
  struct Bad {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {{"--quote", "''"}, "--quote must be one character"},
      {{"--quote", ";"}, "the quote must be one printable ASCII character other than a space"},
      {{"--no-header"}, "an input without a header needs its columns named"},
      {{"--columns", "id,name"}, "columns are named only for an input without a header"},
      {{"--no-header", "--columns", "id,id"}, "column 'id' is named twice"},
      {{"--skip-lines", "-1"}, "the lines to skip must be from 0 to 1000000"},
      {{"--null-marker", "N;A"}, "the null marker must be at most 64 bytes"},
      {{"--format", "jsonl", "--null-marker", "NA"}, "the CSV options are for CSV input only"},
      {{"--comment-prefix", ";"}, "not start with the quote or the delimiter"},
  };
  for (const Bad& b : bad) {
    std::vector<std::string> args = {"load", "events", "export.txt", "--delimiter", ";"};
    args.insert(args.end(), b.flags.begin(), b.flags.end());
    CliResult r = Run(args);
    EXPECT_EQ(r.code, 2) << r.all();
    EXPECT_NE(r.err.find(b.message), std::string::npos) << b.message << "\n" << r.err;
  }
  EXPECT_EQ(TreeExceptRuns(ws()), tree);

  // --map loads an input column into a table column of another name.
  File("renamed.csv", "Event ID,Who\n3,cy\n");
  Ok({"load", "events", "renamed.csv", "--map", "Event ID=id", "--map", "Who=name"});
  EXPECT_EQ(Ok({"scan", "events", "--where", "id = 3", "--format", "csv", "--columns", "name"}).out,
            "name\ncy\n");
  const auto mapped = TreeExceptRuns(ws());
  // A malformed flag is a usage error; a map the table refuses fails the
  // run (as a coercion of a column the table lacks does).
  CliResult usage = Run({"load", "events", "renamed.csv", "--map", "=id"});
  EXPECT_EQ(usage.code, 2) << usage.all();
  EXPECT_NE(usage.err.find("--map takes SOURCE=TARGET"), std::string::npos) << usage.err;
  CliResult refused = Run({"load", "events", "renamed.csv", "--map", "Event ID=nope"});
  EXPECT_EQ(refused.code, 1) << refused.all();
  EXPECT_NE(refused.all().find(
                "error (validation_failed): column map: 'Event ID' maps to 'nope', which is not "
                "in the table"),
            std::string::npos)
      << refused.all();
  EXPECT_EQ(TreeExceptRuns(ws()), mapped);
}

}  // namespace
}  // namespace loam::testing
