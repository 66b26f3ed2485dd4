// Reverting runs: an append run's rows and an upsert run's changes undone
// whatever committed since, one run of a group at a time, and the refusals
// when a later commit changed the same rows.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/json_parse.h"
#include "engine/retention.h"
#include "service/service_test_util.h"

namespace loam::service {
namespace {

using ingest::RunState;
using json = nlohmann::json;

// An upsert run's revert takes out the rows it wrote and puts back the rows it
// replaced, whatever committed since on other keys (and columns added since
// read null in them); a later commit that changed one of its keys blocks it,
// named in the message.
TEST_F(ServiceTest, AnUpsertRunRevertsDespiteLaterCommitsUnlessOneChangedItsKeys) {
  const std::string p =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  const Submission b =
      Submit(p, "b", Body(Upload(p, "id,amount,note\n2,9,x\n3,3,y\n").value())).value();
  const Submission c = Submit(p, "c", Body(Upload(p, "id,amount,note\n4,4,z\n").value())).value();
  EXPECT_EQ(Drain(), 3);
  ASSERT_EQ(Contents(), "1:150 2:900 3:300 4:400 ");
  // b changed a's key 2 since: a cannot come back, and nothing changes.
  Status later = Svc().RevertRun(Ctx("ada"), a.run.id).status();
  EXPECT_TRUE(later.Is(ErrorCode::kRevertBlocked)) << later;
  EXPECT_NE(later.message().find(Run(b.run.id).commit_id), std::string::npos) << later;
  EXPECT_EQ(Contents(), "1:150 2:900 3:300 4:400 ");
  EXPECT_TRUE(Svc().RevertRun(Ctx("rex"), b.run.id).status().Is(ErrorCode::kPermissionDenied));
  // A column added after b: the row b's revert puts back reads null in it.
  WriteRequest add;
  add.table = "orders";
  add.mode = WriteMode::kAddColumn;
  add.principal = "adm";
  add.new_column = Field{"extra", DataType::Int64(), true};
  Result<WriteResult> added = ws_->Write(add);
  ASSERT_TRUE(added.ok()) << added.status();
  const int64_t head = ws_->Current().value().tables.at("orders").head.table_version;
  // c committed after b on other keys: b reverts, exactly its changes.
  Result<WriteResult> reverted = Svc().RevertRun(Ctx("ada"), b.run.id);
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(reverted->table_version, head + 1);
  EXPECT_EQ(Contents(), "1:150 2:250 4:400 ");
  Snapshot snap = ws_->Current().value();
  const RecordBatch all = ws_->OpenTable(snap, "orders").value().ReadAll().value();
  ASSERT_EQ(all.num_rows(), 3);
  ASSERT_EQ(all.columns.size(), 4u);
  for (int64_t r = 0; r < all.num_rows(); ++r) {
    if (all.columns[0].GetInt64(r) == 2) {
      EXPECT_TRUE(all.columns[3].IsNull(r));
      EXPECT_EQ(all.columns[2].GetBytes(r), "b");
    }
  }
  // Twice: the first revert is the later commit that took b's rows.
  Status twice = Svc().RevertRun(Ctx("ada"), b.run.id).status();
  EXPECT_TRUE(twice.Is(ErrorCode::kRevertBlocked)) << twice;
  EXPECT_NE(twice.message().find(reverted->commit_id), std::string::npos) << twice;
  ASSERT_TRUE(Svc().RevertRun(Ctx("ada"), c.run.id).ok());
  EXPECT_EQ(Contents(), "1:150 2:250 ");
  const Submission bad = Submit(p, "d", Body(Upload(p, "id,amount,note\nx,1,y\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  EXPECT_TRUE(Svc().RevertRun(Ctx("ada"), bad.run.id).status().Is(ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

// Past the time-travel window an upsert run's revert is version_expired,
// even while the files of its versions stay for inline parts still in use,
// and nothing changes.
TEST_F(ServiceTest, AnUpsertRunPastTheWindowIsNotReverted) {
  const std::string p =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  const Submission z = Submit(p, "z", Body(Upload(p, "id,amount,note\n9,9,z\n").value())).value();
  const Submission a = Submit(p, "a", Body(Upload(p, kRows).value())).value();
  const Submission c = Submit(p, "c", Body(Upload(p, "id,amount,note\n4,4,z\n").value())).value();
  EXPECT_EQ(Drain(), 3);
  const std::string before = Contents();
  const int64_t later = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count() +
                        2 * 3600LL * 1'000'000;
  ASSERT_TRUE(ExpireVersions(*ws_, later, 60, 0).ok());
  Status expired = Svc().RevertRun(Ctx("ada"), a.run.id).status();
  EXPECT_TRUE(expired.Is(ErrorCode::kVersionExpired)) << expired;
  EXPECT_EQ(expired.detail("run"), a.run.id);
  EXPECT_EQ(Contents(), before);
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

// A replace run restores the table before it, and only while it is the
// table's latest commit.
TEST_F(ServiceTest, AReplaceRunRevertsOnlyWhileItIsTheLatestCommit) {
  const std::string p =
      MakePipeline(R"({"name":"r","table":"orders","format":"csv","mode":"replace"})", "adm");
  const std::string u =
      MakePipeline(R"({"name":"u","table":"orders","format":"csv","mode":"upsert"})");
  const Submission a = Submit(u, "a", Body(Upload(u, kRows).value())).value();
  EXPECT_EQ(Drain(), 1);
  const Submission b =
      Submit(p, "b", Body(Upload(p, "id,amount,note\n7,7,x\n", "adm").value()), "adm").value();
  EXPECT_EQ(Drain(), 1);
  const Submission c = Submit(u, "c", Body(Upload(u, "id,amount,note\n8,8,y\n").value())).value();
  EXPECT_EQ(Drain(), 1);
  ASSERT_EQ(Contents(), "7:700 8:800 ");
  Status later = Svc().RevertRun(Ctx("adm"), b.run.id).status();
  EXPECT_TRUE(later.Is(ErrorCode::kRevertBlocked)) << later;
  EXPECT_NE(later.message().find(Run(c.run.id).commit_id), std::string::npos) << later;
  ASSERT_TRUE(Svc().RevertRun(Ctx("ada"), c.run.id).ok());
  EXPECT_EQ(Contents(), "7:700 ");
  // c's revert is a later commit too.
  EXPECT_TRUE(Svc().RevertRun(Ctx("adm"), b.run.id).status().Is(ErrorCode::kRevertBlocked));
  const Submission d = Submit(p, "d", Body(Upload(p, kRows, "adm").value()), "adm").value();
  EXPECT_EQ(Drain(), 1);
  ASSERT_EQ(Contents(), "1:150 2:250 ");
  Result<WriteResult> reverted = Svc().RevertRun(Ctx("adm"), d.run.id);
  ASSERT_TRUE(reverted.ok()) << reverted.status();
  EXPECT_EQ(reverted->table_version, Run(d.run.id).table_version + 1);
  EXPECT_EQ(Contents(), "7:700 ");
  EXPECT_EQ(Run(a.run.id).state, RunState::kSucceeded);
}

// 40 append runs that reach their commit together share a few commits
// (group commit); any one of them reverts alone, exactly its rows, whatever
// committed after it.
TEST_F(ServiceTest, GroupedAppendRunsRevertOneByOneExactlyTheirRows) {
  ASSERT_TRUE(ws_->CreateTable("events", OrdersSchema(), {}).ok());
  ASSERT_TRUE(ws_->SetGrant("events", "ada", Role::kWriter).ok());
  constexpr int kRuns = 40;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  options_.failpoint = [&](std::string_view at) -> Status {
    if (at != ingest::failpoint::kRunBeforeCommit) return Status::OK();
    std::unique_lock<std::mutex> lock(mu);
    ++arrived;
    cv.notify_all();
    // Every run waits for all to be validated (bounded, so a regression
    // that keeps runs apart fails the commit count instead of hanging).
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return arrived >= kRuns; });
    return Status::OK();
  };
  options_.workers = kRuns;
  options_.lease_micros = 600'000'000;
  options_.limits.max_concurrent_runs_per_pipeline = 1000;
  options_.limits.tiny_runs_per_minute = 1000;
  // After its first commit the line commits at most every 200 ms, so the
  // runs released together gather however fast the store commits.
  options_.group_commit_interval_micros = 200'000;
  const std::string p = MakePipeline(R"({"name":"ev","table":"events","format":"csv"})");
  auto submit = [&](int i) {
    const std::string row =
        "id,amount,note\n" + std::to_string(i) + "," + std::to_string(i) + ".00,x\n";
    return Submit(p, "k" + std::to_string(i), Body(Upload(p, row).value())).value().run.id;
  };
  std::vector<std::string> runs;
  for (int i = 1; i <= kRuns; ++i) runs.push_back(submit(i));
  Svc().StartWorkers();
  ASSERT_TRUE(Svc().WaitForEmptyQueue(std::chrono::seconds(120)).ok());
  std::set<std::string> commits;
  for (const std::string& id : runs) {
    const ingest::RunRecord r = Run(id);
    ASSERT_EQ(r.state, RunState::kSucceeded) << r.error;
    commits.insert(r.commit_id);
  }
  EXPECT_LT(commits.size(), static_cast<size_t>(kRuns) / 4) << "runs barely shared commits";
  // Small runs are staged in memory, and the runs of a commit share its
  // fragment: a revert below removes rows from inside it.
  EXPECT_EQ(ws_->OpenTable(ws_->Current().value(), "events").value().state().fragments.size(),
            commits.size());
  int last = kRuns;
  auto expect_all_but = [&](std::set<int> gone) {
    std::string want;
    for (int i = 1; i <= last; ++i) {
      if (!gone.count(i)) {
        want += std::to_string(i) + ":" + std::to_string(i * 100) + " ";
      }
    }
    std::vector<std::string> got, wanted;
    std::istringstream g(Contents()), w(want);
    for (std::string x; g >> x;) got.push_back(x);
    for (std::string x; w >> x;) wanted.push_back(x);
    std::sort(got.begin(), got.end());
    std::sort(wanted.begin(), wanted.end());
    EXPECT_EQ(got, wanted);
  };
  expect_all_but({});
  std::set<int> gone;
  for (int i : {5, 17, 33}) {
    Result<WriteResult> reverted = Svc().RevertRun(Ctx("ada"), runs[i - 1]);
    ASSERT_TRUE(reverted.ok()) << reverted.status();
    gone.insert(i);
    expect_all_but(gone);
  }
  // A later commit does not block the revert of an earlier append run.
  runs.push_back(submit(++last));
  ASSERT_TRUE(Svc().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  ASSERT_TRUE(Svc().RevertRun(Ctx("ada"), runs[0]).ok());
  gone.insert(1);
  expect_all_but(gone);
  Status twice = Svc().RevertRun(Ctx("ada"), runs[4]).status();
  EXPECT_TRUE(twice.Is(ErrorCode::kPreconditionFailed)) << twice;
  EXPECT_NE(twice.message().find("no longer in table"), std::string::npos) << twice;
  EXPECT_TRUE(Svc().RevertRun(Ctx("rex"), runs[1]).status().Is(ErrorCode::kPermissionDenied));
  expect_all_but(gone);
  // Compactions merge the runs' fragments; a run's revert still removes
  // exactly its rows, followed into the fragments they were moved to.
  auto compact = [&] {
    WriteRequest c;
    c.table = "events";
    c.mode = WriteMode::kCompact;
    c.principal = "owner";
    Result<WriteResult> done = ws_->Write(c);
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_TRUE(done->changed);
  };
  // A run whose rows share a fragment with its group-mates'.
  int pick = 0;
  uint64_t shared = 0;
  for (int i = 6; i <= kRuns && pick == 0; ++i) {
    const json meta =
        ParseJson(ws_->manifest().FindJournalRow("", RunCommitId(runs[i - 1])).value()->metadata);
    if (!gone.count(i) && i != 20 && meta.contains("fragment_rows")) {
      pick = i;
      shared = meta["fragment_rows"][0].get<uint64_t>();
    }
  }
  ASSERT_NE(pick, 0) << "no run shared a fragment";
  compact();
  // The compaction moved the picked run's rows out of the fragment it shared.
  EXPECT_EQ(ws_->OpenTable(ws_->Current().value(), "events").value().state().FindFragment(shared),
            nullptr);
  ASSERT_TRUE(Svc().RevertRun(Ctx("ada"), runs[pick - 1]).ok());
  gone.insert(pick);
  expect_all_but(gone);
  runs.push_back(submit(++last));
  ASSERT_TRUE(Svc().WaitForEmptyQueue(std::chrono::seconds(60)).ok());
  compact();  // the first compaction's fragment (with a deleted row) and the new run's
  for (int i : {20, last}) {
    ASSERT_TRUE(Svc().RevertRun(Ctx("ada"), runs[i - 1]).ok()) << i;
    gone.insert(i);
    expect_all_but(gone);
  }
  EXPECT_TRUE(
      Svc().RevertRun(Ctx("ada"), runs[pick - 1]).status().Is(ErrorCode::kPreconditionFailed));
  EXPECT_TRUE(ws_->VerifyHeads().value().ok());
}

}  // namespace
}  // namespace loam::service
