// Every invalid row at once: failRun and validationOnly validate on after
// an invalid row and list each (file, line, byte offset, column, code,
// reason; never a value) up to the run's max_errors; the record keeps the
// first kRecordErrors and RunStore::GetErrors every one.
#include <gtest/gtest.h>

#include <map>

#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

class RowErrorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    WorkspaceOptions o;
    o.owner = "owner";
    ws_ = WorkspaceEngine::Init(store_, "ws", o).value();
    const Schema events{{{"id", DataType::Int64(), false}, {"amount", DataType::Float64()}}};
    ASSERT_TRUE(ws_->CreateTable("events", events, {"id"}).ok());
  }

  RunRecord Load(const std::vector<std::string>& files, ErrorPolicy policy,
                 int64_t max_errors = RunRequest::kDefaultMaxErrors,
                 const std::function<void(RunRequest&)>& tweak = {}) {
    LoaderOptions o;
    o.skip_rows_enabled = true;
    o.batch_rows = batch_rows_;
    o.open_input = [this](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(files_.at(file)));
    };
    RunRequest r;
    r.table = "events";
    r.files = files;
    r.principal = "owner";
    r.error_policy = policy;
    r.max_errors = max_errors;
    if (tweak) tweak(r);
    return RunLoader(ws_, r, o);
  }

  int64_t Rows() {
    Snapshot snap = ws_->Current().value();
    return ws_->OpenTable(snap, "events").value().ReadAll().value().num_rows();
  }

  // Every object of the workspace but its control records: a failed run
  // leaves these as they were.
  std::vector<std::string> DataObjects() {
    std::vector<std::string> keys;
    for (const ObjectInfo& o : store_->ListAll("ws/").value()) {
      if (o.key.rfind("ws/_control/", 0) != 0) keys.push_back(o.key);
    }
    return keys;
  }

  std::vector<RunError> AllErrors(const RunRecord& r) {
    return RunStore(store_, "ws").GetErrors(r).value();
  }

  // `n` rows; every row whose number is in `bad` has an invalid amount.
  static std::string Csv(int n, const std::vector<int>& bad) {
    std::string out = "id,amount\n";
    for (int i = 1; i <= n; ++i) {
      const bool invalid = std::find(bad.begin(), bad.end(), i) != bad.end();
      out += std::to_string(i) + "," + (invalid ? "lots" : std::to_string(i) + ".5") + "\n";
    }
    return out;
  }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
  size_t batch_rows_ = 1 << 16;
};

TEST_F(RowErrorsTest, AFailedRunListsEveryInvalidRowWithItsPosition) {
  files_["a.csv"] = Csv(6, {2, 5});
  files_["b.jsonl"] =
      "{\"id\":7,\"amount\":1.5}\n{\"id\":8,\"amount\":\"x\"}\n{\"id\":9,\"nope\":1}\n";
  RunRecord r = Load({"a.csv", "b.jsonl"}, ErrorPolicy::kFailRun);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "validation_failed");
  EXPECT_NE(r.error.find("a.csv: line 3, column 2 ('amount', float64)"), std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("and 3 more invalid rows"), std::string::npos) << r.error;
  EXPECT_EQ(r.counters.rows_read, 9);  // every row was read, valid or not
  ASSERT_EQ(r.error_count, 4);
  ASSERT_EQ(r.errors.size(), 4u);
  const RunError& first = r.errors[0];
  EXPECT_EQ(first.file, "a.csv");
  EXPECT_EQ(first.line, 3);
  EXPECT_EQ(first.offset, static_cast<int64_t>(std::string("id,amount\n1,1.5\n").size()));
  EXPECT_EQ(first.column, "amount");
  EXPECT_EQ(first.code, "validation_failed");
  EXPECT_EQ(first.reason.find("lots"), std::string::npos);  // never the value
  EXPECT_EQ(r.errors[1].line, 6);
  EXPECT_EQ(r.errors[2].file, "b.jsonl");
  EXPECT_EQ(r.errors[2].line, 2);
  EXPECT_EQ(r.errors[2].offset, 22);
  EXPECT_EQ(r.errors[2].column, "amount");
  EXPECT_EQ(r.errors[3].line, 3);
  EXPECT_EQ(r.errors[3].column, "");  // a key that is no column
  EXPECT_EQ(Rows(), 0);
}

TEST_F(RowErrorsTest, ValidationOnlyListsThemTooAndWritesNothing) {
  files_["a.csv"] = Csv(4, {1, 4});
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kValidationOnly);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_TRUE(r.validation_only);
  ASSERT_EQ(r.error_count, 2);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[1].line, 5);
  EXPECT_EQ(Rows(), 0);
}

TEST_F(RowErrorsTest, ValidationStopsAtMaxErrors) {
  files_["a.csv"] = Csv(10, {2, 4, 6, 8});
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kFailRun, 3);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "validation_failed");
  EXPECT_NE(r.error.find("validation stopped at 3 errors, the maxErrors limit"), std::string::npos)
      << r.error;
  ASSERT_EQ(r.error_count, 3);
  EXPECT_EQ(r.errors[2].line, 7);

  // One allowed: the first invalid row ends the run, as it always did.
  RunRecord one = Load({"a.csv"}, ErrorPolicy::kFailRun, 1);
  EXPECT_EQ(one.error_count, 1);
  EXPECT_EQ(one.error.find("more invalid"), std::string::npos) << one.error;
  EXPECT_EQ(Rows(), 0);
}

TEST_F(RowErrorsTest, MoreErrorsThanTheRecordHoldsAreKeptNextToIt) {
  std::vector<int> bad;
  for (int i = 3; i <= 300; i += 12) bad.push_back(i);  // 25 invalid rows
  files_["a.csv"] = Csv(300, bad);
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kFailRun);
  ASSERT_EQ(r.error_count, 25);
  EXPECT_EQ(r.errors.size(), kRecordErrors);
  const std::vector<RunError> all = AllErrors(r);
  ASSERT_EQ(all.size(), 25u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].line, bad[i] + 1) << i;  // in input order; the header is line 1
    EXPECT_EQ(all[i].column, "amount");
  }
  // The stored record reads back with them, and retention removes both.
  RunStore runs(store_, "ws");
  RunRecord back = runs.Get(r.id).value();
  EXPECT_EQ(back.error_count, 25);
  EXPECT_EQ(back.errors[9].line, all[9].line);
  ASSERT_TRUE(runs.Delete(back).ok());
  EXPECT_TRUE(store_->Get("ws/_control/run-errors/" + r.id + ".jsonl").status().IsNotFound());
  EXPECT_EQ(Rows(), 0);
}

TEST_F(RowErrorsTest, SkipRowsKeepsEveryRejectedPositionUpToMaxErrors) {
  files_["a.csv"] = Csv(40, {1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 40});
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kSkipRows, 5);
  EXPECT_EQ(r.state, RunState::kPartial) << r.error;
  EXPECT_EQ(r.counters.rejected, 11);  // counted, all of them
  EXPECT_EQ(r.counters.rows_read, 40);
  EXPECT_EQ(r.counters.inserted, 29);
  ASSERT_EQ(r.error_count, 5);  // positions kept: the first five
  EXPECT_EQ(AllErrors(r).back().line, 18);
  EXPECT_EQ(Rows(), 29);
}

// A record with too few or too many fields was read whole: it is one
// invalid row, and the records after it are read on.
TEST_F(RowErrorsTest, ARecordWithAnotherNumberOfFieldsIsOneInvalidRow) {
  files_["a.csv"] = "id,amount\n1,1.5\n2\n3,x\n4,4.5,extra\n5,5.5\n";
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kFailRun);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "validation_failed");
  EXPECT_NE(r.error.find("a.csv: CSV line 3, column 2: record has 1 fields but the header has 2"),
            std::string::npos)
      << r.error;
  ASSERT_EQ(r.error_count, 3);
  EXPECT_EQ(r.errors[0].line, 3);
  EXPECT_EQ(r.errors[0].offset, static_cast<int64_t>(std::string("id,amount\n1,1.5\n").size()));
  EXPECT_EQ(r.errors[0].column, "");
  EXPECT_EQ(r.errors[1].column, "amount");
  EXPECT_EQ(r.errors[2].line, 5);
  EXPECT_EQ(r.counters.rows_read, 5);
  EXPECT_EQ(Rows(), 0);

  RunRecord skip = Load({"a.csv"}, ErrorPolicy::kSkipRows);
  EXPECT_EQ(skip.state, RunState::kPartial) << skip.error;
  EXPECT_EQ(skip.counters.rejected, 3);
  EXPECT_EQ(Rows(), 2);
}

TEST_F(RowErrorsTest, AStructuralErrorEndsTheRunWithTheRowsFoundBeforeIt) {
  files_["a.csv"] = "id,amount\n1,x\n2,2.5\n3,\"unclosed\n";
  RunRecord r = Load({"a.csv"}, ErrorPolicy::kFailRun);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_NE(r.error.find("quote"), std::string::npos) << r.error;
  ASSERT_EQ(r.error_count, 2);
  EXPECT_EQ(r.errors[0].line, 2);
  EXPECT_EQ(r.errors[0].column, "amount");
  EXPECT_EQ(r.errors[1].reason, r.error);  // the error that ended it, last
  EXPECT_EQ(Rows(), 0);
}

// Batches parse ahead of the run on their own thread: what a run reports
// must not depend on how far ahead they got.
TEST_F(RowErrorsTest, ManyBatchesGiveTheSameAnswerEveryTime) {
  batch_rows_ = 4;
  const std::vector<std::string> before = DataObjects();
  std::vector<int> bad;
  for (int i = 101; i <= 200; i += 9) bad.push_back(i);  // 12 invalid rows
  std::string keyed = Csv(200, bad);
  keyed.replace(keyed.find("\n2,"), 3, "\n1,");  // a duplicate key in the first batch
  files_["dup.csv"] = keyed;
  files_["late.csv"] = Csv(200, bad);
  for (int i = 0; i < 10; ++i) {
    RunRecord dup = Load({"dup.csv"}, ErrorPolicy::kFailRun);
    EXPECT_EQ(dup.error_code, "duplicate_key") << dup.error;  // met before any invalid row
    EXPECT_EQ(dup.error_count, 1);
    RunRecord late = Load({"late.csv"}, ErrorPolicy::kFailRun);
    EXPECT_EQ(late.error_code, "validation_failed") << late.error;
    EXPECT_EQ(late.error_count, 12);  // rows staged before the first are discarded
    EXPECT_EQ(late.counters.rows_read, 200);
    EXPECT_EQ(AllErrors(late).back().line, 201);
    RunRecord capped = Load({"late.csv"}, ErrorPolicy::kFailRun, 5);
    EXPECT_EQ(capped.error_count, 5);
    EXPECT_EQ(capped.errors.back().line, bad[4] + 1);
  }
  EXPECT_EQ(DataObjects(), before);  // nothing staged was left behind
  EXPECT_EQ(Rows(), 0);
}

// Rows left out can fill a batch's bytes: the rows after them still load.
TEST_F(RowErrorsTest, ABatchOfOnlyRejectedRowsIsNoEndOfInput) {
  std::vector<int> bad;
  for (int i = 1; i <= 60; ++i) bad.push_back(i);
  files_["a.csv"] = Csv(65, bad);
  std::string jsonl;
  for (int i = 0; i < 20; ++i) jsonl += "{\"id\":\"x\"}\n";
  files_["b.jsonl"] = jsonl + "{\"id\":1}\n";
  const auto small_batches = [](RunRequest& r) { r.limits.batch_bytes = 64; };
  RunRecord r = Load({"a.csv", "b.jsonl"}, ErrorPolicy::kSkipRows, RunRequest::kDefaultMaxErrors,
                     small_batches);
  EXPECT_EQ(r.state, RunState::kPartial) << r.error;
  EXPECT_EQ(r.counters.rejected, 80);
  EXPECT_EQ(r.counters.inserted, 6);
  EXPECT_EQ(Rows(), 6);
  files_["c.csv"] = Csv(65, bad);
  RunRecord f = Load({"c.csv"}, ErrorPolicy::kFailRun, 1000, small_batches);
  EXPECT_EQ(f.error_count, 60);
  EXPECT_EQ(f.counters.rows_read, 65);
}

TEST(RunErrorsFormatTest, RecordsWithoutPositionsReadBack) {
  // A record written before errors carried positions: file and reason only.
  RunRecord r;
  r.id = "01J00000000000000000000000";
  r.request = "{}";
  r.errors = {{"a.csv", "a.csv: line 2: bad"}};
  r.error_count = 1;
  std::string text = r.ToJson();
  for (const char* key : {",\"line\":0", ",\"offset\":-1", ",\"column\":\"\"", "\"code\":\"\",",
                          ",\"errorCount\":1"}) {
    const size_t at = text.find(key);
    ASSERT_NE(at, std::string::npos) << key << " in " << text;
    text.erase(at, std::string(key).size());
  }
  RunRecord back = RunRecord::FromJson(text).value();
  ASSERT_EQ(back.errors.size(), 1u);
  EXPECT_EQ(back.errors[0].reason, "a.csv: line 2: bad");
  EXPECT_EQ(back.errors[0].line, 0);
  EXPECT_EQ(back.errors[0].offset, -1);
  EXPECT_EQ(back.error_count, 1);

  // A request at the default max_errors keeps its text (idempotency compares it).
  RunRequest q;
  EXPECT_EQ(q.ToJson().find("maxErrors"), std::string::npos);
  q.max_errors = 5;
  EXPECT_EQ(RunRequest::FromJson(q.ToJson()).value().max_errors, 5);
  q.max_errors = 0;
  EXPECT_TRUE(RunRequest::FromJson(q.ToJson()).status().IsInvalidArgument());
}

}  // namespace
}  // namespace loam::ingest
