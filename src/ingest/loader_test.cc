#include "ingest/loader.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/status_macros.h"
#include "engine/retention.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

Schema Accounts() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"name", DataType::String()},
                 {"balance", DataType::Decimal(10, 2)}}};
}

class LoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    WorkspaceOptions o;
    o.owner = "owner";
    o.recovery_grace_micros = 0;
    ws_ = WorkspaceEngine::Init(store_, "ws", o).value();
    ASSERT_TRUE(ws_->CreateTable("accounts", Accounts(), {"id"}).ok());
  }

  // Input files live in a map: the opener reads them through a StringSource.
  LoaderOptions Options() {
    LoaderOptions o;
    o.open_input = [this](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      auto it = files_.find(file);
      if (it == files_.end()) return Status::NotFound("no input " + file);
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(it->second));
    };
    return o;
  }

  void ExpectExactlyOnceAfterCrashes(bool power_loss);

  RunRequest Request(LoadMode mode, std::vector<std::string> files) {
    RunRequest r;
    r.table = "accounts";
    r.mode = mode;
    r.files = std::move(files);
    r.principal = "owner";
    return r;
  }

  RunRecord Load(const RunRequest& r, LoaderOptions opts) {
    Loader loader(ws_, std::move(opts));
    Result<RunRecord> rec = loader.Run(r);
    EXPECT_TRUE(rec.ok()) << rec.status();
    return rec.ok() ? *rec : RunRecord{};
  }
  RunRecord Load(const RunRequest& r) { return Load(r, Options()); }

  // Every row as "id:name:balance", sorted by id.
  std::string Contents() {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, "accounts").value().ReadAll().value();
    std::map<int64_t, std::string> rows;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      std::string line =
          all.columns[1].IsNull(r) ? "null" : std::string(all.columns[1].GetBytes(r));
      const Int128 b = all.columns[2].GetInt128(r);
      line += ":" + (all.columns[2].IsNull(r) ? std::string("null")
                                              : std::to_string(static_cast<int64_t>(b.lo)));
      rows[all.columns[0].GetInt64(r)] = line;
    }
    std::string out;
    for (const auto& [id, line] : rows) out += std::to_string(id) + ":" + line + " ";
    return out;
  }
  // Every object of the workspace but run records and idempotency entries.
  std::vector<std::string> Objects() {
    std::vector<std::string> out;
    for (const ObjectInfo& o : store_->ListAll("ws/").value()) {
      if (o.key.find("_control/runs/") == std::string::npos &&
          o.key.find("_control/idempotency/") == std::string::npos) {
        out.push_back(o.key);
      }
    }
    return out;
  }
  int64_t Version() { return ws_->Current().value().Find("accounts")->head.table_version; }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
};

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

TEST_F(LoaderTest, IdempotencyKeyReturnsTheRunOrRefusesADifferentRequest) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "nightly-2026-11-30";
  Loader loader(ws_, Options());
  bool reused = true;
  RunRecord first = loader.Run(r, &reused).value();
  EXPECT_FALSE(reused);
  RunRecord again = loader.Run(r, &reused).value();
  EXPECT_TRUE(reused);
  EXPECT_EQ(again.id, first.id);
  EXPECT_EQ(Contents(), "1:a:null ");  // once
  RunRequest other = r;
  other.mode = LoadMode::kUpsert;
  Status s = loader.Run(other).status();
  EXPECT_TRUE(s.IsFailedPrecondition()) << s;
  EXPECT_NE(s.message().find("already belongs to run " + first.id), std::string::npos) << s;
}

TEST_F(LoaderTest, ARunHeldByALiveProcessIsAConflict) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "k";
  LoaderOptions crashing = Options();
  crashing.failpoint = [](std::string_view p) {
    return p == failpoint::kRunBeforeCommit ? Status::Unavailable("crash") : Status::OK();
  };
  Loader a(ws_, crashing);
  EXPECT_TRUE(a.Run(r).status().IsUnavailable());
  Loader b(ws_, Options());
  Status held = b.Run(r).status();
  EXPECT_TRUE(held.IsFailedPrecondition()) << held;
  EXPECT_NE(held.message().find("in progress in another process"), std::string::npos) << held;
  EXPECT_EQ(Contents(), "");
}

// A crash at each point of a run and of its write, then the same request
// again: the table holds the rows exactly once.
TEST_F(LoaderTest, ResumedAfterACrashAnywhereCommitsExactlyOnce) {
  ExpectExactlyOnceAfterCrashes(false);
}

// The same with a power loss after each crash: what the crashed process
// wrote without durability (its sidecar, relaxed deletes) vanishes, comes
// back or is cut, seeded per point (FaultInjectionObjectStore::LosePower).
TEST_F(LoaderTest, ResumedAfterACrashAndAPowerLossCommitsExactlyOnce) {
  ExpectExactlyOnceAfterCrashes(true);
}

void LoaderTest::ExpectExactlyOnceAfterCrashes(bool power_loss) {
  int lost = 0;
  const std::vector<std::string> points = {
      std::string(failpoint::kRunAfterValidate), std::string(failpoint::kRunBeforeCommit),
      std::string(loam::failpoint::kAfterSidecar), std::string(loam::failpoint::kAfterTableCommit),
      std::string(loam::failpoint::kAfterPublish)};
  int64_t id = 0;
  std::string expected;
  for (const std::string& point : points) {
    SCOPED_TRACE(point);
    id += 2;
    files_[point] = "id,name\n" + std::to_string(id - 1) + ",x\n" + std::to_string(id) + ",y\n";
    expected += std::to_string(id - 1) + ":x:null " + std::to_string(id) + ":y:null ";
    RunRequest r = Request(LoadMode::kAppend, {point});
    r.idempotency_key = "key-" + point;
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    wo.failpoint = [&](std::string_view p) {
      return p == point ? Status::Unavailable("crash") : Status::OK();
    };
    auto faulty = std::make_shared<FaultInjectionObjectStore>(store_, /*seed=*/id);
    if (power_loss) faulty->TrackUnsyncedWrites();
    auto crashing_ws = WorkspaceEngine::Open(faulty, "ws", wo).value();
    LoaderOptions lo = Options();
    lo.lease_micros = 0;  // the crashed owner's lease is over at once
    lo.failpoint = wo.failpoint;
    Loader crashing(crashing_ws, lo);
    EXPECT_FALSE(crashing.Run(r).ok());
    if (power_loss) lost += faulty->LosePower().value();
    RunRecord resumed = Load(r);
    EXPECT_EQ(resumed.state, RunState::kSucceeded) << resumed.error;
    EXPECT_FALSE(resumed.commit_id.empty());
    EXPECT_EQ(Contents(), expected);
    // Once more: the finished run is returned, nothing is written.
    EXPECT_EQ(Load(r).id, resumed.id);
    EXPECT_EQ(Contents(), expected);
  }
  EXPECT_TRUE(ws_->VerifyHeads("").value().ok());
  if (power_loss) {
    EXPECT_GT(lost, 0);  // some sidecar was lost or cut
  }
}

// A run's owner stalls once its write has begun while another process takes
// the run over and commits it (left in the journal's tail, or folded into the
// index): the owner, whose look-ups read only the journal written since it
// created the run, commits nothing more, and the rows are there once. On a
// table without keys, where no key check would refuse a second commit.
TEST_F(LoaderTest, AnOwnerStalledWhileItsRunWasTakenOverDoesNotCommitItAgain) {
  ASSERT_TRUE(ws_->CreateTable("log", Schema{{{"id", DataType::Int64(), false}}}, {}).ok());
  auto rows = [&] {
    Snapshot snap = ws_->Current().value();
    return ws_->OpenTable(snap, "log").value().CountRows();
  };
  for (bool folded : {false, true}) {
    SCOPED_TRACE(folded);
    // History first: the journal index has levels older than the run.
    for (int i = 0; i < 40; ++i) {
      files_["h.csv"] = "id\n" + std::to_string(i) + "\n";
      RunRequest h = Request(LoadMode::kAppend, {"h.csv"});
      h.table = "log";
      EXPECT_EQ(Load(h).state, RunState::kSucceeded);
    }
    const uint64_t before = rows();
    const std::string file = "run-" + std::to_string(folded) + ".csv";
    files_[file] = "id\n1000\n";
    RunRequest r = Request(LoadMode::kAppend, {file});
    r.table = "log";
    r.idempotency_key = "stalled-" + file;
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    auto taker_ws = WorkspaceEngine::Open(store_, "ws", wo).value();
    // The owner stalls once its write has begun (past every look at its
    // run record), and the taker's commit lands meanwhile.
    std::optional<Result<RunRecord>> taken;
    WorkspaceOptions stalling = wo;
    stalling.failpoint = [&](std::string_view p) {
      if (p == loam::failpoint::kAfterSidecar && !taken) {
        taken = Loader(taker_ws, Options()).Run(r);
        if (folded) {
          EXPECT_TRUE(taker_ws->manifest().Reconcile("").ok());
        }
      }
      return Status::OK();
    };
    auto owner_ws = WorkspaceEngine::Open(store_, "ws", stalling).value();
    LoaderOptions stalled = Options();
    stalled.lease_micros = 0;  // over at once: another process may take the run
    Result<RunRecord> owner = Loader(owner_ws, stalled).Run(r);
    ASSERT_TRUE(taken.has_value());
    ASSERT_TRUE(taken->ok()) << taken->status();
    EXPECT_EQ((*taken)->state, RunState::kSucceeded) << (*taken)->error;
    EXPECT_FALSE((*taken)->commit_id.empty());
    if (owner.ok()) {
      EXPECT_EQ(owner->id, (*taken)->id);
    }
    EXPECT_EQ(rows(), before + 1) << (owner.ok() ? owner->error : owner.status().ToString());
  }
}

// A run that committed and crashed before it recorded the outcome is
// resumed after retention removed the manifest version it committed: the
// journal still says it committed, so it succeeds (without its table
// version), and its rows are there once.
TEST_F(LoaderTest, ARunCommittedPastTheTimeTravelWindowResumesAsSucceeded) {
  files_["a.csv"] = "id,name\n1,a\n";
  files_["b.csv"] = "id,name\n2,b\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "committed-then-crashed";
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  wo.failpoint = [](std::string_view p) {
    return p == loam::failpoint::kAfterPublish ? Status::Unavailable("crash") : Status::OK();
  };
  LoaderOptions lo = Options();
  lo.lease_micros = 0;  // the crashed owner's lease is over at once
  lo.failpoint = wo.failpoint;
  EXPECT_FALSE(Loader(WorkspaceEngine::Open(store_, "ws", wo).value(), lo).Run(r).ok());
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"b.csv"})).state, RunState::kSucceeded);
  const int64_t later = Clock::System()->NowMicros() + 10LL * 86400 * 1'000'000;
  ASSERT_GT(ExpireVersions(*ws_, later, 60, 0).value().manifest_versions_removed, 0);
  RunRecord resumed = Load(r);
  EXPECT_EQ(resumed.state, RunState::kSucceeded) << resumed.error;
  EXPECT_FALSE(resumed.commit_id.empty());
  EXPECT_EQ(Contents(), "1:a:null 2:b:null ");
}

TEST_F(LoaderTest, CommitResolvesTheTableById) {
  files_["a.csv"] = "id,name\n1,a\n";
  LoaderOptions o = Options();
  bool renamed = false;
  o.failpoint = [&](std::string_view p) {
    if (p == failpoint::kRunBeforeCommit && !renamed) {
      renamed = true;
      return ws_->RenameTable("accounts", "customers").status();
    }
    return Status::OK();
  };
  RunRecord r = Load(Request(LoadMode::kAppend, {"a.csv"}), o);
  EXPECT_EQ(r.state, RunState::kSucceeded) << r.error;
  EXPECT_EQ(ws_->Current().value().Find("customers")->head.row_count, 1);

  // A drop between validation and commit is a clean failure.
  files_["b.csv"] = "id,name\n2,b\n";
  RunRequest again = Request(LoadMode::kAppend, {"b.csv"});
  again.table = "customers";
  LoaderOptions d = Options();
  d.failpoint = [&](std::string_view p) {
    return p == failpoint::kRunBeforeCommit ? ws_->DropTable("customers").status() : Status::OK();
  };
  RunRecord dropped = Load(again, d);
  EXPECT_EQ(dropped.state, RunState::kFailed);
  EXPECT_EQ(dropped.error_code, "not_found");
  EXPECT_EQ(dropped.counters.rows_read, 1);
  EXPECT_EQ(dropped.counters.inserted, 0);  // nothing was written
}

TEST_F(LoaderTest, SchemaChangeBetweenValidationAndCommitIsASchemaConflict) {
  files_["a.csv"] = "id,name\n1,a\n";
  LoaderOptions o = Options();
  o.failpoint = [&](std::string_view p) {
    if (p != failpoint::kRunBeforeCommit) return Status::OK();
    WriteRequest add;
    add.table = "accounts";
    add.mode = WriteMode::kAddColumn;
    add.new_column = Field{"note", DataType::String()};
    add.principal = "owner";
    return ws_->Write(add).status();
  };
  const int64_t version_before = Version();
  RunRecord r = Load(Request(LoadMode::kAppend, {"a.csv"}), o);
  EXPECT_EQ(r.state, RunState::kFailed);
  EXPECT_EQ(r.error_code, "schema_conflict") << r.error;
  EXPECT_EQ(Version(), version_before + 1);  // only the schema change
  EXPECT_EQ(Contents(), "");
}

TEST_F(LoaderTest, GrantsAreChecked) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.principal = "mallory";
  RunRecord denied = Load(r);
  EXPECT_EQ(denied.state, RunState::kFailed);
  EXPECT_EQ(denied.error_code, "permission_denied");
  EXPECT_NE(denied.error.find("'mallory' needs the writer grant"), std::string::npos)
      << denied.error;
  ASSERT_TRUE(ws_->SetGrant("accounts", "mallory", Role::kWriter).ok());
  EXPECT_EQ(Load(r).state, RunState::kSucceeded);
  // Replace needs admin.
  RunRequest rep = r;
  rep.mode = LoadMode::kReplace;
  RunRecord no_admin = Load(rep);
  EXPECT_EQ(no_admin.error_code, "permission_denied");
  EXPECT_NE(no_admin.error.find("needs the admin grant"), std::string::npos);
  EXPECT_EQ(Contents(), "1:a:null ");
  ASSERT_TRUE(ws_->SetGrant("accounts", "mallory", Role::kAdmin).ok());
  EXPECT_EQ(Load(rep).state, RunState::kSucceeded);
}

TEST_F(LoaderTest, AppendingIntoAKeyedTableKeepsKeysUnique) {
  files_["a.csv"] = "id,name\n1,a\n2,b\n";
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"a.csv"})).state, RunState::kSucceeded);
  const std::string before = Contents();
  const int64_t version = Version();
  // A key the table holds: refused, naming the run's row, never the key.
  files_["again.csv"] = "id,name\n3,c\n2,dup\n";
  RunRecord again = Load(Request(LoadMode::kAppend, {"again.csv"}));
  EXPECT_EQ(again.state, RunState::kFailed);
  EXPECT_EQ(again.error_code, "duplicate_key") << again.error;
  EXPECT_NE(again.error.find("that table 'accounts' already holds: again.csv line 3"),
            std::string::npos)
      << again.error;
  // A key twice in the run, across files and formats.
  files_["x.csv"] = "id,name\n7,x\n";
  files_["y.jsonl"] = "{\"id\":8}\n{\"id\":7}\n";
  RunRecord twice = Load(Request(LoadMode::kAppend, {"x.csv", "y.jsonl"}));
  EXPECT_EQ(twice.error_code, "duplicate_key") << twice.error;
  EXPECT_NE(twice.error.find("duplicate key: x.csv line 2 and y.jsonl line 2"), std::string::npos)
      << twice.error;
  EXPECT_EQ(Contents(), before);
  EXPECT_EQ(Version(), version);
  // Replace checks the run's own keys too.
  RunRecord replace = Load(Request(LoadMode::kReplace, {"x.csv", "y.jsonl"}));
  EXPECT_EQ(replace.error_code, "duplicate_key") << replace.error;
  EXPECT_EQ(Contents(), before);
  // New keys append.
  files_["new.csv"] = "id,name\n3,c\n";
  EXPECT_EQ(Load(Request(LoadMode::kAppend, {"new.csv"})).state, RunState::kSucceeded);
  EXPECT_EQ(Contents(), "1:a:null 2:b:null 3:c:null ");
}

TEST_F(LoaderTest, AppendingIntoATableWithoutKeysIsBlind) {
  Schema s{{{"id", DataType::Int64()}, {"name", DataType::String()}}};
  ASSERT_TRUE(ws_->CreateTable("log", s, {}).ok());
  files_["a.csv"] = "id,name\n1,a\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.table = "log";
  EXPECT_EQ(Load(r).state, RunState::kSucceeded);
  EXPECT_EQ(Load(r).state, RunState::kSucceeded);
  EXPECT_EQ(ws_->Current().value().Find("log")->head.row_count, 4);
}

TEST_F(LoaderTest, ARevokeBeforePublishFailsTheRunAndLeavesTheTableUnchanged) {
  files_["seed.csv"] = "id,name\n1,a\n";
  ASSERT_EQ(Load(Request(LoadMode::kAppend, {"seed.csv"})).state, RunState::kSucceeded);
  ASSERT_TRUE(ws_->SetGrant("accounts", "mallory", Role::kWriter).ok());
  const std::string before = Contents();
  // The revoke lands after validation and after the table commit, just
  // before the manifest publish that would make the write visible.
  WorkspaceOptions wo;
  wo.recovery_grace_micros = 0;
  int revokes = 0;
  wo.failpoint = [&](std::string_view p) -> Status {
    if (p != loam::failpoint::kAfterTableCommit) return Status::OK();
    ++revokes;
    return ws_->SetGrant("accounts", "mallory", std::nullopt);
  };
  auto writer = WorkspaceEngine::Open(store_, "ws", wo).value();
  files_["a.csv"] = "id,name\n5,m\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.principal = "mallory";
  Result<RunRecord> rec = Loader(writer, Options()).Run(r);
  ASSERT_TRUE(rec.ok()) << rec.status();
  EXPECT_EQ(revokes, 1);
  EXPECT_EQ(rec->state, RunState::kFailed);
  EXPECT_EQ(rec->error_code, "permission_denied") << rec->error;
  EXPECT_EQ(Contents(), before);
  EXPECT_FALSE(ws_->manifest().FindJournalRow("", RunCommitId(rec->id)).value().has_value());
}

TEST_F(LoaderTest, AnEmptyPrincipalIsRefusedUnlessTheSystemActorWrites) {
  files_["a.csv"] = "id,name\n1,a\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.principal = "";
  RunRecord denied = Load(r);
  EXPECT_EQ(denied.state, RunState::kFailed);
  EXPECT_EQ(denied.error_code, "permission_denied");
  EXPECT_NE(denied.error.find("needs a principal"), std::string::npos) << denied.error;
  WriteRequest w;
  w.table = "accounts";
  w.rows = {};
  EXPECT_TRUE(ws_->Write(w).status().IsPermissionDenied());
  EXPECT_EQ(Contents(), "");
  WorkspaceOptions system;
  system.system_actor = true;
  auto as_system = WorkspaceEngine::Open(store_, "ws", system).value();
  EXPECT_EQ(Loader(as_system, Options()).Run(r).value().state, RunState::kSucceeded);
  EXPECT_EQ(Contents(), "1:a:null ");
}

TEST_F(LoaderTest, EveryLimitIsLimitExceeded) {
  struct Case {
    std::string file, data;
    void (*tune)(RunRequest*);
  };
  const Case cases[] = {
      {"wide.csv", "id,name\n1,a,b\n", [](RunRequest* r) { r->limits.max_columns = 2; }},
      {"long.csv", "id,name\n1,aaaaaaaaaa\n", [](RunRequest* r) { r->limits.max_field_bytes = 4; }},
      {"keys.jsonl", "{\"id\":1,\"name\":\"a\"}\n",
       [](RunRequest* r) { r->limits.max_columns = 1; }},
      {"line.jsonl", "{\"id\":1,\"name\":\"" + std::string(100, 'a') + "\"}\n",
       [](RunRequest* r) { r->limits.max_field_bytes = 4; }},
  };
  for (const Case& c : cases) {
    files_[c.file] = c.data;
    RunRequest r = Request(LoadMode::kAppend, {c.file});
    c.tune(&r);
    RunRecord f = Load(r);
    EXPECT_EQ(f.state, RunState::kFailed) << c.file;
    EXPECT_EQ(f.error_code, "limit_exceeded") << c.file << ": " << f.error;
  }
  EXPECT_EQ(Contents(), "");
}

TEST_F(LoaderTest, RunLimits) {
  files_["a.csv"] = "id\n1\n2\n3\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.max_rows = 2;
  RunRecord f = Load(r);
  EXPECT_EQ(f.error_code, "limit_exceeded");
  EXPECT_NE(f.error.find("more than 2 rows (the rows-per-run limit)"), std::string::npos)
      << f.error;
  RunRequest slow = Request(LoadMode::kAppend, {"a.csv"});
  slow.time_budget_ms = -1;  // already over budget at the first batch
  RunRecord t = Load(slow);
  EXPECT_EQ(t.error_code, "limit_exceeded");
  EXPECT_NE(t.error.find("longer than the time budget"), std::string::npos) << t.error;
  EXPECT_EQ(Contents(), "");
  // A request its record could not read back is refused before a run exists.
  RunRequest unreadable = Request(LoadMode::kAppend, {"a.csv"});
  unreadable.limits.max_json_depth = 5000;  // records hold 1 to 1024
  Loader loader(ws_, Options());
  Result<RunRecord> refused = loader.Run(unreadable);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.status().IsInvalidArgument()) << refused.status();
  EXPECT_NE(refused.status().message().find("maxJsonDepth"), std::string::npos) << refused.status();
  EXPECT_EQ(RunStore(ws_->store(), ws_->root()).List().value().size(), 2u);  // the two above
}

TEST_F(LoaderTest, ErrorCodesDoNotDependOnFileNames) {
  files_["conflict: x.csv"] = "id\nbad\n";
  RunRecord f = Load(Request(LoadMode::kAppend, {"conflict: x.csv"}));
  EXPECT_EQ(f.error_code, "validation_failed") << f.error;
}

// A run that stays one small batch is staged in memory: its commit embeds
// the rows in the table's version file, and no fragment file is written.
TEST_F(LoaderTest, ASmallRunWritesNoFragmentFile) {
  files_["a.csv"] = "id,name\n1,a\n2,b\n";
  RunRecord done = Load(Request(LoadMode::kAppend, {"a.csv"}));
  ASSERT_EQ(done.state, RunState::kSucceeded) << done.error;
  EXPECT_EQ(Contents(), "1:a:null 2:b:null ");
  for (const ObjectInfo& f : store_->ListAll("ws/").value()) {
    EXPECT_TRUE(f.key.find("/data/") == std::string::npos ||
                f.key.find("__manifest") != std::string::npos)
        << f.key;
  }
}

TEST_F(LoaderTest, AStagedFileRemovedBeforeCommitLeavesTheRunResumable) {
  files_["a.csv"] = "id,name\n1,a\n2,b\n";
  RunRequest r = Request(LoadMode::kAppend, {"a.csv"});
  r.idempotency_key = "gc-race";
  LoaderOptions o = Options();
  o.lease_micros = 0;
  o.batch_rows = 1;  // two batches: staged as files (one small batch stays in memory)
  o.failpoint = [&](std::string_view p) -> Status {
    if (p != failpoint::kRunBeforeCommit) return Status::OK();
    // As a gc with a too-short grace would: every data file is staged here.
    for (const ObjectInfo& f : store_->ListAll("ws/").value()) {
      if (f.key.find("/data/") != std::string::npos &&
          f.key.find("__manifest") == std::string::npos) {
        RETURN_NOT_OK(store_->Delete(f.key));
      }
    }
    return Status::OK();
  };
  Status s = Loader(ws_, o).Run(r).status();
  EXPECT_TRUE(s.IsUnavailable()) << s;
  EXPECT_NE(s.message().find("a staged file is gone"), std::string::npos) << s;
  EXPECT_EQ(Contents(), "");
  RunRecord resumed = Load(r);
  EXPECT_EQ(resumed.state, RunState::kSucceeded) << resumed.error;
  EXPECT_EQ(Contents(), "1:a:null 2:b:null ");
}

TEST_F(LoaderTest, RecordsRoundTripAndList) {
  files_["a.csv"] = "id\n1\n";
  RunRecord a = Load(Request(LoadMode::kAppend, {"a.csv"}));
  RunRecord b = Load(Request(LoadMode::kAppend, {"missing.csv"}));
  EXPECT_EQ(b.state, RunState::kFailed);
  EXPECT_EQ(b.error_code, "not_found");
  RunStore runs(store_, "ws");
  std::vector<RunRecord> all = runs.List().value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, b.id);  // newest first
  EXPECT_EQ(all[1].ToJson(), a.ToJson());
  EXPECT_EQ(RunRequest::FromJson(a.request).value().ToJson(), a.request);
}

}  // namespace
}  // namespace loam::ingest
