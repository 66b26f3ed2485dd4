// The public API as an embedding program uses it: only loam/ headers, only
// libloam.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "gtest/gtest.h"
#include "loam/load.h"
#include "loam/maintenance.h"
#include "loam/scan.h"
#include "loam/service.h"
#include "loam/workspace.h"

namespace loam {
namespace {

namespace fs = std::filesystem;

class ApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("loam-api-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Workspace> OpenNew(const std::string& principal = "loam") {
    OpenOptions o;
    o.create_if_missing = true;
    o.principal = principal;
    Result<std::unique_ptr<Workspace>> ws = Workspace::Open((dir_ / "ws").string(), o);
    EXPECT_TRUE(ws.ok()) << ws.status().ToString();
    return ws.ok() ? std::move(*ws) : nullptr;
  }

  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << text;
    return path;
  }

  static Schema Events() {
    return Schema{{{"id", DataType::Int64(), false}, {"name", DataType::String(), true}}};
  }

  static RecordBatch Rows(std::initializer_list<std::pair<int64_t, std::string>> rows) {
    RecordBatch b(Events());
    for (const auto& [id, name] : rows) EXPECT_TRUE(b.AppendRow({id, name}).ok());
    return b;
  }

  static int64_t CountRows(const Workspace& ws, const std::string& table, ScanOptions o = {}) {
    Result<std::vector<RecordBatch>> batches = Scan(ws, table, o);
    EXPECT_TRUE(batches.ok()) << batches.status().ToString();
    int64_t n = 0;
    for (const RecordBatch& b : batches.ok() ? *batches : std::vector<RecordBatch>{}) {
      n += b.num_rows();
    }
    return n;
  }

  fs::path dir_;
};

TEST_F(ApiTest, OpeningWhereNoWorkspaceIsFailsUnlessAskedToCreateOne) {
  Result<std::unique_ptr<Workspace>> none = Workspace::Open((dir_ / "ws").string());
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.status().Is(ErrorCode::kNotFound)) << none.status().ToString();
  EXPECT_NE(none.status().message().find("create_if_missing"), std::string::npos);
  ASSERT_NE(OpenNew(), nullptr);
  Result<std::unique_ptr<Workspace>> again = Workspace::Open((dir_ / "ws").string());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)->ListBranches().value(), std::vector<std::string>{"main"});
}

TEST_F(ApiTest, AnInvalidPrincipalIsRefusedBeforeAnythingIsWritten) {
  OpenOptions o;
  o.create_if_missing = true;
  o.principal = " padded ";
  Result<std::unique_ptr<Workspace>> ws = Workspace::Open((dir_ / "ws").string(), o);
  ASSERT_FALSE(ws.ok());
  EXPECT_TRUE(ws.status().Is(ErrorCode::kInvalidArgument)) << ws.status().ToString();
  EXPECT_NE(ws.status().message().find("OpenOptions::principal"), std::string::npos);
  EXPECT_FALSE(Workspace::Open((dir_ / "ws").string()).ok()) << "a workspace was made";
}

TEST_F(ApiTest, WritesScansLookUpsAndReadsAnEarlierVersion) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  Result<Commit> created = ws->CreateTable("events", Events(), {"id"});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Result<Commit> first = ws->Write("events", Rows({{1, "a"}, {2, "b"}}));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->row_count, 2);
  WriteOptions upsert;
  upsert.mode = LoadMode::kUpsert;
  Result<Commit> second = ws->Write("events", Rows({{2, "B"}, {3, "c"}}), upsert);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_GT(second->workspace_version, first->workspace_version);
  EXPECT_EQ(ws->CurrentVersion().value(), second->workspace_version);

  Result<TableInfo> info = ws->DescribeTable("events");
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->row_count, 3);
  EXPECT_EQ(info->keys, std::vector<std::string>{"id"});
  EXPECT_EQ(info->schema, Events());

  ScanOptions names;
  names.columns = {"name"};
  names.where = {Predicate::Ge("id", int64_t{2})};
  Result<std::vector<RecordBatch>> rows = Scan(*ws, "events", names);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::set<std::string> seen;
  for (const RecordBatch& b : *rows) {
    ASSERT_EQ(b.schema.fields.size(), 1u);
    for (int64_t i = 0; i < b.num_rows(); ++i) seen.insert(std::string(b.columns[0].GetBytes(i)));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"B", "c"}));

  Result<std::optional<RecordBatch>> two = Lookup(*ws, "events", {int64_t{2}});
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ASSERT_TRUE(two->has_value());
  EXPECT_EQ((*two)->columns[1].GetBytes(0), "B");
  EXPECT_FALSE(Lookup(*ws, "events", {int64_t{9}}).value().has_value());
  // Without a read cache the same rows come back.
  OpenOptions uncached;
  uncached.read_cache_bytes = 0;
  Result<std::unique_ptr<Workspace>> plain = Workspace::Open((dir_ / "ws").string(), uncached);
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(Lookup(**plain, "events", {int64_t{2}}).value()->columns[1].GetBytes(0), "B");

  // Time travel: the version of the first write still holds "b".
  ReadOptions then;
  then.version = first->workspace_version;
  EXPECT_EQ(Lookup(*ws, "events", {int64_t{2}}, then).value()->columns[1].GetBytes(0), "b");
  ScanOptions at_first;
  at_first.version = first->workspace_version;
  EXPECT_EQ(CountRows(*ws, "events", at_first), 2);
  EXPECT_EQ(ws->DescribeTable("events", then)->row_count, 2);

  Result<std::vector<LogEntry>> log = ws->Log();
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_GE(log->size(), 3u);
  EXPECT_EQ(log->front().workspace_version, second->workspace_version);
  EXPECT_EQ(log->front().actor, "loam");
}

TEST_F(ApiTest, AReaderPullsOneFileAtATimeAndStopsAtItsLimit) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events()).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{1, "a"}, {2, "b"}})).ok());
  const uint64_t first = ws->CurrentVersion().value();
  ASSERT_TRUE(ws->Write("events", Rows({{3, "c"}})).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{4, "d"}, {5, "e"}})).ok());

  ScanOptions all;
  Result<std::unique_ptr<ScanReader>> reader = OpenScan(*ws, "events", all);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  ASSERT_TRUE(ws->Write("events", Rows({{6, "f"}})).ok());  // after it opened: not seen
  std::vector<int64_t> sizes;
  for (;;) {
    Result<std::optional<RecordBatch>> next = (*reader)->Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!next->has_value()) break;
    sizes.push_back((*next)->num_rows());
  }
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 1, 2}));

  ScanOptions three;
  three.limit = 3;
  three.where = {Predicate::Ge("id", int64_t{2})};
  reader = OpenScan(*ws, "events", three);
  ASSERT_TRUE(reader.ok());
  int64_t rows = 0;
  for (auto b = (*reader)->Next(); b.ok() && b->has_value(); b = (*reader)->Next()) {
    rows += (*b)->num_rows();
  }
  EXPECT_EQ(rows, 3);

  ScanOptions then;
  then.version = first;
  reader = OpenScan(*ws, "events", then);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->Next().value()->num_rows(), 2);
  EXPECT_FALSE((*reader)->Next().value().has_value());

  ScanOptions bad;
  bad.where = {Predicate::Eq("id", std::string("x"))};
  EXPECT_TRUE(OpenScan(*ws, "events", bad).status().IsInvalidArgument());
}

TEST_F(ApiTest, ReadsThatNameWhatIsNotThereSayWhat) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("plain", Events()).ok());
  ASSERT_TRUE(ws->Write("plain", Rows({{1, "a"}})).ok());

  Result<std::vector<RecordBatch>> missing = Scan(*ws, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().Is(ErrorCode::kNotFound));
  EXPECT_NE(missing.status().message().find("'nope'"), std::string::npos);

  ScanOptions bad_column;
  bad_column.columns = {"id", "age"};
  Result<std::vector<RecordBatch>> refused = Scan(*ws, "plain", bad_column);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().Is(ErrorCode::kInvalidArgument));
  EXPECT_NE(refused.status().message().find("no column 'age'"), std::string::npos);

  Result<std::optional<RecordBatch>> unkeyed = Lookup(*ws, "plain", {int64_t{1}});
  ASSERT_FALSE(unkeyed.ok());
  EXPECT_NE(unkeyed.status().message().find("declares no key"), std::string::npos);

  // Writing a row whose key column is null is refused, and the table keeps its row.
  RecordBatch null_id(Events());
  ASSERT_TRUE(null_id.AppendRow({std::monostate{}, std::string("x")}).ok());
  Result<Commit> refused_write = ws->Write("plain", null_id);
  ASSERT_FALSE(refused_write.ok());
  EXPECT_EQ(CountRows(*ws, "plain"), 1);
}

TEST_F(ApiTest, LoadsAFileOnceReportingProgressAndReturnsTheRunOnARetry) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  LoadRequest load;
  load.table = "events";
  load.files = {WriteFile("events.csv", "id,name\n1,a\n2,b\n3,c\n")};
  load.idempotency_key = "day-1";
  std::vector<std::string> states;
  Result<LoadResult> run = Load(*ws, load, [&](const LoadProgress& p) {
    if (states.empty() || states.back() != p.state) states.push_back(p.state);
  });
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->state, "succeeded") << run->error;
  EXPECT_EQ(run->inserted, 3);
  EXPECT_FALSE(run->reused);
  EXPECT_EQ(states.back(), "succeeded");
  EXPECT_NE(std::find(states.begin(), states.end(), "validating"), states.end());
  EXPECT_EQ(ws->DescribeTable("events")->version, run->table_version);

  Result<LoadResult> again = Load(*ws, load);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->run_id, run->run_id);
  EXPECT_EQ(CountRows(*ws, "events"), 3);
}

TEST_F(ApiTest, ALoadWithABadRowFailsWholeAndLeavesTheTableAsItWas) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{1, "a"}})).ok());
  const int64_t version = ws->DescribeTable("events")->version;
  LoadRequest load;
  load.table = "events";
  load.files = {WriteFile("bad.csv", "id,name\n2,b\nthree,c\n")};
  Result<LoadResult> run = Load(*ws, load);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->state, "failed");
  EXPECT_EQ(run->error_code, "validation_failed") << run->error;
  EXPECT_NE(run->error.find("line 3"), std::string::npos) << run->error;
  EXPECT_EQ(ws->DescribeTable("events")->version, version);
  EXPECT_EQ(CountRows(*ws, "events"), 1);

  LoadRequest bad_delimiter = load;
  bad_delimiter.csv_delimiter = '"';
  Result<LoadResult> refused = Load(*ws, bad_delimiter);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("LoadRequest::csv_delimiter"), std::string::npos)
      << refused.status().ToString();
}

// What the command shows comes from the API: the workspace's info, a
// table's grants and identity, filters and values from text, rows as text.
TEST_F(ApiTest, InfoGrantsAndTextFormsAsTheCommandShowsThem) {
  std::unique_ptr<Workspace> ws = OpenNew("owner");
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{1, "a b"}, {2, "c"}})).ok());
  ASSERT_TRUE(ws->SetGrant("events", "bob", Role::kWriter).ok());
  ASSERT_TRUE(ws->CreateBranch("trial").ok());
  Result<WorkspaceInfo> info = ws->Info();
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->owner, "owner");
  EXPECT_EQ(info->id, ws->id());
  EXPECT_EQ(info->branches, (std::vector<std::string>{"main", "trial"}));
  EXPECT_EQ(info->version, ws->CurrentVersion().value());
  TableInfo table = ws->DescribeTable("events").value();
  ASSERT_EQ(table.grants.size(), 1u);
  EXPECT_EQ(table.grants[0].principal, "bob");
  EXPECT_EQ(table.grants[0].role, Role::kWriter);
  EXPECT_FALSE(table.schema_hash.empty());

  OpenOptions as_bob;
  as_bob.principal = "bob";
  std::unique_ptr<Workspace> bob = Workspace::Open((dir_ / "ws").string(), as_bob).value();
  Status denied = bob->SetAdditiveSchema("events", true);
  EXPECT_TRUE(denied.Is(ErrorCode::kPermissionDenied)) << denied.ToString();
  EXPECT_TRUE(ws->SetAdditiveSchema("events", true).ok());
  const TableEvent switched = ws->History("events").value().back();  // audited like a grant
  EXPECT_EQ(switched.event, "table_grant");
  EXPECT_NE(switched.detail.find("loam:additive-schema"), std::string::npos) << switched.detail;

  Result<Predicate> where = ParsePredicate(Events(), "id >= 2");
  ASSERT_TRUE(where.ok()) << where.status().ToString();
  ScanOptions o;
  o.where = {*where};
  EXPECT_EQ(CountRows(*ws, "events", o), 1);
  EXPECT_TRUE(ParsePredicate(Events(), "nope = 1").status().Is(ErrorCode::kInvalidArgument));
  EXPECT_EQ(ParseValue(Events().fields[0], "7").value(), Value(int64_t{7}));
  RecordBatch rows = Lookup(*ws, "events", {int64_t{1}}).value().value();
  std::string line, text;
  AppendJsonLine(rows, 0, &line);
  EXPECT_EQ(line, "{\"id\":1,\"name\":\"a b\"}\n");
  AppendCanonicalText(rows.columns[1], 0, &text);
  EXPECT_EQ(text, "a b");
}

// Limits bound a run (past one it fails whole); the runs are listed with
// their records; names parse as the command and the HTTP API take them.
TEST_F(ApiTest, LimitsFailARunWholeAndRunsAreListedWithTheirRecords) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  LoadRequest load;
  load.table = "events";
  load.files = {WriteFile("three.csv", "id,name\n1,a\n2,b\n3,c\n")};
  load.limits.max_rows = 2;
  Result<LoadResult> over = Load(*ws, load);
  ASSERT_TRUE(over.ok()) << over.status().ToString();
  EXPECT_EQ(over->state, "failed");
  EXPECT_EQ(CountRows(*ws, "events"), 0);
  load.limits.max_columns = 0;
  Result<LoadResult> zero = Load(*ws, load);
  ASSERT_FALSE(zero.ok());
  EXPECT_TRUE(zero.status().Is(ErrorCode::kInvalidArgument));
  EXPECT_NE(zero.status().message().find("limits.max_columns"), std::string::npos);
  load.limits = {};
  Result<LoadResult> fits = Load(*ws, load);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->state, "succeeded");
  EXPECT_EQ(fits->mode, "append");
  EXPECT_EQ(fits->bytes_read, 20u);  // the file's bytes

  Result<std::vector<LoadResult>> runs = ListRuns(*ws);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_EQ((*runs)[0].run_id, fits->run_id);  // newest first
  EXPECT_EQ((*runs)[1].run_id, over->run_id);
  Result<LoadResult> again = GetRun(*ws, over->run_id);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->error_code, over->error_code);
  EXPECT_NE(again->record_json.find("\"maxRows\":2"), std::string::npos) << again->record_json;
  EXPECT_TRUE(GetRun(*ws, "01M00000000000000000000000").status().Is(ErrorCode::kNotFound));

  EXPECT_EQ(ParseLoadFormat("ndjson").value(), LoadFormat::kJsonLines);
  EXPECT_EQ(ParseBadRows("skipRows").value(), BadRows::kSkipRows);
  EXPECT_TRUE(ParseBadRows("quarantine").status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(ParseLoadFormat("xml").status().Is(ErrorCode::kInvalidArgument));
}

TEST_F(ApiTest, BranchesRenamesDropsAndGrants) {
  std::unique_ptr<Workspace> ws = OpenNew("owner");
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{1, "a"}})).ok());

  ASSERT_TRUE(ws->CreateBranch("trial").ok());
  WriteOptions on_trial;
  on_trial.branch = "trial";
  ASSERT_TRUE(ws->Write("events", Rows({{2, "b"}}), on_trial).ok());
  ScanOptions trial;
  trial.branch = "trial";
  EXPECT_EQ(CountRows(*ws, "events", trial), 2);
  EXPECT_EQ(CountRows(*ws, "events"), 1);
  EXPECT_EQ(ws->ListBranches().value(), (std::vector<std::string>{"main", "trial"}));

  // A principal without a grant is refused; with writer it writes.
  OpenOptions bob;
  bob.principal = "bob";
  std::unique_ptr<Workspace> as_bob = Workspace::Open((dir_ / "ws").string(), bob).value();
  Result<Commit> denied = as_bob->Write("events", Rows({{5, "e"}}));
  ASSERT_FALSE(denied.ok());
  EXPECT_TRUE(denied.status().Is(ErrorCode::kPermissionDenied)) << denied.status().ToString();
  ASSERT_TRUE(ws->SetGrant("events", "bob", Role::kWriter).ok());
  ASSERT_TRUE(as_bob->Write("events", Rows({{5, "e"}})).ok());

  ASSERT_TRUE(ws->RenameTable("events", "clicks").ok());
  Result<std::vector<TableEvent>> history = ws->History("clicks");
  ASSERT_TRUE(history.ok()) << history.status().ToString();
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->back().event, "table_rename");
  EXPECT_EQ(history->back().detail, "events -> clicks");

  ASSERT_TRUE(ws->DropTable("clicks").ok());
  Result<TableInfo> gone = ws->DescribeTable("clicks");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.status().Is(ErrorCode::kNotFound));
  EXPECT_EQ(ws->ListTables().value().size(), 0u);
  EXPECT_TRUE(ws->DeleteBranch("trial").ok());
}

TEST_F(ApiTest, AStaleExpectedVersionAndAValidationOnlyLoadChangeNothing) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  Result<Commit> first = ws->Write("events", Rows({{1, "a"}}));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  WriteOptions stale;
  stale.expected_table_version = first->table_version - 1;
  Result<Commit> refused = ws->Write("events", Rows({{2, "b"}}), stale);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().Is(ErrorCode::kPreconditionFailed)) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("expected_table_version"), std::string::npos);
  EXPECT_EQ(ws->DescribeTable("events")->version, first->table_version);

  LoadRequest check;
  check.table = "events";
  check.files = {WriteFile("more.jsonl", "{\"id\":5,\"name\":\"e\"}\n{\"id\":6}\n")};
  check.bad_rows = BadRows::kValidationOnly;
  Result<LoadResult> run = Load(*ws, check);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  EXPECT_EQ(run->state, "succeeded") << run->error;
  EXPECT_EQ(run->rows_read, 2);
  EXPECT_EQ(run->workspace_version, 0u);  // nothing committed
  EXPECT_EQ(ws->DescribeTable("events")->version, first->table_version);

  // Every table, streamed file by file.
  ASSERT_TRUE(ws->CreateTable("other", Events()).ok());
  Result<std::vector<TableInfo>> tables = ws->ListTables();
  ASSERT_TRUE(tables.ok()) << tables.status().ToString();
  ASSERT_EQ(tables->size(), 2u);
  EXPECT_EQ((*tables)[0].name, "events");
  EXPECT_EQ((*tables)[1].name, "other");
  int64_t streamed = 0;
  ASSERT_TRUE(ScanEach(*ws, "events", {}, [&](const RecordBatch& b) {
                streamed += b.num_rows();
                return Status::OK();
              }).ok());
  EXPECT_EQ(streamed, 1);
  const Status stop =
      ScanEach(*ws, "events", {}, [](const RecordBatch&) { return Status::Aborted("enough"); });
  EXPECT_TRUE(stop.IsAborted()) << stop.ToString();
}

TEST_F(ApiTest, KeyedTablesKeepOneRowPerKeyAndOnlyAdminsChangeTables) {
  std::unique_ptr<Workspace> ws = OpenNew("owner");
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{1, "a"}})).ok());
  ASSERT_TRUE(ws->Write("events", Rows({{2, "b"}})).ok());  // a second file
  const int64_t version = ws->DescribeTable("events")->version;

  Result<Commit> held = ws->Write("events", Rows({{3, "c"}, {1, "again"}}));
  ASSERT_FALSE(held.ok());
  EXPECT_TRUE(held.status().Is(ErrorCode::kDuplicateKey)) << held.status().ToString();
  EXPECT_NE(held.status().message().find("already holds a row with the key"), std::string::npos);
  Result<Commit> repeated = ws->Write("events", Rows({{4, "d"}, {4, "e"}}), {});
  ASSERT_FALSE(repeated.ok());
  EXPECT_TRUE(repeated.status().Is(ErrorCode::kDuplicateKey)) << repeated.status().ToString();
  WriteOptions replace;
  replace.mode = LoadMode::kReplace;
  EXPECT_TRUE(ws->Write("events", Rows({{7, "x"}, {7, "y"}}), replace)
                  .status()
                  .Is(ErrorCode::kDuplicateKey));
  EXPECT_EQ(ws->DescribeTable("events")->version, version);
  EXPECT_EQ(CountRows(*ws, "events"), 2);

  // The limit is the scan's, not each file's.
  ScanOptions one;
  one.limit = 1;
  int64_t streamed = 0;
  ASSERT_TRUE(ScanEach(*ws, "events", one, [&](const RecordBatch& b) {
                streamed += b.num_rows();
                return Status::OK();
              }).ok());
  EXPECT_EQ(streamed, 1);

  // A writer may write rows, not rename, drop or grant.
  ASSERT_TRUE(ws->SetGrant("events", "bob", Role::kWriter).ok());
  OpenOptions bob;
  bob.principal = "bob";
  std::unique_ptr<Workspace> as_bob = Workspace::Open((dir_ / "ws").string(), bob).value();
  EXPECT_TRUE(as_bob->Write("events", Rows({{5, "e"}})).ok());
  const Status rename = as_bob->RenameTable("events", "mine").status();
  EXPECT_TRUE(rename.Is(ErrorCode::kPermissionDenied)) << rename.ToString();
  EXPECT_TRUE(as_bob->DropTable("events").status().Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(as_bob->SetGrant("events", "bob", Role::kAdmin).Is(ErrorCode::kPermissionDenied));
  EXPECT_TRUE(
      as_bob->Write("events", Rows({{6, "f"}}), replace).status().Is(ErrorCode::kPermissionDenied));
  EXPECT_EQ(ws->ListTables().value().at(0).name, "events");
  EXPECT_EQ(CountRows(*ws, "events"), 3);

  const Status main = ws->DeleteBranch("main");
  ASSERT_FALSE(main.ok());
  EXPECT_TRUE(main.Is(ErrorCode::kInvalidArgument)) << main.ToString();
}

// The ingestion service embedded: exactly once per key, bad data and refusals
// leave the table as it was, the queue worked by the caller.
TEST_F(ApiTest, TheEmbeddedServiceLoadsEachSubmissionOnce) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  Result<std::unique_ptr<Service>> weak = Service::Start(*ws, {.workers = 0});
  ASSERT_FALSE(weak.ok());
  EXPECT_TRUE(weak.status().Is(ErrorCode::kInvalidArgument)) << weak.status().ToString();
  EXPECT_NE(weak.status().message().find("upload secret"), std::string::npos);
  const std::string secret(32, 's');
  Result<std::unique_ptr<Service>> started =
      Service::Start(*ws, {.workers = 0, .upload_secret = secret});
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  Service& svc = **started;
  Result<std::string> pipeline =
      svc.CreatePipeline(R"({"name":"events-in","table":"events","mode":"upsert","format":"csv"})");
  ASSERT_TRUE(pipeline.ok()) << pipeline.status().ToString();

  const std::string data = "id,name\n1,a\n2,b\n";
  Result<RunInfo> first = svc.Submit(*pipeline, "day-1", "text/csv", data);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->state, "queued");
  EXPECT_FALSE(first->terminal);
  EXPECT_EQ(CountRows(*ws, "events"), 0);
  ASSERT_TRUE(svc.WorkOnce().value());
  Result<RunInfo> done = svc.GetRun(first->id);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state, "succeeded");
  EXPECT_TRUE(done->terminal);
  EXPECT_EQ(done->counters.inserted, 2);
  EXPECT_FALSE(done->commit_id.empty());
  EXPECT_EQ(CountRows(*ws, "events"), 2);

  // The same key and bytes: the first run again, no new work.
  Result<RunInfo> again = svc.Submit(*pipeline, "day-1", "text/csv", data);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->id, first->id);
  EXPECT_FALSE(svc.WorkOnce().value());
  Result<RunInfo> other = svc.Submit(*pipeline, "day-1", "text/csv", "id,name\n9,z\n");
  ASSERT_FALSE(other.ok());
  EXPECT_TRUE(other.status().Is(ErrorCode::kIdempotencyKeyReused)) << other.status().ToString();

  // A bad row fails its run; the table keeps its rows.
  Result<RunInfo> bad = svc.Submit(*pipeline, "day-2", "text/csv", "id,name\nx,c\n");
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  ASSERT_TRUE(svc.WorkOnce().value());
  Result<RunInfo> failed = svc.GetRun(bad->id);
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->state, "failed");
  EXPECT_EQ(failed->error_code, "validation_failed") << failed->error;
  EXPECT_EQ(CountRows(*ws, "events"), 2);

  // A queued run can be cancelled; a succeeded one reverted.
  Result<RunInfo> queued = svc.Submit(*pipeline, "day-3", "text/csv", "id,name\n3,c\n");
  ASSERT_TRUE(queued.ok());
  Result<RunInfo> cancelled = svc.CancelRun(queued->id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->state, "cancelled");
  EXPECT_FALSE(svc.WorkOnce().value());
  Result<std::vector<RunInfo>> runs = svc.ListRuns(*pipeline);
  ASSERT_TRUE(runs.ok()) << runs.status().ToString();
  ASSERT_EQ(runs->size(), 3u);
  EXPECT_EQ((*runs)[0].id, cancelled->id);  // newest first
  EXPECT_EQ((*runs)[2].id, first->id);
  Result<Commit> reverted = svc.RevertRun(first->id);
  ASSERT_TRUE(reverted.ok()) << reverted.status().ToString();
  EXPECT_EQ(CountRows(*ws, "events"), 0);
}

TEST_F(ApiTest, TheEmbeddedServiceChecksTheWorkspacesPrincipal) {
  std::unique_ptr<Workspace> owner = OpenNew();
  ASSERT_NE(owner, nullptr);
  ASSERT_TRUE(owner->CreateTable("events", Events(), {"id"}).ok());
  OpenOptions as_bob;
  as_bob.principal = "bob";
  std::unique_ptr<Workspace> bob = Workspace::Open((dir_ / "ws").string(), as_bob).value();
  const ServiceOptions options{.workers = 0, .upload_secret = std::string(32, 's')};
  std::unique_ptr<Service> svc = Service::Start(*bob, options).value();
  Result<std::string> denied =
      svc->CreatePipeline(R"({"name":"p","table":"events","mode":"append","format":"csv"})");
  ASSERT_FALSE(denied.ok());
  EXPECT_TRUE(denied.status().Is(ErrorCode::kPermissionDenied)) << denied.status().ToString();
  ASSERT_TRUE(owner->SetGrant("events", "bob", Role::kWriter).ok());
  Result<std::string> allowed =
      svc->CreatePipeline(R"({"name":"p","table":"events","mode":"append","format":"csv"})");
  ASSERT_TRUE(allowed.ok()) << allowed.status().ToString();
  ASSERT_TRUE(svc->Submit(*allowed, "k", "text/csv", "id,name\n1,a\n").ok());
  ASSERT_TRUE(svc->WorkOnce().value());
  EXPECT_EQ(CountRows(*owner, "events"), 1);
}

// Maintenance as an embedding program runs it: one holder of the lease
// compacts, the rows stay, and refused settings change nothing.
TEST_F(ApiTest, MaintenanceCompactsUnderOneLeaseAndKeepsTheRows) {
  std::unique_ptr<Workspace> ws = OpenNew();
  ASSERT_NE(ws, nullptr);
  ASSERT_TRUE(ws->CreateTable("events", Events(), {"id"}).ok());
  for (int64_t i = 0; i < 20; ++i) {
    ASSERT_TRUE(ws->Write("events", Rows({{i, "r"}})).ok());  // a fragment each
  }
  MaintainerOptions options;
  options.min_fragments = 16;
  std::unique_ptr<Maintainer> first = Maintainer::Create(*ws, options).value();
  std::unique_ptr<Maintainer> second = Maintainer::Create(*ws, options).value();
  Result<MaintenancePass> pass = first->RunOnce();
  ASSERT_TRUE(pass.ok()) << pass.status().ToString();
  EXPECT_TRUE(pass->lease_held);
  EXPECT_EQ(pass->compacted, 1);
  EXPECT_EQ(pass->fragments_removed, 20);
  EXPECT_EQ(pass->fragments.at("events"), 1u);
  EXPECT_EQ(pass->retention.window_seconds, 604800);
  Result<MaintenancePass> other = second->RunOnce();
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE(other->lease_held);
  EXPECT_EQ(other->tables, 0);
  ASSERT_TRUE(first->Release().ok());
  EXPECT_TRUE(second->RunOnce().value().lease_held);
  EXPECT_EQ(CountRows(*ws, "events"), 20);

  Result<std::vector<TableCompaction>> missing = CompactTables(*ws, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().Is(ErrorCode::kNotFound)) << missing.status().ToString();
  Status short_window = SetRetentionWindow(*ws, 30);
  EXPECT_TRUE(short_window.Is(ErrorCode::kInvalidArgument)) << short_window.ToString();
  EXPECT_EQ(GetRetention(*ws).value().window_seconds, 604800);
  Result<HeadsCheck> heads = VerifyHeads(*ws);
  ASSERT_TRUE(heads.ok()) << heads.status().ToString();
  EXPECT_TRUE(heads->problems.empty());
  EXPECT_EQ(heads->tables_checked, 1);
  Result<HeadsCheck> repaired = RepairHeads(*ws);
  ASSERT_TRUE(repaired.ok()) << repaired.status().ToString();
  EXPECT_TRUE(repaired->repaired.empty());
  Result<ExpiryReport> expired = ApplyRetention(*ws, -1);
  EXPECT_TRUE(expired.status().Is(ErrorCode::kInvalidArgument));
}

}  // namespace
}  // namespace loam
