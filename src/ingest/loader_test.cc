#include "ingest/loader.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/status_macros.h"
#include "engine/retention.h"
#include "ingest/loader_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

// A commit that takes longer than the lease keeps it: the loader renews it
// from another thread while the write runs, so no other process takes over.
TEST_F(LoaderTest, TheLeaseIsRenewedWhileTheCommitRuns) {
  files_["a.csv"] = "id,name,balance\n1,ann,1.00\n";
  std::mutex mu;
  std::condition_variable renewed;
  bool in_commit = false;
  int renewals = 0;
  LoaderOptions o = Options();
  o.lease_micros = 30'000;  // renewed every 10 ms
  o.on_progress = [&](const RunRecord& r) {
    std::lock_guard lock(mu);
    if (in_commit && r.state == RunState::kCommitting) {
      ++renewals;
      renewed.notify_all();
    }
  };
  WorkspaceOptions wo;
  wo.owner = "owner";
  wo.recovery_grace_micros = 0;
  wo.failpoint = [&](std::string_view point) {
    if (point == loam::failpoint::kAfterTableCommit) {
      std::unique_lock lock(mu);
      in_commit = true;
      // The commit "hangs" here until the lease was renewed twice.
      EXPECT_TRUE(renewed.wait_for(lock, std::chrono::seconds(30), [&] { return renewals >= 2; }));
      in_commit = false;
    }
    return Status::OK();
  };
  ws_ = WorkspaceEngine::Open(store_, "ws", wo).value();
  const RunRecord r = Load(Request(LoadMode::kAppend, {"a.csv"}), o);
  EXPECT_EQ(r.state, RunState::kSucceeded) << r.error;
  EXPECT_GE(renewals, 2);
  EXPECT_EQ(Contents(), "1:ann:100 ");
}

TEST_F(LoaderTest, AppendUpsertReplaceCountAndCommitOnce) {
  files_["a.csv"] = "id,name,balance\n1,ann,1.00\n2,bob,2.00\n3,cy,3.00\n";
  RunRecord a = Load(Request(LoadMode::kAppend, {"a.csv"}));
  EXPECT_EQ(a.state, RunState::kSucceeded);
  EXPECT_EQ(a.counters.rows_read, 3);
  EXPECT_EQ(a.counters.inserted, 3);
  EXPECT_FALSE(a.commit_id.empty());
  EXPECT_EQ(Contents(), "1:ann:100 2:bob:200 3:cy:300 ");

  files_["u.jsonl"] = R"({"id":2,"name":"bob","balance":2.00}
{"id":3,"name":"cyd","balance":3.50}
{"id":4,"name":"dee"}
)";
  RunRecord u = Load(Request(LoadMode::kUpsert, {"u.jsonl"}));
  EXPECT_EQ(u.state, RunState::kSucceeded) << u.error;
  EXPECT_EQ(u.counters.inserted, 1);
  EXPECT_EQ(u.counters.updated, 1);
  EXPECT_EQ(u.counters.unchanged, 1);
  EXPECT_EQ(Contents(), "1:ann:100 2:bob:200 3:cyd:350 4:dee:null ");

  // The run's commit is recorded in the journal exactly once, with its id.
  auto row = ws_->manifest().FindJournalRow("", RunCommitId(u.id)).value();
  ASSERT_TRUE(row.has_value());
  EXPECT_NE(row->metadata.find(u.commit_id), std::string::npos);

  files_["r.csv"] = "id,name,balance\n9,zed,9.99\n";
  RunRequest replace = Request(LoadMode::kReplace, {"r.csv"});
  RunRecord r = Load(replace);
  EXPECT_EQ(r.state, RunState::kSucceeded);
  EXPECT_EQ(r.counters.inserted, 1);
  EXPECT_EQ(r.counters.deleted, 4);
  EXPECT_EQ(Contents(), "9:zed:999 ");
  // Replace keeps the table's identity.
  EXPECT_EQ(ws_->Current().value().Find("accounts")->def.sid, r.table_sid);
}

TEST_F(LoaderTest, OneBadRowAnywhereLeavesTheTableUnchanged) {
  files_["a.csv"] = "id,name,balance\n1,ann,1.00\n";
  Load(Request(LoadMode::kAppend, {"a.csv"}));
  const std::string before = Contents();
  const int64_t version = Version();
  const std::vector<std::string> objects = Objects();
  // The bad value is in the second file, after 1,000 good rows (staged as
  // fragments of 100 rows before the bad one is met).
  std::string good = "id,name,balance\n";
  for (int i = 10; i < 1010; ++i) good += std::to_string(i) + ",n,1.00\n";
  files_["good.csv"] = good;
  files_["bad.csv"] = "id,name,balance\n5000,x,1.00\n5001,y,12345678901.00\n";
  LoaderOptions small = Options();
  small.batch_rows = 100;
  RunRecord f = Load(Request(LoadMode::kAppend, {"good.csv", "bad.csv"}), small);
  EXPECT_EQ(f.state, RunState::kFailed);
  EXPECT_EQ(f.error_code, "validation_failed");
  EXPECT_NE(f.error.find("bad.csv: line 3, column 3 ('balance', decimal(10,2)): does not fit"),
            std::string::npos)
      << f.error;
  EXPECT_EQ(Contents(), before);
  EXPECT_EQ(Version(), version);
  EXPECT_EQ(Objects(), objects);  // staged fragments were deleted again
  // The durable record names the position, never the rejected value.
  std::string stored = store_->Get("ws/_control/runs/" + f.id + ".json").value();
  EXPECT_EQ(stored.find("12345678901"), std::string::npos) << stored;
  EXPECT_NE(stored.find("line 3, column 3"), std::string::npos);
}

TEST_F(LoaderTest, DuplicateUpsertKeysNameBothRows) {
  files_["a.csv"] = "id,name\n1,a\n2,b\n";
  files_["b.csv"] = "id,name\n7,c\n2,d\n";
  RunRecord f = Load(Request(LoadMode::kUpsert, {"a.csv", "b.csv"}));
  EXPECT_EQ(f.state, RunState::kFailed);
  EXPECT_NE(
      f.error.find("duplicate upsert key: a.csv line 3 and b.csv line 3 have the same key (id)"),
      std::string::npos)
      << f.error;
  EXPECT_EQ(Contents(), "");
}

// Keys are hashed, prefetched and probed 32 rows at a time: matches, a
// duplicate and a null key just past a chunk's end are still found, in a
// batch whose length is not a multiple of 32.
TEST_F(LoaderTest, UpsertKeysAreCheckedAcrossProbeChunks) {
  std::string table = "id,name,balance\n";
  for (int id = 1; id <= 100; ++id)
    table += std::to_string(id) + ",n" + std::to_string(id) + ",1.00\n";
  files_["t.csv"] = table;
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"t.csv"})).state, RunState::kSucceeded);
  // Ids 51..120: 50 in the table (odd ones unchanged, even ones renamed), 20 new.
  std::string change = "id,name,balance\n";
  for (int id = 51; id <= 120; ++id) {
    change += std::to_string(id) + ",n" + std::to_string(id) + (id % 2 == 0 ? "x" : "") + ",1.00\n";
  }
  files_["u.csv"] = change;
  RunRecord u = Load(Request(LoadMode::kUpsert, {"u.csv"}));
  ASSERT_EQ(u.state, RunState::kSucceeded) << u.error;
  EXPECT_EQ(u.counters.unchanged, 25);
  EXPECT_EQ(u.counters.updated, 25);
  EXPECT_EQ(u.counters.inserted, 20);
  const std::string after = Contents();
  EXPECT_NE(after.find("52:n52x:100 53:n53:100 "), std::string::npos) << after;
  EXPECT_NE(after.find("119:n119:100 120:n120x:100 "), std::string::npos) << after;

  // Rows 31 and 32 of the batch (lines 33 and 34): the last of one chunk
  // and the first of the next.
  std::string dup = "id,name,balance\n";
  for (int r = 0; r < 40; ++r) dup += std::to_string(r == 32 ? 1031 : 1000 + r) + ",d,1.00\n";
  files_["d.csv"] = dup;
  RunRecord d = Load(Request(LoadMode::kUpsert, {"d.csv"}));
  EXPECT_EQ(d.state, RunState::kFailed);
  EXPECT_NE(d.error.find("d.csv line 33 and d.csv line 34 have the same key"), std::string::npos)
      << d.error;

  // Keyed on the nullable name: refused on the keyed table (it matches on
  // its declared key); on an unkeyed one row 35 (line 37) has none.
  std::string nulls = "id,name,balance\n";
  for (int r = 0; r < 40; ++r)
    nulls += std::to_string(2000 + r) + "," + (r == 35 ? "" : "m" + std::to_string(r)) + ",1.00\n";
  files_["n.csv"] = nulls;
  RunRequest by_name = Request(LoadMode::kUpsert, {"n.csv"});
  by_name.keys = {"name"};
  RunRecord other_key = Load(by_name);
  EXPECT_EQ(other_key.state, RunState::kFailed);
  EXPECT_NE(other_key.error.find("must match on its declared key (id)"), std::string::npos)
      << other_key.error;
  ASSERT_TRUE(ws_->CreateTable("loose", Accounts(), {}).ok());
  by_name.table = "loose";
  RunRecord n = Load(by_name);
  EXPECT_EQ(n.state, RunState::kFailed);
  EXPECT_NE(n.error.find("n.csv: line 37: key column 'name' is null"), std::string::npos)
      << n.error;
  EXPECT_EQ(Contents(), after);
}

TEST_F(LoaderTest, UnchangedRowsAreFoundColumnByColumnOrByHash) {
  // Kept input compares matched rows column by column; input parsed twice
  // (no retention budget) compares whole-row hashes. Both count the same.
  for (size_t retain : {size_t{64} << 20, size_t{0}}) {
    SCOPED_TRACE(retain);
    SetUp();
    files_["a.csv"] = "id,name,balance\n1,ann,1.00\n2,,2.00\n3,cy,3.00\n";
    ASSERT_EQ(Load(Request(LoadMode::kAppend, {"a.csv"})).state, RunState::kSucceeded);
    // 1: the same; 2: null name becomes an empty string; 3: balance differs;
    // 4: new.
    files_["u.csv"] = "id,name,balance\n1,ann,1.0\n2,\"\",2.00\n3,cy,3.01\n4,dee,\n";
    LoaderOptions o = Options();
    o.retain_bytes = retain;
    RunRecord u = Load(Request(LoadMode::kUpsert, {"u.csv"}), o);
    ASSERT_EQ(u.state, RunState::kSucceeded) << u.error;
    EXPECT_EQ(u.counters.unchanged, 1);
    EXPECT_EQ(u.counters.updated, 2);
    EXPECT_EQ(u.counters.inserted, 1);
    EXPECT_EQ(Contents(), "1:ann:100 2::200 3:cy:301 4:dee:null ");
  }
}

TEST_F(LoaderTest, AnUpsertInputThatChangesBetweenItsTwoReadsFailsTheRun) {
  files_["a.csv"] = "id,name\n1,ann\n2,bob\n";
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"a.csv"})).state, RunState::kSucceeded);
  const std::vector<std::string> objects = Objects();
  // With no retention budget an upsert reads its input twice; the second
  // read gets `second` instead of what the first read and planned for.
  const std::string first = "id,name\n2,bob2\n3,cy\n";
  for (const std::string& second : {std::string("id,name\n2,bob2\n4,dee\n"),   // a new key
                                    std::string("id,name\n2,bob2\n2,bob3\n"),  // a key twice
                                    std::string("id,name\n2,bob2\n")}) {       // a row fewer
    SCOPED_TRACE(second);
    LoaderOptions o = Options();
    o.retain_bytes = 0;
    auto reads = std::make_shared<int>(0);
    o.open_input = [&, reads](const std::string&) -> Result<std::unique_ptr<ByteSource>> {
      return std::unique_ptr<ByteSource>(
          std::make_unique<StringSource>((*reads)++ == 0 ? first : second));
    };
    RunRecord r = Load(Request(LoadMode::kUpsert, {"u.csv"}), o);
    EXPECT_EQ(r.state, RunState::kFailed);
    EXPECT_NE(r.error.find("the input changed while the run read it a second time"),
              std::string::npos)
        << r.error;
    EXPECT_EQ(*reads, 2);
    EXPECT_EQ(Contents(), "1:ann:null 2:bob:null ");
    EXPECT_EQ(Objects(), objects);  // staged fragments deleted
  }
  // The same input read twice, unchanged, loads.
  LoaderOptions o = Options();
  o.retain_bytes = 0;
  files_["u.csv"] = first;
  RunRecord r = Load(Request(LoadMode::kUpsert, {"u.csv"}), o);
  EXPECT_EQ(r.state, RunState::kSucceeded) << r.error;
  EXPECT_EQ(Contents(), "1:ann:null 2:bob2:null 3:cy:null ");
}

TEST_F(LoaderTest, ValidationOnlyReportsThePlanAndWritesNothing) {
  files_["a.csv"] = "id,name,balance\n1,ann,1.00\n2,bob,2.00\n";
  Load(Request(LoadMode::kAppend, {"a.csv"}));
  const int64_t version = Version();
  files_["u.csv"] = "id,name,balance\n1,ann,1.00\n2,bob,9.00\n3,cy,\n";
  RunRequest dry = Request(LoadMode::kUpsert, {"u.csv"});
  dry.error_policy = ErrorPolicy::kValidationOnly;
  RunRecord d = Load(dry);
  EXPECT_EQ(d.state, RunState::kSucceeded);
  EXPECT_TRUE(d.validation_only);
  EXPECT_EQ(d.counters.inserted, 1);
  EXPECT_EQ(d.counters.updated, 1);
  EXPECT_EQ(d.counters.unchanged, 1);
  EXPECT_TRUE(d.commit_id.empty());
  EXPECT_EQ(Version(), version);
  RunRequest dry_replace = Request(LoadMode::kReplace, {"u.csv"});
  dry_replace.error_policy = ErrorPolicy::kValidationOnly;
  RunRecord dr = Load(dry_replace);
  EXPECT_EQ(dr.counters.deleted, 2);
  EXPECT_EQ(dr.counters.inserted, 3);
  EXPECT_EQ(Version(), version);
}

TEST_F(LoaderTest, RefusedPolicies) {
  files_["a.csv"] = "id\n1\n";
  RunRequest skip = Request(LoadMode::kAppend, {"a.csv"});
  skip.error_policy = ErrorPolicy::kSkipRows;
  Loader loader(ws_, Options());
  Status s = loader.Run(skip).status();
  EXPECT_TRUE(s.IsPermissionDenied()) << s;
  EXPECT_NE(s.message().find("feature flag that is off"), std::string::npos);
  Status q = ParseErrorPolicy("quarantine").status();
  EXPECT_TRUE(q.IsPermissionDenied()) << q;
  EXPECT_NE(q.message().find("never keeps rejected rows"), std::string::npos);
  EXPECT_EQ(Contents(), "");
}

TEST_F(LoaderTest, SkipRowsBehindItsFlagEndsPartial) {
  files_["a.csv"] = "id,name,balance\n1,a,1.00\nx,b,2.00\n3,c,3.00\n4,d,99999999999.00\n5,e,\n";
  files_["b.jsonl"] = "{\"id\":6}\n{\"id\":\"7\"}\n{\"id\":8,\"nope\":1}\n{\"id\":9}\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv", "b.jsonl"});
  r.error_policy = ErrorPolicy::kSkipRows;
  LoaderOptions on = Options();
  on.skip_rows_enabled = true;
  RunRecord p = Load(r, on);
  EXPECT_EQ(p.state, RunState::kPartial) << p.error;
  EXPECT_EQ(p.counters.inserted, 5);
  EXPECT_EQ(p.counters.rejected, 4);
  EXPECT_EQ(p.counters.rows_read, 9);
  ASSERT_EQ(p.errors.size(), 4u);
  EXPECT_NE(p.errors[0].reason.find("a.csv: line 3, column 1 ('id', int64)"), std::string::npos)
      << p.errors[0].reason;
  EXPECT_NE(p.errors[1].reason.find("a.csv: line 5, column 3"), std::string::npos);
  EXPECT_NE(p.errors[2].reason.find("b.jsonl: line 2, field 'id'"), std::string::npos);
  EXPECT_NE(p.errors[3].reason.find("b.jsonl: line 3, field 'nope'"), std::string::npos);
  EXPECT_EQ(Contents(), "1:a:100 3:c:300 5:e:null 6:null:null 9:null:null ");
  const std::string stored = store_->Get("ws/_control/runs/" + p.id + ".json").value();
  EXPECT_EQ(stored.find("99999999999"), std::string::npos);  // positions, not values

  // Past the rejected-rows limit the run fails and writes nothing.
  RunRequest strict = r;
  strict.max_rejected_rows = 1;
  strict.files = {"a.csv"};
  RunRecord f = Load(strict, on);
  EXPECT_EQ(f.state, RunState::kFailed);
  EXPECT_EQ(f.error_code, "limit_exceeded");
  EXPECT_NE(f.error.find("more than 1 rows were rejected"), std::string::npos) << f.error;
  EXPECT_EQ(Contents(), "1:a:100 3:c:300 5:e:null 6:null:null 9:null:null ");
}

}  // namespace
}  // namespace loam::ingest
