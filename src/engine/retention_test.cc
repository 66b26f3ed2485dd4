// Retention (ExpireVersions): what a pass removes, what it keeps (the
// window, branches that still read old versions, a restore's target), the
// version_expired answer past the window, and the setting object.
#include "engine/retention.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "engine/workspace_test_util.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;
using testing::RowsOf;

constexpr int64_t kHour = 3600LL * 1'000'000;
constexpr int64_t kT0 = 1'800'000'000LL * 1'000'000;

class RetentionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkspaceOptions o = testing::TestOptions();
    o.manifest.dataset.clock = &clock_;
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = WorkspaceEngine::Init(store_, "ws", o).value();
  }
  // Appends `ids` to t at hour `h`; returns the manifest version.
  uint64_t AppendAt(double h, std::vector<int64_t> ids, const std::string& branch = "") {
    clock_.SetMicros(kT0 + static_cast<int64_t>(h * kHour));
    return ws_->Write(Append("t", std::move(ids), branch)).value().manifest_version;
  }
  int64_t Objects() { return static_cast<int64_t>(store_->ListAll("ws/").value().size()); }

  ManualClock clock_{kT0};
  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
};

// Writes at hours 0..5 with a compaction at 2.5; a 2-hour window at hour
// 5.5 keeps what was current from 3.5 on: the write of hour 3 and later.
TEST_F(RetentionTest, VersionsSupersededBeforeTheWindowGoAndLaterOnesStayReadable) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  std::vector<uint64_t> mv;
  for (int h = 0; h <= 2; ++h) mv.push_back(AppendAt(h, {h}));
  clock_.SetMicros(kT0 + kHour * 5 / 2);
  WriteRequest compact;
  compact.table = "t";
  compact.mode = WriteMode::kCompact;
  ASSERT_TRUE(ws_->Write(compact).value().changed);
  for (int h = 3; h <= 5; ++h) mv.push_back(AppendAt(h, {h}));
  const int64_t objects_before = Objects();

  RetentionReport r = ExpireVersions(*ws_, kT0 + kHour * 11 / 2, 2 * 3600, 0).value();
  EXPECT_EQ(r.oldest_manifest_version[""], mv[3]);  // the write of hour 3
  EXPECT_GT(r.manifest_versions_removed, 0);
  EXPECT_GT(r.table_versions_removed, 0);
  EXPECT_LT(Objects(), objects_before);

  // Inside the window: every version reads as it did.
  for (size_t i = 3; i < mv.size(); ++i) {
    Snapshot s = ws_->SnapshotAt("", mv[i]).value();
    EXPECT_EQ(ws_->OpenTable(s, "t").value().CountRows(), i + 1) << "version " << mv[i];
  }
  // Past it: version_expired naming the oldest readable version.
  Result<Snapshot> old = ws_->SnapshotAt("", mv[1]);
  ASSERT_FALSE(old.ok());
  EXPECT_EQ(old.status().error_code(), ErrorCode::kVersionExpired) << old.status().ToString();
  EXPECT_TRUE(old.status().IsNotFound());
  EXPECT_EQ(old.status().detail("oldestVersion"), std::to_string(mv[3]));
  EXPECT_NE(old.status().message().find("past the time-travel window"), std::string::npos);
  // A version that never existed is still not_found.
  EXPECT_EQ(ws_->SnapshotAt("", mv.back() + 5).status().error_code(), ErrorCode::kNotFound);

  // Writes go on; a second pass at the same time removes nothing more.
  AppendAt(5.6, {6});
  EXPECT_EQ(RowsOf(*ws_, "t"), 7);
  RetentionReport again = ExpireVersions(*ws_, kT0 + kHour * 11 / 2, 2 * 3600, 0).value();
  EXPECT_EQ(again.manifest_versions_removed + again.table_versions_removed, 0);
}

// A branch made long ago that never wrote reads main's table as of its fork
// point: that table version stays, whatever main did since.
TEST_F(RetentionTest, ABranchStillReadingAnOldVersionKeepsIt) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  AppendAt(0, {1});
  ASSERT_TRUE(ws_->CreateBranch("old").ok());
  AppendAt(0.5, {2}, "old");                    // "old" forks t: its own fork, from main's version
  ASSERT_TRUE(ws_->CreateBranch("lazy").ok());  // never writes
  for (int h = 1; h <= 4; ++h) AppendAt(h, {10 + h});
  WriteRequest compact;
  compact.table = "t";
  compact.mode = WriteMode::kCompact;
  ASSERT_TRUE(ws_->Write(compact).ok());
  AppendAt(5, {20});

  RetentionReport r = ExpireVersions(*ws_, kT0 + 10 * kHour, 3600, 0).value();
  EXPECT_GT(r.table_versions_removed, 0);
  EXPECT_EQ(RowsOf(*ws_, "t", "lazy"), 1);
  EXPECT_EQ(RowsOf(*ws_, "t", "old"), 2);
  EXPECT_EQ(RowsOf(*ws_, "t"), 6);
  // Writes on the old branch still work after the pass.
  AppendAt(10.1, {3}, "old");
  EXPECT_EQ(RowsOf(*ws_, "t", "old"), 3);
}

// A restore makes an old version's rows current again: a pass keeps them.
TEST_F(RetentionTest, ARestoredVersionsFilesStay) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  AppendAt(0, {1});
  const int64_t first = ws_->Current().value().Find("t")->head.table_version;
  AppendAt(1, {2});
  clock_.SetMicros(kT0 + 2 * kHour);
  WriteRequest restore;
  restore.table = "t";
  restore.mode = WriteMode::kRestore;
  restore.restore_version = first;
  ASSERT_TRUE(ws_->Write(restore).ok());
  AppendAt(3, {3});
  ExpireVersions(*ws_, kT0 + 10 * kHour, 3600, 0).value();
  EXPECT_EQ(RowsOf(*ws_, "t"), 2);  // rows 1 and 3
}

// A table dropped on every branch before the window leaves no readable
// version that names it: its dataset goes whole. Not while a branch, or a
// version inside the window, still has it.
TEST_F(RetentionTest, ATableDroppedOnEveryBranchBeforeTheWindowGoesWhole) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->CreateTable("u", EventSchema(), {}).ok());
  auto location = [&](const std::string& name) {
    return ws_->Current().value().Find(name)->head.location;
  };
  auto objects = [&](const std::string& loc) {
    return store_->ListAll(ws_->TableRoot(loc) + "/").value().size();
  };
  const std::string u = location("u");
  clock_.SetMicros(kT0);
  ASSERT_TRUE(ws_->Write(Append("u", {1})).ok());
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());  // inherits u
  clock_.SetMicros(kT0 + kHour);
  ASSERT_TRUE(ws_->DropTable("u").ok());
  AppendAt(1.5, {1});
  // Main dropped u before the window; dev still has it.
  RetentionReport r = ExpireVersions(*ws_, kT0 + 5 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed, 0);
  EXPECT_GT(objects(u), 0u);
  EXPECT_EQ(RowsOf(*ws_, "u", "dev"), 1);
  // Dev drops it at hour 6: inside the next pass's window (2 hours at
  // hour 7.5), so it stays.
  clock_.SetMicros(kT0 + 6 * kHour);
  ASSERT_TRUE(ws_->DropTable("u", "dev").ok());
  AppendAt(6.5, {2});
  // w lives and dies inside the window: versions that read it are kept.
  ASSERT_TRUE(ws_->CreateTable("w", EventSchema(), {}).ok());
  const std::string w = location("w");
  clock_.SetMicros(kT0 + 7 * kHour);
  ASSERT_TRUE(ws_->DropTable("w").ok());
  r = ExpireVersions(*ws_, kT0 + 7 * kHour + kHour / 2, 2 * 3600, 0).value();
  EXPECT_EQ(r.tables_removed, 0);
  EXPECT_GT(objects(u), 0u);
  // Past both drops: u and w go whole, t stays.
  AppendAt(20, {3});
  r = ExpireVersions(*ws_, kT0 + 30 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed, 2);
  EXPECT_EQ(objects(u), 0u);
  EXPECT_EQ(objects(w), 0u);
  EXPECT_EQ(RowsOf(*ws_, "t"), 3);
  testing::ExpectHeadsMatchFold(*ws_);
  testing::ExpectHeadsMatchFold(*ws_, "dev");
  // The next pass finds nothing more to remove.
  EXPECT_EQ(ExpireVersions(*ws_, kT0 + 31 * kHour, 3600, 0).value().tables_removed, 0);
}

// A pass that fails part way through removing a dataset leaves its intent
// in the horizon object: the next pass finishes it, though the table went
// out of the window before it.
TEST(RetentionRemovalTest, ARemovalCutShortIsFinishedByTheNextPass) {
  ManualClock clock(kT0);
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.dataset.clock = &clock;
  auto faults = std::make_shared<FaultInjectionObjectStore>(std::make_shared<MemoryObjectStore>());
  auto ws = WorkspaceEngine::Init(faults, "ws", o).value();
  ASSERT_TRUE(ws->CreateTable("u", EventSchema(), {}).ok());
  const std::string u = ws->Current().value().Find("u")->head.location;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(ws->Write(Append("u", {i})).ok());
  clock.SetMicros(kT0 + kHour);
  ASSERT_TRUE(ws->DropTable("u").ok());
  const std::string prefix = ws->TableRoot(u) + "/";
  faults->AddRule(FaultRule::FailNth("cut", MaskOf({ObjectOp::kDelete}), 2,
                                     Status::Unavailable("injected"), prefix));
  Result<RetentionReport> cut = ExpireVersions(*ws, kT0 + 5 * kHour, 3600, 0);
  ASSERT_FALSE(cut.ok());
  EXPECT_GT(faults->ListAll(prefix).value().size(), 0u);  // part of it is left
  EXPECT_NE(faults->Get("ws/_control/retention-horizon.json").value().find(u), std::string::npos);
  RetentionReport next = ExpireVersions(*ws, kT0 + 6 * kHour, 3600, 0).value();
  EXPECT_EQ(next.tables_removed, 1);
  EXPECT_EQ(faults->ListAll(prefix).value().size(), 0u);
  // Done: the intent is gone from the horizon object.
  EXPECT_EQ(faults->Get("ws/_control/retention-horizon.json").value().find(u), std::string::npos);
}

// A branch forks from a version inside the window only: past it, the
// tables that version read are gone, and the fork is version_expired.
// A deleted branch leaves nothing behind once a pass runs after it: its
// forks of tables other branches keep go, and so do the tables only it had
// (one it created, one main dropped long ago). Not while it is listed.
TEST_F(RetentionTest, WhatOnlyADeletedBranchKeptGoes) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  ASSERT_TRUE(ws_->CreateTable("u", EventSchema(), {}).ok());
  AppendAt(0, {1});
  ASSERT_TRUE(ws_->Write(Append("u", {1})).ok());
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  const std::string dev = ws_->manifest().BranchId("dev").value();
  AppendAt(0.5, {2}, "dev");  // dev's own fork of t
  ASSERT_TRUE(ws_->CreateTable("only", EventSchema(), {}, "dev").ok());
  ASSERT_TRUE(ws_->Write(Append("only", {7}, "dev")).ok());
  clock_.SetMicros(kT0 + kHour);
  ASSERT_TRUE(ws_->DropTable("u").ok());  // main drops u; dev keeps it
  const Snapshot on_dev = ws_->Current("dev").value();
  const std::string t = on_dev.Find("t")->head.location, u = on_dev.Find("u")->head.location,
                    only = on_dev.Find("only")->head.location;
  auto objects = [&](const std::string& prefix) {
    return store_->ListAll(ws_->TableRoot(prefix)).value().size();
  };
  const std::string record = "ws/_control/deleted-branches/" + dev + ".json";
  ASSERT_GT(objects(t + "/tree/" + dev + "/"), 0u);

  // A child keeps dev: the refused deletion leaves no record.
  ASSERT_TRUE(ws_->CreateBranch("child", "dev").ok());
  EXPECT_TRUE(ws_->DeleteBranch("dev").IsFailedPrecondition());
  EXPECT_TRUE(store_->Head(record).status().IsNotFound());
  ASSERT_TRUE(ws_->DeleteBranch("child").ok());
  // A record whose branch is still listed (its deletion under way) waits.
  ASSERT_TRUE(RecordBranchDeletion(*ws_, "dev", kT0 + kHour).ok());
  AppendAt(20, {3});
  RetentionReport r = ExpireVersions(*ws_, kT0 + 30 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed + r.forks_removed, 0);
  EXPECT_EQ(RowsOf(*ws_, "only", "dev"), 1);
  EXPECT_EQ(RowsOf(*ws_, "u", "dev"), 1);

  ASSERT_TRUE(ws_->DeleteBranch("dev").ok());
  EXPECT_TRUE(store_->Head(record).ok());
  r = ExpireVersions(*ws_, kT0 + 31 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed, 2);  // only, u
  EXPECT_EQ(r.forks_removed, 1);   // dev's fork of t (the child's had no fork)
  EXPECT_EQ(objects(only + "/"), 0u);
  EXPECT_EQ(objects(u + "/"), 0u);
  EXPECT_EQ(objects(t + "/tree/" + dev + "/"), 0u);
  EXPECT_EQ(objects(t + "/_refs/branches/" + dev + ".json"), 0u);
  EXPECT_TRUE(store_->Head(record).status().IsNotFound());
  EXPECT_EQ(RowsOf(*ws_, "t"), 2);  // main's rows 1 and 3
  testing::ExpectHeadsMatchFold(*ws_);
  // A branch of the same name later is a new branch: nothing of it goes.
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  AppendAt(31.5, {4}, "dev");
  r = ExpireVersions(*ws_, kT0 + 32 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed + r.forks_removed, 0);
  EXPECT_EQ(RowsOf(*ws_, "t", "dev"), 3);
}

// A deletion retried after it stopped part way (its newest versions gone)
// keeps what its first record named; a record that does not parse is left
// alone and stops nothing else.
TEST_F(RetentionTest, ARetriedDeletionKeepsItsFirstRecordAndABadRecordIsSkipped) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  AppendAt(0, {1});
  ASSERT_TRUE(ws_->CreateBranch("dev").ok());
  const std::string dev = ws_->manifest().BranchId("dev").value();
  ASSERT_TRUE(ws_->CreateTable("late", EventSchema(), {}, "dev").ok());
  const std::string late = ws_->Current("dev").value().Find("late")->head.location;
  const std::string record = "ws/_control/deleted-branches/" + dev + ".json";
  ASSERT_TRUE(RecordBranchDeletion(*ws_, "dev", kT0 + 2 * kHour).ok());
  // The first attempt removed dev's newest manifest version, then stopped.
  std::vector<ObjectInfo> versions = store_->ListAll("ws/__manifest/tree/dev/_versions/").value();
  ASSERT_GE(versions.size(), 1u);
  ASSERT_TRUE(store_->Delete(versions.front().key).ok());  // the newest: names sort descending
  EXPECT_EQ(ws_->Current("dev").value().Find("late"), nullptr);
  clock_.SetMicros(kT0 + 3 * kHour);
  ASSERT_TRUE(ws_->DeleteBranch("dev").ok());  // the retry, an hour later
  const std::string text = store_->Get(record).value();
  EXPECT_NE(text.find(late), std::string::npos) << text;
  EXPECT_NE(text.find(std::to_string(kT0 + 2 * kHour)), std::string::npos) << text;
  ASSERT_TRUE(store_->Put("ws/_control/deleted-branches/bad.json", R"({"format":"1"})").ok());
  AppendAt(20, {2});
  RetentionReport r = ExpireVersions(*ws_, kT0 + 30 * kHour, 3600, 0).value();
  EXPECT_EQ(r.tables_removed, 1);  // late
  EXPECT_TRUE(store_->ListAll(ws_->TableRoot(late) + "/").value().empty());
  EXPECT_TRUE(store_->Head(record).status().IsNotFound());
  EXPECT_TRUE(store_->Head("ws/_control/deleted-branches/bad.json").ok());
  EXPECT_EQ(RowsOf(*ws_, "t"), 2);
}

TEST_F(RetentionTest, ABranchFromAVersionPastTheWindowIsRefused) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  const uint64_t old = AppendAt(0, {1});
  AppendAt(1, {2});
  const uint64_t kept = AppendAt(5, {3});
  ExpireVersions(*ws_, kT0 + 6 * kHour, 3600, 0).value();
  Status refused = ws_->CreateBranch("past", "", old);
  EXPECT_EQ(refused.error_code(), ErrorCode::kVersionExpired) << refused;
  EXPECT_EQ(refused.detail("oldestVersion"), std::to_string(kept));
  EXPECT_EQ(ws_->ListBranches().value(), std::vector<std::string>{});
  ASSERT_TRUE(ws_->CreateBranch("inside", "", kept).ok());
  EXPECT_EQ(RowsOf(*ws_, "t", "inside"), 3);
}

// A branch created while a pass runs, after it listed the branches and
// before it raised the horizon, from a version the raised horizon still
// allows: the pass lists branches again and keeps what the fork reads.
// One whose version the horizon passes is refused and goes again.
TEST(RetentionRaceTest, ABranchCreatedDuringAPassKeepsWhatItReads) {
  ManualClock clock(kT0);
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.dataset.clock = &clock;
  // Fragments in files of their own: a version file that goes takes no
  // inline rows a later version needs, so the pass removes old versions.
  o.manifest.dataset.max_inline_fragment_bytes = 0;
  auto faults = std::make_shared<FaultInjectionObjectStore>(std::make_shared<MemoryObjectStore>());
  auto ws = WorkspaceEngine::Init(faults, "ws", o).value();
  ASSERT_TRUE(ws->CreateTable("t", EventSchema(), {}).ok());
  std::vector<uint64_t> v;
  for (int h = 0; h <= 5; ++h) {
    clock.SetMicros(kT0 + h * kHour);
    v.push_back(ws->Write(Append("t", {h})).value().manifest_version);
  }
  // The pass at hour 6 with a 90-minute window keeps from hour 4 on.
  Status late, too_old;
  faults->AddRule(FaultRule::HookAt(
      "fork during the pass", MaskOf({ObjectOp::kPutIfAbsent, ObjectOp::kPutIfMatch}), 1,
      [&] {
        late = ws->CreateBranch("late", "", v[4]);
        too_old = ws->CreateBranch("too-old", "", v[2]);
      },
      "retention-horizon"));
  RetentionReport r = ExpireVersions(*ws, kT0 + 6 * kHour, 5400, 0).value();
  EXPECT_EQ(r.oldest_manifest_version[""], v[4]);
  EXPECT_GT(r.table_versions_removed, 0);
  ASSERT_TRUE(late.ok()) << late;
  // Created before the horizon rose; then refused for it: the fork goes again.
  EXPECT_TRUE(too_old.ok()) << too_old;
  EXPECT_EQ(RowsOf(*ws, "t", "late"), 5);  // the table version of hour 4 stayed
  EXPECT_EQ(RowsOf(*ws, "t", "too-old"), 3);
  Status again = ws->CreateBranch("too-old-2", "", v[2]);
  EXPECT_EQ(again.error_code(), ErrorCode::kVersionExpired) << again;

  // A pass that raises the horizon past the fork's version while the fork is
  // being created (after its first check) did not see it: the fork is refused
  // and goes again.
  for (int h = 6; h <= 7; ++h) {
    clock.SetMicros(kT0 + h * kHour);
    v.push_back(ws->Write(Append("t", {h})).value().manifest_version);
  }
  faults->AddRule(FaultRule::HookAt(
      "pass during the fork", WriteOpMask(), 1,
      [&] { EXPECT_TRUE(ExpireVersions(*ws, kT0 + 8 * kHour + kHour / 2, 5400, 0).ok()); },
      "x-race"));
  Status raced = ws->CreateBranch("x-race", "", v[5]);
  EXPECT_EQ(raced.error_code(), ErrorCode::kVersionExpired) << raced;
  const std::vector<std::string> left = ws->ListBranches().value();
  EXPECT_EQ(std::count(left.begin(), left.end(), "x-race"), 0);
}

// Once every version is past the window, what stays of the manifest does
// not grow with the commits it had: the latest version, and the few older
// files that still hold the latest's inline parts (kept as files only: when
// each stayed loadable, it kept the holders before it, and nearly every
// version stayed: 160 of 171 after 150 commits).
TEST_F(RetentionTest, ManifestVersionsPastTheWindowLeaveABoundedRest) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  auto versions = [&] {
    return static_cast<int64_t>(store_->ListAll("ws/__manifest/_versions/").value().size());
  };
  std::vector<int64_t> kept;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 60; ++i) AppendAt(round * 10 + i / 100.0, {i});
    ExpireVersions(*ws_, kT0 + (round * 10 + 5) * kHour, 3600, 0).value();
    kept.push_back(versions());
  }
  EXPECT_LE(kept[0], 30);
  EXPECT_LE(kept[1], kept[0] + 5);  // 60 more commits leave about as much behind
  EXPECT_EQ(RowsOf(*ws_, "t"), 120);
  // History reads the journal of the latest version: it is all there.
  EXPECT_GE(ws_->Log("").value().size(), 121u);
}

// A table fed by small appends while compactions run: each compaction
// commits after an append that landed during its planning, and that
// append's version still lists the compaction before's fragments, most of
// them inline in version files. Past the window what stays follows what the
// current version uses, not the history (each holder of a fragment still in
// use stays as a file, not with everything it lists).
TEST_F(RetentionTest, TableVersionsPastTheWindowLeaveABoundedRestUnderCompaction) {
  ASSERT_TRUE(ws_->CreateTable("t", EventSchema(), {}).ok());
  const std::string versions_dir =
      "ws/" + ws_->Current().value().Find("t")->head.location + "/_versions/";
  auto table_versions = [&] {
    return static_cast<int64_t>(store_->ListAll(versions_dir).value().size());
  };
  std::vector<int64_t> kept;
  int64_t id = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 64; ++i) {
      const double h = round * 10 + i / 100.0;
      if (i % 4 != 3) {
        AppendAt(h, {id++});
        continue;
      }
      Dataset data = ws_->OpenTable(ws_->Current().value(), "t").value();
      WriteRequest w;
      w.table = "t";
      w.mode = WriteMode::kCompact;
      CompactionPlan plan = data.PlanCompaction(w.compaction).value();
      AppendAt(h, {id++});  // lands while the compaction is planned
      w.compaction_plan = &plan;
      ASSERT_TRUE(ws_->Write(w).ok());
    }
    ExpireVersions(*ws_, kT0 + (round * 10 + 5) * kHour, 3600, 0).value();
    kept.push_back(table_versions());
  }
  EXPECT_EQ(RowsOf(*ws_, "t"), id);
  EXPECT_LE(kept[2], kept[0] + 2) << kept[0] << " " << kept[1] << " " << kept[2];
}

TEST_F(RetentionTest, TheSettingIsReadWrittenAndChecked) {
  EXPECT_EQ(ReadRetentionSetting(*store_, "ws").value().window_seconds,
            kDefaultTimeTravelWindowSeconds);
  ASSERT_TRUE(WriteRetentionSetting(*store_, "ws", {3600}).ok());
  EXPECT_EQ(ReadRetentionSetting(*store_, "ws").value().window_seconds, 3600);
  Status low = WriteRetentionSetting(*store_, "ws", {59});
  EXPECT_EQ(low.error_code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(low.message().find("between 60 seconds and 100 years"), std::string::npos);
  EXPECT_EQ(ReadRetentionSetting(*store_, "ws").value().window_seconds, 3600);
  ASSERT_TRUE(store_->Put("ws/_control/retention.json", R"({"format":1})").ok());
  EXPECT_EQ(ReadRetentionSetting(*store_, "ws").status().error_code(), ErrorCode::kDataLoss);
  ASSERT_TRUE(
      store_->Put("ws/_control/retention.json", R"({"format":2,"timeTravelWindowSeconds":60})")
          .ok());
  EXPECT_EQ(ReadRetentionSetting(*store_, "ws").status().error_code(),
            ErrorCode::kUnsupportedFormat);
  EXPECT_EQ(ExpireVersions(*ws_, kT0, 59, 0).status().error_code(), ErrorCode::kInvalidArgument);
  // A horizon object edited by hand into the wrong shape is DataLoss.
  for (const char* bad : {R"({"format":"1","branches":{}})", R"({"format":1,"branches":[]})",
                          R"({"format":1,"branches":{"":"7"}})"}) {
    ASSERT_TRUE(store_->Put("ws/_control/retention-horizon.json", bad).ok());
    EXPECT_EQ(ReadTimeTravelHorizon(*store_, "ws", "").status().error_code(), ErrorCode::kDataLoss)
        << bad;
  }
}

}  // namespace
}  // namespace loam
