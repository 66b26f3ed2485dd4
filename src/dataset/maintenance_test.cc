#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "common/status_macros.h"
#include "dataset/dataset_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;
using testing::Range;

class MaintenanceTest : public ::testing::Test {
 protected:
  size_t CountKeys(std::string_view suffix) {
    size_t n = 0;
    for (const ObjectInfo& o : store_->ListAll("").value()) n += o.key.ends_with(suffix) ? 1 : 0;
    return n;
  }
  static DatasetOptions FilesOnly() {
    DatasetOptions o;
    o.max_inline_fragment_bytes = 0;  // every fragment a file, as cleanup tests count files
    return o;
  }
  std::shared_ptr<ObjectStore> store_ = testing::NewTestStore();
  Dataset ds_ = Dataset::Create(store_, "t", PeopleSchema(), FilesOnly()).value();
  // The same dataset with small fragments inline in their version files.
  Dataset inline_ = Dataset::Open(store_, "t").value();
};

TEST_F(MaintenanceTest, CompactionBinPacksSmallFragmentsAndKeepsRows) {
  Dataset ds = ds_;
  for (int i = 0; i < 10; ++i) ds = ds.Append({People(Range(i * 10, i * 10 + 10))}).value();
  ds = ds.Delete({Predicate::Lt("id", int64_t{5})}).value();
  const auto before = Contents(ds);
  ASSERT_EQ(ds.state().fragments.size(), 10u);
  CompactionStats stats;
  Dataset compacted = ds.Compact({.target_rows = 40}, &stats).value();
  EXPECT_EQ(stats.fragments_removed, 10);
  EXPECT_EQ(compacted.state().fragments.size(), 3u);  // 5 + 40 + 40 live rows, newest binned first
  for (const Fragment& f : compacted.state().fragments) EXPECT_EQ(f.deleted_rows, 0u);
  EXPECT_EQ(Contents(compacted), before);
  // Nothing left to do: no commit.
  EXPECT_EQ(compacted.Compact({.target_rows = 40}).value().version(), compacted.version());
}

// Size-tiered: small fragments merge into each other, not into an older
// larger one, which a pass leaves as it is until as many rows arrived.
TEST_F(MaintenanceTest, CompactionMergesSmallFragmentsIntoEachOtherFirst) {
  Dataset ds = ds_.Append({People(Range(0, 64))}).value();
  const uint64_t big = ds.state().fragments[0].id;
  int next = 64;
  auto add = [&](int n) {
    for (int i = 0; i < n; ++i, ++next) ds = ds.Append({People(Range(next, next + 1))}).value();
  };
  add(8);
  ds = ds.Compact({.target_rows = 1000}).value();
  ASSERT_EQ(ds.state().fragments.size(), 2u);
  EXPECT_EQ(ds.state().fragments[0].id, big);
  EXPECT_EQ(ds.state().fragments[1].physical_rows, 8u);
  add(8);  // 8 new rows join the 8 merged before (as large), not the 64
  ds = ds.Compact({.target_rows = 1000}).value();
  ASSERT_EQ(ds.state().fragments.size(), 2u);
  EXPECT_EQ(ds.state().fragments[0].id, big);
  EXPECT_EQ(ds.state().fragments[1].physical_rows, 16u);
  add(48);  // 48 join the 16 (as large), and 64 rows then join the 64
  const auto before = Contents(ds);
  ds = ds.Compact({.target_rows = 1000}).value();
  ASSERT_EQ(ds.state().fragments.size(), 1u);
  EXPECT_EQ(ds.state().fragments[0].physical_rows, 128u);
  EXPECT_EQ(Contents(ds), before);
  EXPECT_EQ(before.size(), 128u);
}

// A pass after every few rows rewrites each row about log2(passes) times and
// leaves about as many fragments; merging every pass into one fragment would
// rewrite the whole table each time (20,200 rows here).
TEST_F(MaintenanceTest, RepeatedCompactionRewritesEachRowLogarithmicallyOften) {
  Dataset ds = ds_;
  uint64_t rewritten = 0;
  size_t most_fragments = 0;
  for (int pass = 0; pass < 100; ++pass) {
    for (int i = 0; i < 4; ++i) {
      const int64_t id = pass * 4 + i;
      ds = ds.Append({People(Range(id, id + 1))}).value();
    }
    std::set<uint64_t> had;
    for (const Fragment& f : ds.state().fragments) had.insert(f.id);
    const auto before = Contents(ds);
    ds = ds.Compact({.target_rows = 1 << 20}).value();
    ASSERT_EQ(Contents(ds), before) << "pass " << pass;
    for (const Fragment& f : ds.state().fragments) {
      if (!had.count(f.id)) rewritten += f.physical_rows;
    }
    most_fragments = std::max(most_fragments, ds.state().fragments.size());
  }
  EXPECT_EQ(Contents(ds).size(), 400u);
  EXPECT_LE(rewritten, 400u * 9) << "rows rewritten over 100 passes";
  EXPECT_LE(most_fragments, 8u);
}

TEST_F(MaintenanceTest, CompactionMaterialisesHeavyDeletions) {
  Dataset ds = ds_.Append({People(Range(0, 100))}).value();
  ds = ds.Delete({Predicate::Lt("id", int64_t{30})}).value();
  Dataset compacted = ds.Compact({.target_rows = 100, .max_deleted_fraction = 0.2}).value();
  ASSERT_EQ(compacted.state().fragments.size(), 1u);
  EXPECT_EQ(compacted.state().fragments[0].physical_rows, 70u);
  EXPECT_EQ(Contents(compacted), Contents(ds));
}

TEST_F(MaintenanceTest, DeleteRacingACompactionReRunsOnTheNewFragments) {
  Dataset ds = ds_.Append({People({1, 2})}).value().Append({People({3, 4})}).value();
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  Dataset through = Dataset::Open(faulty, "t").value();
  faulty->AddRule(FaultRule::HookAt(
      "compact-first", MaskOf({ObjectOp::kPutIfAbsent}), 1, [&] { ASSERT_TRUE(ds.Compact().ok()); },
      "_versions/"));
  Dataset after = through.Delete({Predicate::Eq("id", int64_t{3})}).value();
  EXPECT_EQ(Contents(after),
            (std::map<int64_t, std::string>{{1, "name-1-v1"}, {2, "name-2-v1"}, {4, "name-4-v1"}}));
  EXPECT_EQ(after.state().fragments.size(), 1u);
  EXPECT_EQ(after.state().txn.op, OpType::kDelete);
}

// A plan made before appends commits after them, the appends kept and their
// fragments left alone; one whose fragment lost a row meanwhile is refused
// (it would bring the row back) and commits nothing.
TEST_F(MaintenanceTest, ACompactionPlanCommitsPastAppendsButNotPastADelete) {
  Dataset ds = ds_;
  for (int i = 0; i < 4; ++i) ds = ds.Append({People(Range(i * 10, i * 10 + 10))}).value();
  CompactionPlan plan = ds.PlanCompaction({.target_rows = 100}).value();
  ASSERT_EQ(plan.removed.size(), 4u);
  Dataset later = ds.Append({People(Range(40, 45))}).value().Append({People({50})}).value();
  const auto before = Contents(later);
  CompactionStats stats;
  Dataset compacted = later.CommitCompaction(plan, &stats).value();
  EXPECT_EQ(stats.fragments_removed, 4);
  EXPECT_EQ(compacted.state().fragments.size(), 3u);  // the plan's one and the two appends
  EXPECT_EQ(Contents(compacted), before);
  EXPECT_EQ(compacted.state().txn.op, OpType::kCompact);

  CompactionPlan stale = compacted.PlanCompaction({.target_rows = 100}).value();
  ASSERT_FALSE(stale.empty());
  Dataset deleted = compacted.Delete({Predicate::Eq("id", int64_t{3})}).value();
  Result<Dataset> refused = deleted.CommitCompaction(stale);
  EXPECT_TRUE(refused.status().IsFailedPrecondition()) << refused.status();
  EXPECT_NE(refused.status().message().find("changed since version"), std::string::npos);
  Dataset latest = deleted.Latest().value();
  EXPECT_EQ(latest.version(), deleted.version());
  EXPECT_EQ(Contents(latest).count(3), 0u);
}

TEST_F(MaintenanceTest, CleanupKeepsLatestTagsAndBranchesAndRemovesTheRest) {
  Dataset v2 = ds_.Append({People({1, 2})}).value();
  Dataset v3 = v2.Overwrite({People({3})}).value();
  Dataset v4 = v3.Overwrite({People({4})}).value();
  ASSERT_TRUE(v4.CreateTag("keep3", 3).ok());
  Dataset dev = Dataset::Open(store_, "t", {.version = 2}).value().CreateBranch("dev").value();
  Dataset v5 = v4.Overwrite({People({5})}).value();
  // An orphan from a failed write, not yet past the grace period.
  ASSERT_TRUE(store_->Put("t/data/orphan.lfrag", "x").ok());
  const int64_t now = Clock::System()->NowMicros();

  CleanupOptions opts;
  opts.older_than_micros = now + 1;             // every version is old
  opts.grace_cutoff_micros = now - 60'000'000;  // the orphan is recent
  CleanupStats stats = v5.Cleanup(opts).value();
  // Kept: 5 (latest), 3 (tag), 2 (fork point of dev), 1 is removed.
  EXPECT_EQ(stats.versions_removed, 2);    // versions 1 and 4
  EXPECT_EQ(stats.data_files_removed, 1);  // version 4's fragment
  EXPECT_TRUE(store_->Head("t/data/orphan.lfrag").ok());
  EXPECT_EQ(Contents(Dataset::Open(store_, "t").value()), Contents(v5));
  EXPECT_EQ(Contents(Dataset::Open(store_, "t", {.tag = "keep3"}).value()), Contents(v3));
  EXPECT_EQ(Contents(Dataset::Open(store_, "t", {.branch = "dev"}).value()), Contents(v2));
  EXPECT_TRUE(Dataset::Open(store_, "t", {.version = 4}).status().IsNotFound());

  // Past the grace period the orphan goes too; a second run is idempotent.
  opts.grace_cutoff_micros = Clock::System()->NowMicros();
  CleanupStats again = v5.Cleanup(opts).value();
  EXPECT_EQ(again.versions_removed, 0);
  EXPECT_EQ(again.data_files_removed, 1);
  EXPECT_TRUE(store_->Head("t/data/orphan.lfrag").status().IsNotFound());
  EXPECT_EQ(CountKeys(".lfrag"), 3u);  // fragments of versions 2, 3 and 5
}

TEST_F(MaintenanceTest, CleanupHonoursRetentionByTimeAndCount) {
  Dataset ds = ds_;
  for (int i = 0; i < 5; ++i) ds = ds.Overwrite({People({i})}).value();
  CleanupOptions opts;
  opts.older_than_micros = 0;  // nothing is old enough
  opts.grace_cutoff_micros = Clock::System()->NowMicros();
  EXPECT_EQ(ds.Cleanup(opts).value().versions_removed, 0);
  opts.older_than_micros = Clock::System()->NowMicros() + 1;
  opts.keep_versions = 3;
  CleanupStats stats = ds.Cleanup(opts).value();
  EXPECT_EQ(stats.versions_removed, 3);  // 6 versions, 3 kept
  EXPECT_EQ(ds.ListVersions().value().size(), 3u);
  EXPECT_EQ(CountKeys(".lfrag"), 3u);  // one fragment each for versions 4, 5 and 6
}

TEST_F(MaintenanceTest, CleanupRemovesOldestFirstSoNoGapLiesBelowAKeptVersion) {
  // Writers' clocks disagree: version 3 carries a later time than version 4.
  ManualClock clock(100);
  DatasetOptions o = FilesOnly();
  o.clock = &clock;
  Dataset ds = Dataset::Create(store_, "skewed", PeopleSchema(), o).value();  // v1 at 100
  ds = ds.Overwrite({People({1})}).value();                                   // v2 at 100
  clock.SetMicros(200);
  ds = ds.Overwrite({People({2})}).value();  // v3 at 200
  clock.SetMicros(50);
  ds = ds.Overwrite({People({3})}).value();  // v4 at 50
  clock.SetMicros(300);
  ds = ds.Overwrite({People({4})}).value();  // v5 at 300
  CleanupOptions opts;
  opts.older_than_micros = 150;  // v3 alone is recent by time, but v4 below it is not
  opts.grace_cutoff_micros = 0;
  ASSERT_TRUE(ds.Cleanup(opts).ok());
  std::vector<uint64_t> left;
  for (const VersionSummary& v : ds.ListVersions().value()) left.push_back(v.version);
  EXPECT_EQ(left, std::vector<uint64_t>{5});
  // A writer that knows version 4 finds the latest without a gap misleading it.
  EXPECT_EQ(Dataset::OpenLatestFrom(store_, "skewed", "", 4, o).value().version(), 5u);
  EXPECT_EQ(Dataset::OpenLatestFrom(store_, "skewed", "", 5, o).value().version(), 5u);
}

TEST_F(MaintenanceTest, CleanupNeverRemovesTheNewestVersion) {
  Dataset ds = ds_.Overwrite({People({1})}).value().Overwrite({People({2})}).value();
  CleanupOptions opts;
  opts.older_than_micros = Clock::System()->NowMicros() + 1;
  opts.keep_versions = 0;
  opts.grace_cutoff_micros = opts.older_than_micros;
  EXPECT_EQ(ds.Cleanup(opts).value().versions_removed, 2);
  Dataset latest = Dataset::Open(store_, "t").value();
  EXPECT_EQ(latest.version(), 3u);
  EXPECT_EQ(Contents(latest), Contents(ds));
  EXPECT_EQ(latest.Append({People({3})}).value().version(), 4u);
}

TEST_F(MaintenanceTest, RestoreCommittedDuringCleanupKeepsItsFiles) {
  Dataset v2 = ds_.Append({People({1, 2})}).value();
  Dataset v3 = v2.Overwrite({People({3})}).value();
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  Dataset through = Dataset::Open(faulty, "t").value();
  // Just before cleanup deletes its first version file, another writer
  // restores version 2, whose fragment cleanup has marked as unused.
  faulty->AddRule(FaultRule::HookAt(
      "restore", MaskOf({ObjectOp::kDelete}), 1, [&] { ASSERT_TRUE(v3.Restore(2).ok()); },
      "_versions/"));
  CleanupOptions opts;
  opts.older_than_micros = Clock::System()->NowMicros() + 1;
  opts.grace_cutoff_micros = opts.older_than_micros;
  ASSERT_TRUE(through.Cleanup(opts).ok());
  EXPECT_EQ(faulty->Fired("restore"), 1u);
  Dataset latest = Dataset::Open(store_, "t").value();
  EXPECT_EQ(latest.version(), 4u);
  EXPECT_EQ(Contents(latest), Contents(v2));  // the restored fragment is still there
}

TEST_F(MaintenanceTest, CleanupSparesVersionsWhoseInlineFragmentsAreStillUsed) {
  Dataset ds = inline_;
  for (int i = 1; i <= 3; ++i) ds = ds.Append({People({i})}).value();  // versions 2..4
  ASSERT_EQ(CountKeys(".lfrag"), 0u);
  for (const Fragment& f : ds.state().fragments) ASSERT_GT(f.data_offset, 0u);
  CleanupOptions opts;
  opts.older_than_micros = Clock::System()->NowMicros() + 1;  // every version is old
  opts.grace_cutoff_micros = opts.older_than_micros;
  // Version 4 uses fragments inside versions 2 and 3: they stay, loadable.
  CleanupStats stats = ds.Cleanup(opts).value();
  EXPECT_EQ(stats.versions_removed, 1);  // version 1 (no rows)
  EXPECT_EQ(Contents(Dataset::Open(store_, "t").value()), Contents(ds));
  EXPECT_EQ(Contents(Dataset::Open(store_, "t", {.version = 2}).value()).size(), 1u);
  // Once a version no longer uses them, they go.
  Dataset replaced = ds.Overwrite({People({9})}).value();
  stats = replaced.Cleanup(opts).value();
  EXPECT_EQ(stats.versions_removed, 3);
  EXPECT_EQ(replaced.ListVersions().value().size(), 1u);
  EXPECT_EQ(Contents(Dataset::Open(store_, "t").value()),
            (std::map<int64_t, std::string>{{9, "name-9-v1"}}));
}

TEST_F(MaintenanceTest, CleanupSparesVersionsWhoseInlineDeletionsAreStillUsed) {
  Dataset v3 =
      inline_.Append({People({1, 2})}).value().Delete({Predicate::Eq("id", int64_t{1})}).value();
  ASSERT_EQ(v3.state().fragments.at(0).deletion_path, "_versions/" + VersionFileName(3));
  Dataset v4 = v3.Append({People({3})}).value();
  CleanupOptions opts;
  opts.older_than_micros = Clock::System()->NowMicros() + 1;
  opts.grace_cutoff_micros = opts.older_than_micros;
  EXPECT_EQ(v4.Cleanup(opts).value().versions_removed, 1);              // version 1 only
  EXPECT_TRUE(store_->Head("t/_versions/" + VersionFileName(2)).ok());  // the fragment
  EXPECT_TRUE(store_->Head("t/_versions/" + VersionFileName(3)).ok());  // the deletion file
  const std::map<int64_t, std::string> expected = {{2, "name-2-v1"}, {3, "name-3-v1"}};
  EXPECT_EQ(Contents(Dataset::Open(store_, "t").value()), expected);
  // Compaction rewrites the rows without the deletion; then all but the newest go.
  Dataset compacted = v4.Compact().value();
  EXPECT_EQ(compacted.Cleanup(opts).value().versions_removed, 3);
  EXPECT_EQ(Contents(Dataset::Open(store_, "t").value()), expected);
}

TEST_F(MaintenanceTest, RestoreCommittedDuringCleanupKeepsItsInlineFragments) {
  Dataset v2 = inline_.Append({People({1, 2})}).value();
  Dataset v3 = v2.Overwrite({People({3})}).value();
  ASSERT_GT(v2.state().fragments.at(0).data_offset, 0u);
  auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
  Dataset through = Dataset::Open(faulty, "t").value();
  // Just after cleanup deletes its first version file (version 1, no
  // fragments), another writer restores version 2, whose file cleanup has
  // marked for removal but which holds the restored rows.
  faulty->AddRule(FaultRule::HookAt(
      "restore", MaskOf({ObjectOp::kDelete}), 1, [&] { ASSERT_TRUE(v3.Restore(2).ok()); },
      "_versions/"));
  CleanupOptions opts;
  opts.older_than_micros = Clock::System()->NowMicros() + 1;
  opts.grace_cutoff_micros = opts.older_than_micros;
  CleanupStats stats = through.Cleanup(opts).value();
  EXPECT_EQ(faulty->Fired("restore"), 1u);
  // Version 1 goes; 3 was the newest when cleanup listed; 2 holds what 4 uses.
  EXPECT_EQ(stats.versions_removed, 1);
  EXPECT_TRUE(store_->Head("t/_versions/" + VersionFileName(2)).ok());
  Dataset latest = Dataset::Open(store_, "t").value();
  EXPECT_EQ(latest.version(), 4u);
  EXPECT_EQ(Contents(latest), Contents(v2));
}

// What a merge-insert replaced is found by comparing its version with the one
// before, and ReplaceRowsStaged puts it back in place of the merge's rows in
// one commit; rows deleted since are refused and nothing commits.
TEST_F(MaintenanceTest, ReplaceRowsPutsBackWhatAMergeReplaced) {
  Dataset before = ds_.Append({People(Range(0, 10))}).value().Append({People({10, 11})}).value();
  before = before.Delete({Predicate::Eq("id", int64_t{11})}).value();
  Dataset merged = before.MergeInsert({"id"}, {People({2, 10, 20}, "v2")}).value();
  ASSERT_EQ(merged.version(), before.version() + 1);
  const std::vector<uint64_t> replaced = merged.RowsRemovedSince(before).value();
  // Row 2 of the first fragment and row 0 of the second (whose other row was
  // deleted before the merge, so the fragment left with it).
  const uint64_t first = before.state().fragments[0].id;
  const uint64_t second = before.state().fragments[1].id;
  EXPECT_EQ(replaced, (std::vector<uint64_t>{first << 32 | 2, second << 32}));
  EXPECT_TRUE(before.RowsRemovedSince(before).value().empty());

  Dataset later = merged.Append({People({30})}).value();
  std::vector<Fragment> staged;
  ASSERT_TRUE(before
                  .TakeEach(replaced, {},
                            [&](const RecordBatch& b) -> Status {
                              ASSIGN_OR_RETURN(Fragment f, later.WriteFragment(b));
                              staged.push_back(std::move(f));
                              return Status::OK();
                            })
                  .ok());
  std::vector<int64_t> written;
  const Fragment& added = merged.state().fragments.back();
  for (uint64_t i = 0; i < added.physical_rows; ++i) written.push_back(added.id << 32 | i);

  // One of the merge's rows deleted after the snapshot the caller holds: the
  // commit re-checks on the latest version, refuses, and commits nothing.
  Dataset changed = later.Delete({Predicate::Eq("id", int64_t{20})}).value();
  Status gone = later.ReplaceRowsStaged(written, staged).status();
  EXPECT_TRUE(gone.IsFailedPrecondition()) << gone;
  EXPECT_NE(gone.message().find("no longer live"), std::string::npos) << gone;
  EXPECT_EQ(Dataset::Open(store_, "t").value().version(), changed.version());

  Dataset back = changed.Restore(later.version()).value();
  Dataset reverted = back.ReplaceRowsStaged(written, staged).value();
  std::map<int64_t, std::string> expected = Contents(before);
  expected[30] = "name-30-v1";
  EXPECT_EQ(Contents(reverted), expected);
  // Twice: its rows are gone now.
  EXPECT_TRUE(reverted.ReplaceRowsStaged(written, {}).status().IsFailedPrecondition());
}

}  // namespace
}  // namespace loam
