// The loader's rules: table identity, schema and grants at commit, unique
// keys, limits, error codes and what a small run writes.
#include <gtest/gtest.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>

#include "common/clock.h"
#include "common/status_macros.h"
#include "engine/retention.h"
#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

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
