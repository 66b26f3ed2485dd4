// The fixture of the `loam migrate` tests (migration_test.cc,
// migration_guard_test.cc): a branched history written as heads without a
// stamp, or as the journal-only format 4, captured before it is migrated.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/format4_writer.h"
#include "engine/migration.h"
#include "engine/workspace_test_util.h"
#include "io/test_store.h"

namespace loam::migration_testing {

using testing::Append;
using testing::EventSchema;
using testing::ExpectHeadsMatchFold;
using testing::RowsOf;

inline const std::vector<std::string>& kBranches = testing::BranchedHistoryBranches();

// What a branch looks like from outside: its current state, data and log.
struct BranchState {
  std::map<std::string, TableHead> heads;
  std::map<std::string, TableDef> defs;
  std::optional<GraphHead> graph_head;
  std::vector<Grant> grants;
  std::map<std::string, int64_t> rows;
  std::vector<std::string> log;
  friend bool operator==(const BranchState&, const BranchState&) = default;
};

inline BranchState Capture(const WorkspaceEngine& ws, const std::string& branch) {
  BranchState s;
  Snapshot snap = ws.Current(branch).value();
  for (const auto& [name, t] : snap.tables) {
    s.heads[name] = t.head;
    s.defs[name] = t.def;
    s.rows[name] = RowsOf(ws, name, branch);
  }
  s.graph_head = snap.graph_head;
  s.grants = snap.grants;
  for (const GraphCommitInfo& c : ws.Log(branch).value()) s.log.push_back(c.id);
  return s;
}

// Fails the `nth` call at `point` (counting from 1), as a crash there would.
inline std::function<Status(std::string_view)> CrashAt(std::string point, int nth = 1) {
  auto seen = std::make_shared<int>(0);
  return [point, nth, seen](std::string_view at) {
    if (at == point && ++*seen == nth) return Status::Aborted("crashed at " + point);
    return Status::OK();
  };
}

// What `loam migrate` converts: heads written by a Loam before the stamp, or
// the journal-only format 4 (written by the test-only writer from the same
// history, with a write that crashed before its publish left pending).
enum class Source { kUnstampedHeads, kFormat4 };

inline std::string SourceName(const ::testing::TestParamInfo<Source>& info) {
  return info.param == Source::kFormat4 ? "Format4" : "UnstampedHeads";
}

class MigrationTest : public ::testing::TestWithParam<Source> {
 protected:
  void SetUp() override {
    store_ = testing::NewTestStore();
    const bool v4 = GetParam() == Source::kFormat4;
    const std::string at = v4 ? "src" : "ws";
    auto ws = WorkspaceEngine::Init(store_, at, testing::TestOptions()).value();
    ASSERT_TRUE(testing::BuildBranchedHistory(*ws).ok());
    for (const std::string& b : kBranches) before_[b] = Capture(*ws, b);
    if (!v4) {
      // What a Loam from before the stamp left: the same objects, no stamp.
      ASSERT_TRUE(store_->Delete(FormatStampKey("ws")).ok());
      return;
    }
    WorkspaceOptions o = testing::TestOptions();
    o.failpoint = CrashAt(std::string(failpoint::kAfterTableCommit));
    ASSERT_FALSE(
        WorkspaceEngine::Open(store_, at, o).value()->Write(Append("orders", {8, 9}, "dev")).ok());
    ASSERT_TRUE(
        testing::WriteFormat4(*store_, at, store_, "ws", testing::TestOptions().manifest.dataset)
            .ok());
  }
  bool Format4() const { return GetParam() == Source::kFormat4; }
  // What MigrationReport::from says.
  std::string From() const {
    return Format4() ? "format 4 (journal-only manifest)"
                     : "unstamped heads (head directory format " +
                           std::to_string(kManifestFormatVersion) + ")";
  }

  Result<std::shared_ptr<WorkspaceEngine>> Open() {
    return WorkspaceEngine::Open(store_, "ws", testing::TestOptions());
  }
  Result<MigrationReport> Migrate(std::function<Status(std::string_view)> fail = {},
                                  std::string take_over = "") {
    WorkspaceOptions o = testing::TestOptions();
    o.failpoint = std::move(fail);
    return MigrateWorkspace(store_, "ws", o, MigrateOptions{std::move(take_over)});
  }
  bool Stamped() { return ReadFormatStamp(*store_, "ws").ok(); }
  // The claimed migration's token.
  std::string ClaimToken() {
    const std::string claim = store_->Get(MigrationClaimKey("ws")).value();
    const size_t at = claim.find("\"token\":\"");
    return at == std::string::npos ? "" : claim.substr(at + 9, 26);
  }
  // The workspace as a writer that ignores the format sees it (a process
  // started before the migration, or an old binary).
  // Without recovery on open: the barrier is the migration's to run.
  std::shared_ptr<WorkspaceEngine> OpenAnyFormat(
      std::function<Status(std::string_view)> fail = {}) {
    WorkspaceOptions o = testing::TestOptions();
    o.any_format = true;
    o.recover_on_open = false;
    o.failpoint = std::move(fail);
    return WorkspaceEngine::Open(store_, "ws", o).value();
  }

  // Every branch as before, every marker in place, heads verified, stamped.
  void ExpectMigrated() {
    ASSERT_TRUE(Stamped());
    EXPECT_TRUE(store_->Get(MigrationClaimKey("ws")).status().IsNotFound());
    auto ws = Open();
    ASSERT_TRUE(ws.ok()) << ws.status();
    for (const std::string& b : kBranches) {
      SCOPED_TRACE("branch '" + b + "'");
      EXPECT_EQ(Capture(**ws, b), before_[b]);
      ExpectHeadsMatchFold(**ws, b);
      auto marker = (*ws)->manifest().FindJournalRow(b, HeadsMarkerId(kWorkspaceFormat));
      ASSERT_TRUE(marker.ok() && marker->has_value());
    }
  }

  std::shared_ptr<ObjectStore> store_;
  std::map<std::string, BranchState> before_;
};

}  // namespace loam::migration_testing
