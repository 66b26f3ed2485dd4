// Group commit: several runs in one table commit and one manifest commit,
// each recorded once, through crashes at every failpoint.
#include "engine/group_commit.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "common/json_parse.h"
#include "engine/workspace_test_util.h"
#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using json = nlohmann::json;
using testing::Events;
using testing::EventSchema;
using testing::TestOptions;

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::NewTestStore();
    root_ = "group" + std::to_string(::getpid()) + "-" + NewUlidString();
    WorkspaceOptions o = TestOptions();
    o.system_actor = false;
    o.owner = "owner";
    ws_ = WorkspaceEngine::Init(store_, root_, o).value();
    sid_ = ws_->CreateTable("t", EventSchema(), {}).value().sid;
    ASSERT_TRUE(ws_->SetGrant("t", "ada", Role::kWriter).ok());
    ASSERT_TRUE(ws_->SetGrant("t", "bob", Role::kWriter).ok());
    ASSERT_TRUE(ws_->SetGrant("t", "rex", Role::kReader).ok());
  }

  // A run's staged append of `ids` (one fragment per id, so runs differ in
  // how many fragments they add), as files or kept in memory.
  WriteRequest Staged(const std::string& run, const std::vector<int64_t>& ids,
                      const std::string& who = "ada", const std::string& table = "t",
                      bool in_memory = false) {
    Snapshot snap = ws_->Current().value();
    Dataset data = ws_->OpenTable(snap, table).value();
    WriteRequest w;
    w.table = table;
    w.table_sid = snap.Find(table)->def.sid;
    w.mode = WriteMode::kAppend;
    w.staged_rows = true;
    for (int64_t id : ids) w.staged.push_back(data.WriteFragment(Events({id}), in_memory).value());
    w.expected_schema_version = snap.Find(table)->def.schema_version;
    w.run_id = run;
    w.principal = who;
    return w;
  }

  // Reopens the workspace with `failpoint` on its writes.
  std::shared_ptr<WorkspaceEngine> Reopen(std::function<Status(std::string_view)> failpoint = {}) {
    WorkspaceOptions o = TestOptions();
    o.system_actor = false;
    o.owner = "owner";
    o.failpoint = std::move(failpoint);
    return WorkspaceEngine::Open(store_, root_, o).value();
  }

  // The ids the table holds, sorted.
  std::vector<int64_t> Ids(const std::string& table = "t") {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, table).value().ReadAll().value();
    std::vector<int64_t> ids;
    for (int64_t r = 0; r < all.num_rows(); ++r) ids.push_back(all.columns[0].GetInt64(r));
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  std::optional<json> RunCommit(const std::string& run) {
    auto row = ws_->manifest().FindJournalRow("", RunCommitId(run)).value();
    if (!row) return std::nullopt;
    return ParseJson(row->metadata);
  }

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::shared_ptr<WorkspaceEngine> ws_;
  int64_t sid_ = 0;
};

TEST_F(GroupCommitTest, RunsShareOneCommitEachWithItsOwnRowAndFragments) {
  ASSERT_TRUE(ws_->Write(Staged("early", {100})).ok());
  const uint64_t before = ws_->manifest().Current("").value().version;
  WriteRequest a = Staged("a", {1, 2}), b = Staged("b", {3}, "bob"), c = Staged("c", {4, 5, 6});
  WriteRequest again = Staged("early", {101});  // committed already
  WriteRequest reader = Staged("r", {7}, "rex");
  std::vector<Result<WriteResult>> out = ws_->WriteGroup({&a, &again, &b, &reader, &c});
  ASSERT_EQ(out.size(), 5u);
  ASSERT_TRUE(out[0].ok()) << out[0].status();
  EXPECT_TRUE(out[1].status().Is(ErrorCode::kRunAlreadyCommitted)) << out[1].status();
  EXPECT_TRUE(out[3].status().Is(ErrorCode::kPermissionDenied)) << out[3].status();
  for (size_t i : {size_t{2}, size_t{4}}) {
    ASSERT_TRUE(out[i].ok()) << out[i].status();
    EXPECT_EQ(out[i]->commit_id, out[0]->commit_id);
    EXPECT_EQ(out[i]->table_version, out[0]->table_version);
  }
  EXPECT_EQ(ws_->manifest().Current("").value().version, before + 1);  // one manifest commit
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 100}));
  // Each run names exactly its fragments, in the group's order.
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const std::string run : {"a", "b", "c"}) {
    std::optional<json> meta = RunCommit(run);
    ASSERT_TRUE(meta) << run;
    EXPECT_EQ((*meta)["commit"], out[0]->commit_id);
    EXPECT_EQ((*meta)["table"], sid_);
    ranges.emplace_back((*meta)["fragments"][0], (*meta)["fragments"][1]);
  }
  EXPECT_EQ(ranges[0].second - ranges[0].first, 2u);
  EXPECT_EQ(ranges[1], std::make_pair(ranges[0].second, ranges[0].second + 1));
  EXPECT_EQ(ranges[2], std::make_pair(ranges[1].second, ranges[1].second + 3));
  EXPECT_FALSE(RunCommit("r"));
  const std::vector<GraphCommitInfo> log = ws_->Log().value();
  EXPECT_EQ(log.front().id, out[0]->commit_id);
  EXPECT_EQ(log.front().run_id, "a");
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

// A crash at each failpoint of a group commit: recovery of any one member
// settles the whole group, so every run is committed exactly once or not at
// all, and all of them alike.
// Runs staged in memory share the fragments of their commit: each
// run_commit names its rows there, and none names a whole fragment.
TEST_F(GroupCommitTest, RunsStagedInMemoryShareOneFragmentEachNamingItsRows) {
  ASSERT_TRUE(ws_->Write(Staged("early", {100})).ok());  // fragment ids start above 0
  WriteRequest a = Staged("ja", {1, 2}, "ada", "t", true), b = Staged("jb", {3}, "bob", "t", true),
               c = Staged("jc", {4, 5, 6}, "ada", "t", true);
  for (const Result<WriteResult>& r : ws_->WriteGroup({&a, &b, &c})) {
    ASSERT_TRUE(r.ok()) << r.status();
  }
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 100}));
  const Dataset table = ws_->OpenTable(ws_->Current().value(), "t").value();
  ASSERT_EQ(table.state().fragments.size(), 2u);
  const uint64_t id = table.state().fragments[1].id;
  EXPECT_GT(id, 0u);
  const std::vector<std::pair<std::string, json>> want = {{"ja", json::array({id, 0, 2})},
                                                          {"jb", json::array({id, 2, 3})},
                                                          {"jc", json::array({id, 3, 6})}};
  for (const auto& [run, rows] : want) {
    std::optional<json> meta = RunCommit(run);
    ASSERT_TRUE(meta) << run;
    EXPECT_EQ((*meta)["fragment_rows"], rows) << run;
    EXPECT_EQ((*meta)["fragments"], json::array({id, id})) << run;
  }
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

TEST_F(GroupCommitTest, ACrashAtAnyPointCommitsTheWholeGroupOrNone) {
  for (const bool in_memory : {false, true})
    for (std::string_view point :
         {failpoint::kAfterSidecar, failpoint::kAfterTableCommit, failpoint::kAfterPublish}) {
      SCOPED_TRACE(std::string(point) + (in_memory ? " in memory" : " as files"));
      const std::string tag = std::string(point) + (in_memory ? "-m" : "-f");
      WriteRequest a = Staged(tag + "-a", {1}, "ada", "t", in_memory),
                   b = Staged(tag + "-b", {2, 3}, "ada", "t", in_memory);
      std::vector<int64_t> before = Ids();
      auto crashing = Reopen([&](std::string_view at) {
        return at == point ? Status::Unavailable("crash") : Status::OK();
      });
      for (const Result<WriteResult>& r : crashing->WriteGroup({&a, &b})) {
        EXPECT_TRUE(r.status().IsUnavailable()) << r.status();
      }
      ws_ = Reopen();
      RecoveryReport report = ws_->RecoverRun(tag + "-b").value();  // the second member
      EXPECT_TRUE(report.failures.empty());
      EXPECT_EQ(ws_->PendingSidecars().value(), 0);
      const bool a_done = RunCommit(tag + "-a").has_value();
      EXPECT_EQ(a_done, RunCommit(tag + "-b").has_value());
      EXPECT_EQ(a_done, point != failpoint::kAfterSidecar);
      if (a_done) {
        before.insert(before.end(), {1, 2, 3});
        std::sort(before.begin(), before.end());
        const json b_rows = (*RunCommit(tag + "-b"))["fragment_rows"];
        EXPECT_EQ(b_rows.is_null(), !in_memory) << b_rows;  // after a's one row when joined
        if (in_memory) {
          EXPECT_EQ(b_rows[1], 1) << b_rows;
        }
      }
      EXPECT_EQ(Ids(), before);
      EXPECT_TRUE(ws_->VerifyHeads().value().ok());
    }
}

// A grant revoked between the checks and the publish refuses the whole
// publish: nothing is committed, every member is told to retry alone
// (conflict), and alone each gets its own answer.
TEST_F(GroupCommitTest, ARefusalInsideThePublishSendsEveryMemberBackAlone) {
  WriteRequest a = Staged("ga", {1}), b = Staged("gb", {2}, "bob");
  auto ws = Reopen([&](std::string_view at) {
    if (at == failpoint::kAfterTableCommit) {
      EXPECT_TRUE(ws_->SetGrant("t", "bob", std::nullopt, "", "owner").ok());
    }
    return Status::OK();
  });
  for (const Result<WriteResult>& r : ws->WriteGroup({&a, &b})) {
    EXPECT_TRUE(r.status().Is(ErrorCode::kConflict)) << r.status();
    EXPECT_NE(r.status().message().find("each of its runs commits again alone"), std::string::npos);
  }
  EXPECT_TRUE(Ids().empty());
  EXPECT_EQ(ws_->PendingSidecars().value(), 0);
  WriteRequest a2 = Staged("ga", {1}), b2 = Staged("gb", {2}, "bob");
  EXPECT_TRUE(ws_->Write(a2).ok());
  EXPECT_TRUE(ws_->Write(b2).status().IsPermissionDenied());
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1}));
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

TEST_F(GroupCommitTest, AGroupSidecarRoundTripsAsFormatTwoOrThree) {
  Sidecar s;
  s.operation_id = "op";
  s.run_id = "a";
  s.group = {{"a", 2}, {"b", 1}};
  const std::string text = EncodeSidecar(s);
  EXPECT_NE(text.find("\"format\": 2"), std::string::npos) << text;
  Result<Sidecar> back = DecodeSidecar(text, "k");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, s);
  EXPECT_TRUE(back->Records("b"));
  EXPECT_FALSE(back->Records("c"));
  // A group whose rows were joined lists each run's rows.
  Sidecar joined = s;
  joined.group = {{"a", 0, 2}, {"b", 0, 1}};
  const std::string joined_text = EncodeSidecar(joined);
  // Format 3, which a build reading formats 1 and 2 refuses rather than
  // rolling the group forward without each run's rows.
  EXPECT_NE(joined_text.find("\"format\": 3"), std::string::npos) << joined_text;
  back = DecodeSidecar(joined_text, "k");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, joined);
  for (const char* edit : {R"({"rows":"2"})", R"({"rows":0})", R"({"fragments":1})"}) {
    json odd = ParseJson(joined_text);
    odd["group"][0].update(ParseJson(edit));
    EXPECT_TRUE(DecodeSidecar(odd.dump(), "k").status().IsDataLoss()) << edit;
  }
  json two = ParseJson(joined_text);
  two["format"] = 2;
  EXPECT_TRUE(DecodeSidecar(two.dump(), "k").status().IsDataLoss());
  json some = ParseJson(joined_text);
  some["group"][1].erase("rows");
  some["group"][1]["fragments"] = 1;
  EXPECT_TRUE(DecodeSidecar(some.dump(), "k").status().IsDataLoss());
  s.group.clear();
  EXPECT_NE(EncodeSidecar(s).find("\"format\": 1"), std::string::npos);
  json bad = ParseJson(text);
  bad["group"][0]["id"] = "z";
  EXPECT_TRUE(DecodeSidecar(bad.dump(), "k").status().IsDataLoss());
  // Numbers that are not int64 are DataLoss, never converted (a float past
  // int64's range was undefined behaviour; found by sidecar_fuzz).
  for (const char* number : {"4.6e25", "1.5", "18446744073709551615", "\"7\""}) {
    json odd = ParseJson(text);
    odd["created_micros"] = ParseJson(number);
    Result<Sidecar> refused = DecodeSidecar(odd.dump(), "k");
    EXPECT_TRUE(refused.status().IsDataLoss()) << number << ": " << refused.status();
    odd = ParseJson(text);
    odd["group"][1]["fragments"] = ParseJson(number);
    EXPECT_TRUE(DecodeSidecar(odd.dump(), "k").status().IsDataLoss()) << number;
  }
}

// Runs that reach the committer while a commit is in flight wait for it and
// then go in together: 16 runs, the first alone, the other 15 as one group.
TEST_F(GroupCommitTest, RunsArrivingDuringACommitGoInTogether) {
  std::vector<WriteRequest> requests;
  for (int i = 0; i < 16; ++i) requests.push_back(Staged("run-" + std::to_string(i), {i}));
  std::atomic<bool> first = true;
  std::unique_ptr<GroupCommitter> committer;
  ws_ = Reopen([&](std::string_view at) {
    // The first commit holds its table commit until the 15 others wait.
    if (at == failpoint::kAfterTableCommit && first.exchange(false)) {
      while (committer->Waiting() < 15) std::this_thread::yield();
    }
    return Status::OK();
  });
  committer = std::make_unique<GroupCommitter>(ws_, GroupCommitOptions{});
  std::vector<Result<WriteResult>> results(16, Status::Internal("unset"));
  std::thread lead([&] { results[0] = committer->Commit(requests[0]); });
  while (committer->Committing() == 0) std::this_thread::yield();
  std::vector<std::thread> rest;
  for (int i = 1; i < 16; ++i) {
    rest.emplace_back([&, i] { results[i] = committer->Commit(requests[i]); });
  }
  lead.join();
  for (std::thread& t : rest) t.join();
  std::set<std::string> commits;
  for (const Result<WriteResult>& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    commits.insert(r->commit_id);
  }
  EXPECT_EQ(commits.size(), 2u);
  EXPECT_EQ(committer->stats().commits, 2);
  EXPECT_EQ(committer->stats().runs, 16);
  EXPECT_EQ(Ids().size(), 16u);
  for (int i = 0; i < 16; ++i) EXPECT_TRUE(RunCommit("run-" + std::to_string(i)));
}

// A line commits at most once per interval: the first run after a commit
// waits (here until max_runs wait, the interval being an hour) and takes
// those who joined; an idle line commits at once.
TEST_F(GroupCommitTest, ALineCommitsAtMostOncePerInterval) {
  std::vector<WriteRequest> requests;
  for (int i = 0; i < 5; ++i) requests.push_back(Staged("run-" + std::to_string(i), {i}));
  GroupCommitter committer(ws_, GroupCommitOptions{4, 3'600'000'000});
  ASSERT_TRUE(committer.Commit(requests[0]).ok());  // idle: at once
  std::vector<Result<WriteResult>> results(5, Status::Internal("unset"));
  std::vector<std::thread> rest;
  for (int i = 1; i < 5; ++i) {
    rest.emplace_back([&, i] { results[i] = committer.Commit(requests[i]); });
  }
  for (std::thread& t : rest) t.join();
  std::set<std::string> commits;
  for (int i = 1; i < 5; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status();
    commits.insert(results[i]->commit_id);
  }
  EXPECT_EQ(commits.size(), 1u);
  EXPECT_EQ(committer.stats().commits, 2);
  EXPECT_EQ(committer.stats().runs, 5);
  EXPECT_EQ(Ids().size(), 5u);
}

// Keyed appends share a commit while the table is at the version their key
// checks saw and no earlier member adds one of their keys.
TEST_F(GroupCommitTest, KeyedAppendsJoinWhenTheirKeysDiffer) {
  ASSERT_TRUE(ws_->CreateTable("k", EventSchema(), {"id"}).ok());
  ASSERT_TRUE(ws_->SetGrant("k", "ada", Role::kWriter).ok());
  const TableState k = *ws_->Current().value().Find("k");
  auto keyed = [&](const std::string& run, std::vector<int64_t> ids, int64_t version) {
    WriteRequest w = Staged(run, ids, "ada", "k");
    w.expected_version = version;
    w.expected_for_keys = true;
    return w;
  };
  const int64_t v = k.head.table_version;
  WriteRequest a = keyed("ka", {1, 2}, v), b = keyed("kb", {3}, v), dup = keyed("kdup", {2, 4}, v);
  WriteRequest stale = keyed("kstale", {5}, v - 1);
  std::vector<Result<WriteResult>> out = ws_->WriteGroup({&a, &dup, &b, &stale});
  ASSERT_TRUE(out[0].ok()) << out[0].status();
  ASSERT_TRUE(out[2].ok()) << out[2].status();
  EXPECT_EQ(out[0]->commit_id, out[2]->commit_id);
  EXPECT_TRUE(out[1].status().Is(ErrorCode::kConflict)) << out[1].status();
  EXPECT_NE(out[1].status().message().find("another run committing with it"), std::string::npos);
  EXPECT_TRUE(out[3].status().Is(ErrorCode::kConflict)) << out[3].status();
  EXPECT_EQ(ws_->Current().value().Find("k")->head.row_count, 3);
  EXPECT_FALSE(RunCommit("kdup"));
  // A large keyed append commits alone (its keys would be read back in memory).
  WriteRequest large = keyed("klarge", {10}, out[0]->table_version);
  EXPECT_TRUE(WorkspaceEngine::Groupable(large));
  large.staged[0].data_size = WorkspaceEngine::kMaxGroupedKeyedBytes + 1;
  EXPECT_FALSE(WorkspaceEngine::Groupable(large));
  // A user's expectedTableVersion is not a key check's: such a run commits alone.
  WriteRequest exclusive = keyed("kx", {9}, out[0]->table_version);
  exclusive.expected_for_keys = false;
  EXPECT_FALSE(WorkspaceEngine::Groupable(exclusive));
}

// A keyed append checked its keys at one version and the table moved since:
// it commits on the new head unless a row that became live since (appended,
// or brought back by a restore) holds one of its keys. Then it is a
// conflict, nothing is written, and its run checks its keys again.
TEST_F(GroupCommitTest, AKeyedAppendCarriesItsKeyCheckToTheTablesNewHead) {
  ASSERT_TRUE(ws_->CreateTable("k", EventSchema(), {"id"}).ok());
  ASSERT_TRUE(ws_->SetGrant("k", "ada", Role::kWriter).ok());
  auto head = [&] { return ws_->Current().value().Find("k")->head.table_version; };
  auto keyed = [&](const std::string& run, std::vector<int64_t> ids, int64_t version) {
    WriteRequest w = Staged(run, ids, "ada", "k");
    w.expected_version = version;
    w.expected_for_keys = true;
    return w;
  };
  ASSERT_TRUE(ws_->Write(keyed("k1", {1, 2, 6}, head())).ok());
  const int64_t checked = head();
  const WriteRequest fresh = keyed("fresh", {3}, checked), taken = keyed("taken", {4}, checked);
  const WriteRequest grouped_a = keyed("ga", {7}, checked), grouped_b = keyed("gb", {8}, checked);
  ASSERT_TRUE(ws_->Write(keyed("other", {4, 5}, checked)).ok());
  ASSERT_GT(head(), checked);
  Result<WriteResult> carried = ws_->Write(fresh);
  ASSERT_TRUE(carried.ok()) << carried.status();
  Result<WriteResult> refused = ws_->Write(taken);
  ASSERT_TRUE(refused.status().Is(ErrorCode::kConflict)) << refused.status();
  EXPECT_NE(refused.status().message().find("gained one of run taken's keys"), std::string::npos)
      << refused.status();
  EXPECT_FALSE(RunCommit("taken"));
  // In a group too, checked at a version the table has since left.
  std::vector<Result<WriteResult>> group = ws_->WriteGroup({&grouped_a, &grouped_b});
  ASSERT_TRUE(group[0].ok()) << group[0].status();
  ASSERT_TRUE(group[1].ok()) << group[1].status();
  EXPECT_EQ(Ids("k"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));

  // A row deleted when the run checked its keys, live again after a restore.
  const int64_t before_delete = head();
  WriteRequest del;
  del.table = "k";
  del.mode = WriteMode::kDelete;
  del.where = {Predicate::Eq("id", int64_t{6})};
  del.principal = "ada";
  ASSERT_TRUE(ws_->Write(del).ok());
  const WriteRequest six = keyed("six", {6}, head());
  WriteRequest restore;
  restore.table = "k";
  restore.mode = WriteMode::kRestore;
  restore.restore_version = before_delete;
  restore.principal = "owner";
  ASSERT_TRUE(ws_->Write(restore).ok());
  Result<WriteResult> back = ws_->Write(six);
  ASSERT_TRUE(back.status().Is(ErrorCode::kConflict)) << back.status();
  EXPECT_EQ(Ids("k"), (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8}));
  // A caller's expected version is a compare-and-swap, never carried.
  WriteRequest cas = keyed("cas", {9}, checked);
  cas.expected_for_keys = false;
  EXPECT_TRUE(ws_->Write(cas).status().Is(ErrorCode::kConflict));
  EXPECT_FALSE(RunCommit("cas"));
}

// What cannot share a commit commits alone, as WorkspaceEngine::Write would.
TEST_F(GroupCommitTest, AnExpectedVersionCommitsAlone) {
  WriteRequest w = Staged("keyed", {9});
  w.expected_version = ws_->Current().value().Find("t")->head.table_version;
  EXPECT_FALSE(WorkspaceEngine::Groupable(w));
  GroupCommitter committer(ws_);
  ASSERT_TRUE(committer.Commit(w).ok());
  EXPECT_EQ(committer.stats().commits, 0);
  EXPECT_TRUE(RunCommit("keyed"));
}

// Another process's commit to the table is in progress (its table version
// is written, its publish not yet): an append that expects no version, alone
// or in a group, waits it out and commits after it instead of failing with a
// conflict that would make its run stage its rows again.
TEST_F(GroupCommitTest, AppendsWaitOutAnotherProcesssCommitInsteadOfFailing) {
  constexpr int64_t kGrace = int64_t{60} * 1000 * 1000;  // B must not roll A back
  std::mutex mu;
  std::condition_variable cv;
  int b_attempts = 0;
  auto open = [&](std::function<Status(std::string_view)> failpoint) {
    WorkspaceOptions o = TestOptions();
    o.system_actor = false;
    o.owner = "owner";
    o.recovery_grace_micros = kGrace;
    o.failpoint = std::move(failpoint);
    return WorkspaceEngine::Open(store_, root_, o).value();
  };
  std::shared_ptr<WorkspaceEngine> b = open([&](std::string_view at) {
    if (at == failpoint::kAfterSidecar) {
      std::lock_guard<std::mutex> lock(mu);
      ++b_attempts;
      cv.notify_all();
    }
    return Status::OK();
  });
  const WriteRequest alone = Staged("b-alone", {10});
  const WriteRequest first = Staged("b-first", {11});
  const WriteRequest second = Staged("b-second", {12, 13});
  std::vector<std::function<void()>> b_writes;
  Result<WriteResult> alone_done = Status::Internal("not run");
  std::vector<Result<WriteResult>> group_done;
  int b_finished = 0;
  auto finished = [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++b_finished;
    cv.notify_all();
  };
  b_writes.push_back([&] {
    alone_done = b->Write(alone);
    finished();
  });
  b_writes.push_back([&] {
    group_done = b->WriteGroup({&first, &second});
    finished();
  });
  std::vector<std::thread> threads;
  // A stops after each table commit, before its publish, until B has found
  // the table busy and started again (or gave up).
  std::shared_ptr<WorkspaceEngine> a = open([&](std::string_view at) -> Status {
    if (at != failpoint::kAfterTableCommit || threads.size() == b_writes.size()) {
      return Status::OK();
    }
    std::unique_lock<std::mutex> lock(mu);
    const int before = b_attempts;
    const int done_before = b_finished;
    threads.emplace_back(b_writes[threads.size()]);
    cv.wait(lock, [&] { return b_attempts >= before + 2 || b_finished > done_before; });
    return Status::OK();
  });
  ASSERT_TRUE(a->Write(Staged("a-1", {1})).ok());
  ASSERT_TRUE(a->Write(Staged("a-2", {2})).ok());
  for (std::thread& t : threads) t.join();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_TRUE(alone_done.ok()) << alone_done.status();
  ASSERT_EQ(group_done.size(), 2u);
  for (const Result<WriteResult>& r : group_done) EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1, 2, 10, 11, 12, 13}));
  for (const std::string run : {"a-1", "a-2", "b-alone", "b-first", "b-second"}) {
    EXPECT_TRUE(RunCommit(run).has_value()) << run;
  }
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

// A process commits on the table version it committed last without reading
// it back; when another process committed since, it reads the table as
// before, and when another committed between its head read and its commit,
// its put-if-absent fails and it commits again after that one.
TEST_F(GroupCommitTest, AProcessCommitsOnTheVersionItLastCommittedWithoutReadingIt) {
  auto counting = std::make_shared<CountingObjectStore>(store_, 2);
  std::function<Status()> between_head_and_commit;
  WorkspaceOptions o = TestOptions();
  o.system_actor = false;
  o.owner = "owner";
  o.recovery_grace_micros = int64_t{60} * 1000 * 1000;
  o.failpoint = [&](std::string_view at) {
    if (at != failpoint::kAfterSidecar || !between_head_and_commit) return Status::OK();
    std::function<Status()> once = std::move(between_head_and_commit);
    between_head_and_commit = nullptr;
    return once();
  };
  auto mine = WorkspaceEngine::Open(counting, root_, o).value();
  auto table_reads = [&] {
    const IoCounters c = counting->Snapshot().by_prefix[root_ + "/tables/"];
    return c.reads();
  };
  ASSERT_TRUE(mine->Write(Staged("r1", {1})).ok());
  const WriteRequest r2 = Staged("r2", {2});
  counting->Reset();
  ASSERT_TRUE(mine->Write(r2).ok());
  EXPECT_EQ(table_reads(), 0u);
  // Another process committed since: the table is read again.
  ASSERT_TRUE(ws_->Write(Staged("other-1", {3})).ok());
  const WriteRequest r3 = Staged("r3", {4});
  counting->Reset();
  ASSERT_TRUE(mine->Write(r3).ok());
  EXPECT_GT(table_reads(), 0u);
  // Another process commits after this one read the head.
  const WriteRequest r4 = Staged("r4", {5});
  const WriteRequest other = Staged("other-2", {6});
  between_head_and_commit = [&] { return ws_->Write(other).status(); };
  Result<WriteResult> raced = mine->Write(r4);
  ASSERT_TRUE(raced.ok()) << raced.status();
  EXPECT_FALSE(between_head_and_commit);
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(raced->table_version, ws_->Current().value().Find("t")->head.table_version);
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

// A write that found its table busy tries again only once its own sidecar
// is gone: when that delete fails, the write answers with the failure (its
// loader keeps the staged files and resumes) instead of starting over.
TEST_F(GroupCommitTest, ABusyWriteWhoseSidecarStaysDoesNotTryAgain) {
  WorkspaceOptions o = TestOptions();
  o.system_actor = false;
  o.owner = "owner";
  o.recovery_grace_micros = int64_t{60} * 1000 * 1000;
  int b_attempts = 0;
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  faulty->AddRule(FaultRule::FailNth("sidecar-delete", MaskOf({ObjectOp::kDelete}), 1,
                                     Status::Unavailable("injected"), "/_recovery/"));
  WorkspaceOptions bo = o;
  bo.failpoint = [&](std::string_view at) {
    if (at == failpoint::kAfterSidecar) ++b_attempts;
    return Status::OK();
  };
  auto b = WorkspaceEngine::Open(faulty, root_, bo).value();
  const WriteRequest mine = Staged("b", {2});
  Status b_status;
  WorkspaceOptions ao = o;
  ao.failpoint = [&](std::string_view at) {
    if (at == failpoint::kAfterTableCommit && b_attempts == 0) b_status = b->Write(mine).status();
    return Status::OK();
  };
  auto a = WorkspaceEngine::Open(store_, root_, ao).value();
  ASSERT_TRUE(a->Write(Staged("a", {1})).ok());
  EXPECT_TRUE(b_status.IsUnavailable()) << b_status;
  EXPECT_EQ(b_attempts, 1);
  EXPECT_EQ(faulty->Fired("sidecar-delete"), 1u);
  EXPECT_EQ(Ids(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace loam
