// Delete runs: rows removed by filter or by a keys file, validated first,
// in one commit recorded as the run's.
#include <gtest/gtest.h>

#include <map>

#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "ingest/row_deletes.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

class LoaderDeleteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = NewLoaderWorkspace(store_);
    const Schema people{{{"id", DataType::Int64(), false},
                         {"city", DataType::String()},
                         {"age", DataType::Int64()}}};
    ASSERT_TRUE(ws_->CreateTable("people", people, {"id"}).ok());
    ASSERT_TRUE(ws_->CreateTable("visits", people, {}).ok());
    for (const char* table : {"people", "visits"}) {
      files_["rows.csv"] = "id,city,age\n1,oslo,30\n2,rome,41\n3,oslo,25\n4,lima,60\n";
      RunRequest r = Request(table, LoadMode::kAppend);
      r.files = {"rows.csv"};
      ASSERT_EQ(Run(r).state, RunState::kSucceeded);
    }
  }

  LoaderOptions Options() {
    LoaderOptions o;
    o.open_input = [this](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      auto it = files_.find(file);
      if (it == files_.end()) return Status::NotFound("no input " + file);
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(it->second));
    };
    return o;
  }
  RunRequest Request(const std::string& table, LoadMode mode) {
    RunRequest r;
    r.table = table;
    r.mode = mode;
    r.principal = "owner";
    return r;
  }
  RunRequest Delete(std::vector<std::string> where, const std::string& table = "people") {
    RunRequest r = Request(table, LoadMode::kDelete);
    r.where = std::move(where);
    return r;
  }
  RunRequest DeleteKeys(const std::string& keys, const std::string& table = "people") {
    files_["keys.csv"] = keys;
    RunRequest r = Request(table, LoadMode::kDelete);
    r.files = {"keys.csv"};
    return r;
  }
  RunRecord Run(const RunRequest& r, LoaderOptions o) { return RunLoader(ws_, r, std::move(o)); }
  RunRecord Run(const RunRequest& r) { return Run(r, Options()); }
  // The ids of the table's rows, ascending, as "1 2 3".
  std::string Ids(const std::string& table = "people") {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, table).value().ReadAll().value();
    std::map<int64_t, int> ids;
    for (int64_t r = 0; r < all.num_rows(); ++r) ++ids[all.columns[0].GetInt64(r)];
    std::string out;
    for (const auto& [id, n] : ids) {
      for (int i = 0; i < n; ++i) out += (out.empty() ? "" : " ") + std::to_string(id);
    }
    return out;
  }
  int64_t Version(const std::string& table = "people") {
    return ws_->Current().value().Find(table)->head.table_version;
  }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
};

TEST_F(LoaderDeleteTest, AFilterDeletesEveryMatchingRowInOneCommitRecordedAsTheRun) {
  const int64_t before = Version();
  RunRecord r = Run(Delete({"city = oslo", "age >= 26"}));
  EXPECT_EQ(r.state, RunState::kSucceeded);
  EXPECT_EQ(r.counters.deleted, 1);
  EXPECT_EQ(Ids(), "2 3 4");
  EXPECT_EQ(r.table_version, before + 1);
  EXPECT_FALSE(r.commit_id.empty());
  EXPECT_TRUE(ws_->manifest().RunCommitted("", r.id).value());
  std::vector<TableHistoryEntry> h = ws_->History("people", "").value();
  EXPECT_EQ(h.back().table_version, before + 1);
  EXPECT_EQ(h.back().commit_id, r.commit_id);
}

TEST_F(LoaderDeleteTest, AKeysFileDeletesTheRowsHoldingItsKeysAndIgnoresUnknownOnes) {
  RunRecord r = Run(DeleteKeys("id\n1\n3\n99\n"));
  EXPECT_EQ(r.state, RunState::kSucceeded);
  EXPECT_EQ(r.counters.rows_read, 3);
  EXPECT_EQ(r.counters.deleted, 2);
  EXPECT_EQ(Ids(), "2 4");
  files_["keys.jsonl"] = "{\"id\": 4}\n";
  RunRequest j = Request("people", LoadMode::kDelete);
  j.files = {"keys.jsonl"};
  EXPECT_EQ(Run(j).counters.deleted, 1);
  EXPECT_EQ(Ids(), "2");
}

TEST_F(LoaderDeleteTest, AnUnkeyedTableIsDeletedFromByTheColumnsTheRequestNames) {
  RunRequest no_columns = DeleteKeys("city\noslo\n", "visits");
  RunRecord refused = Run(no_columns);
  EXPECT_EQ(refused.state, RunState::kFailed);
  EXPECT_NE(refused.error.find("declares no key columns"), std::string::npos) << refused.error;
  RunRequest by_city = DeleteKeys("city\noslo\nlima\n", "visits");
  by_city.keys = {"city"};
  RunRecord r = Run(by_city);
  EXPECT_EQ(r.counters.deleted, 3);  // two rows hold "oslo"
  EXPECT_EQ(Ids("visits"), "2");
  files_["nulls.jsonl"] = "{\"city\": null}\n";  // names no row: invalid, not "every null"
  RunRequest nulls = Request("visits", LoadMode::kDelete);
  nulls.files = {"nulls.jsonl"};
  nulls.keys = {"city"};
  EXPECT_EQ(Run(nulls).error_code, "validation_failed");
  for (std::vector<std::string> columns :
       {std::vector<std::string>{"city", "city"}, {"id", "size"}}) {
    RunRequest bad = DeleteKeys("city\noslo\n", "visits");
    bad.keys = columns;
    RunRecord bad_run = Run(bad);
    EXPECT_EQ(bad_run.state, RunState::kFailed) << bad_run.error;
    EXPECT_NE(bad_run.error.find("key column"), std::string::npos) << bad_run.error;
  }
  EXPECT_EQ(Ids("visits"), "2");
}

TEST_F(LoaderDeleteTest, InvalidKeysAreAllListedAndNothingIsDeleted) {
  const int64_t before = Version();
  RunRecord r = Run(DeleteKeys("id\nx\n2\n-\n"));
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "validation_failed");
  EXPECT_EQ(r.error_count, 2);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[1].line, 4);
  EXPECT_EQ(r.errors[0].column, "id");
  EXPECT_NE(r.error.find("1 more invalid key row"), std::string::npos) << r.error;
  EXPECT_EQ(r.counters.deleted, 0);
  EXPECT_EQ(Ids(), "1 2 3 4");
  EXPECT_EQ(Version(), before);
  RunRecord wrong = Run(DeleteKeys("city\noslo\n"));  // not the key column
  EXPECT_EQ(wrong.state, RunState::kFailed);
  EXPECT_NE(wrong.error.find("city"), std::string::npos) << wrong.error;
  EXPECT_EQ(Ids(), "1 2 3 4");
}

TEST_F(LoaderDeleteTest, ABadFilterFailsTheRunNamingItAndLeavesTheTable) {
  for (const char* where : {"height > 2", "age > old", "id ~ 3"}) {
    RunRecord r = Run(Delete({where}));
    EXPECT_EQ(r.state, RunState::kFailed) << where;
    EXPECT_EQ(r.error_code, "validation_failed") << where;
    EXPECT_NE(r.error.find(std::string("delete filter '") + where), std::string::npos) << r.error;
  }
  EXPECT_EQ(Ids(), "1 2 3 4");
}

TEST_F(LoaderDeleteTest, MoreKeysThanTheRunsLimitFailItWithNothingDeleted) {
  RunRequest r = DeleteKeys("id\n1\n2\n3\n");
  r.max_rows = 2;
  RunRecord rec = Run(r);
  EXPECT_EQ(rec.state, RunState::kFailed);
  EXPECT_EQ(rec.error_code, "limit_exceeded");
  EXPECT_NE(rec.error.find("keys-per-delete limit"), std::string::npos) << rec.error;
  EXPECT_EQ(Ids(), "1 2 3 4");
}

TEST_F(LoaderDeleteTest, ValidationOnlyCountsTheRowsAndDeletesNone) {
  RunRequest r = Delete({"city = oslo"});
  r.error_policy = ErrorPolicy::kValidationOnly;
  const int64_t before = Version();
  RunRecord rec = Run(r);
  EXPECT_EQ(rec.state, RunState::kSucceeded);
  EXPECT_TRUE(rec.validation_only);
  EXPECT_EQ(rec.counters.deleted, 2);
  EXPECT_EQ(Version(), before);
  EXPECT_EQ(Ids(), "1 2 3 4");
}

TEST_F(LoaderDeleteTest, ADeleteMatchingNothingSucceedsWithoutACommit) {
  const int64_t before = Version();
  RunRecord r = Run(Delete({"age > 100"}));
  EXPECT_EQ(r.state, RunState::kSucceeded);
  EXPECT_EQ(r.counters.deleted, 0);
  EXPECT_TRUE(r.commit_id.empty());
  EXPECT_EQ(Version(), before);
}

TEST_F(LoaderDeleteTest, AnExpectedTableVersionThatMovedRefusesTheDelete) {
  RunRequest r = Delete({"id = 1"});
  r.expected_table_version = Version() - 1;
  RunRecord rec = Run(r);
  EXPECT_EQ(rec.state, RunState::kFailed);
  EXPECT_EQ(rec.error_code, "precondition_failed");
  EXPECT_EQ(Ids(), "1 2 3 4");
}

// A row that matches, appended between the count and the commit, is found
// by the run's next attempt: the run deletes what matches at its commit.
TEST_F(LoaderDeleteTest, ARowAppendedBeforeTheCommitIsFoundAgainAndDeletedToo) {
  LoaderOptions o = Options();
  bool appended = false;
  o.failpoint = [&](std::string_view point) -> Status {
    if (point != failpoint::kRunBeforeCommit || appended) return Status::OK();
    appended = true;
    files_["late.csv"] = "id,city,age\n5,oslo,70\n";
    RunRequest late = Request("people", LoadMode::kAppend);
    late.files = {"late.csv"};
    EXPECT_EQ(Run(late).state, RunState::kSucceeded);
    return Status::OK();
  };
  RunRecord r = Run(Delete({"city = oslo"}), o);
  EXPECT_TRUE(appended);
  EXPECT_EQ(r.state, RunState::kSucceeded);
  EXPECT_EQ(r.counters.deleted, 3);
  EXPECT_EQ(Ids(), "2 4");
}

TEST_F(LoaderDeleteTest, TheRequestNamesFiltersOrKeysFilesNeverBoth) {
  RunRequest both = Delete({"id = 1"});
  both.files = {"keys.csv"};
  Result<RunRequest> back = RunRequest::FromJson(both.ToJson());
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.status().message().find("where"), std::string::npos) << back.status();
  RunRequest append = Request("people", LoadMode::kAppend);
  append.where = {"id = 1"};
  EXPECT_FALSE(RunRequest::FromJson(append.ToJson()).ok());
  RunRequest fine = Delete({"id = 1"});
  Result<RunRequest> again = RunRequest::FromJson(fine.ToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->where, fine.where);
  EXPECT_EQ(again->mode, LoadMode::kDelete);
}

}  // namespace
}  // namespace loam::ingest
