// The workspace format stamp and `loam migrate` (engine/migration.h): the
// refusals, the all-branch conversion, crashes at every failpoint, takeover,
// branch incarnation checks and branches made after the migration.
#include "engine/migration.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "engine/migration_test_util.h"

namespace loam {
namespace {

using namespace migration_testing;  // NOLINT: the fixture's names

TEST(FormatStampTest, ANewWorkspaceIsStampedAndOpens) {
  auto store = testing::NewTestStore();
  ASSERT_TRUE(WorkspaceEngine::Init(store, "ws", testing::TestOptions()).ok());
  Result<FormatStamp> stamp = ReadFormatStamp(*store, "ws");
  ASSERT_TRUE(stamp.ok()) << stamp.status();
  EXPECT_EQ(stamp->format, kWorkspaceFormat);
  EXPECT_EQ(stamp->stamped_by, "init");
  EXPECT_TRUE(WorkspaceEngine::Open(store, "ws", testing::TestOptions()).ok());
  Result<MigrationReport> again = MigrateWorkspace(store, "ws", testing::TestOptions());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_current);
}

TEST(FormatStampTest, AnEditedStampFailsItsChecksum) {
  auto store = testing::NewTestStore();
  ASSERT_TRUE(WorkspaceEngine::Init(store, "ws", testing::TestOptions()).ok());
  std::string text = store->Get(FormatStampKey("ws")).value();
  text.replace(text.find("\"format\":5"), 10, "\"format\":4");
  StringSource src(text);
  ASSERT_TRUE(store->Write(FormatStampKey("ws"), src, {}).ok());
  Result<std::shared_ptr<WorkspaceEngine>> ws =
      WorkspaceEngine::Open(store, "ws", testing::TestOptions());
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kDataLoss) << ws.status();
  EXPECT_NE(ws.status().message().find("fails its checksum"), std::string::npos);
}

TEST_P(MigrationTest, AnUnstampedWorkspaceIsRefusedWithTheCommandToRun) {
  Result<std::shared_ptr<WorkspaceEngine>> ws = Open();
  ASSERT_FALSE(ws.ok());
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kMigrationRequired);
  const std::string found = Format4() ? "ws is in workspace format 4 (a journal-only manifest, no "
                                        "format stamp)"
                                      : "ws has no format stamp (head directory format " +
                                            std::to_string(kManifestFormatVersion) +
                                            ": its stamp was lost, or its init stopped before "
                                            "writing it)";
  EXPECT_EQ(ws.status().message(),
            found +
                "; this Loam serves workspace format 5 only: stop every writer (servers, loads, "
                "maintenance), then run 'loam migrate' (docs/operations.md, \"Migrating a "
                "workspace\")");
}

TEST_P(MigrationTest, ANewerWorkspaceIsRefusedByOpenAndByMigrate) {
  ASSERT_TRUE(WriteFormatStamp(*store_, "ws", {kWorkspaceFormat + 1, "init", "", 1}).ok());
  const std::string want =
      "ws is in workspace format 6, written by a newer Loam; this Loam serves workspace format 5 "
      "only: use a Loam that supports format 6";
  Result<std::shared_ptr<WorkspaceEngine>> ws = Open();
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kUnsupportedFormat);
  EXPECT_EQ(ws.status().message(), want);
  Result<MigrationReport> m = Migrate();
  EXPECT_EQ(m.status().error_code(), ErrorCode::kUnsupportedFormat);
  EXPECT_EQ(m.status().message(), want);
}

TEST_P(MigrationTest, EveryBranchIsConvertedAndLooksTheSame) {
  Result<MigrationReport> r = Migrate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->already_current);
  EXPECT_EQ(r->from, From());
  ASSERT_EQ(r->branches.size(), kBranches.size());
  for (const BranchMigration& b : r->branches) {
    EXPECT_EQ(b.produced_version, b.source_version + 1) << b.branch;  // one commit per branch
    EXPECT_FALSE(b.already_done);
  }
  ExpectMigrated();
  Result<FormatStamp> stamp = ReadFormatStamp(*store_, "ws");
  EXPECT_EQ(stamp->stamped_by, "migrate");
  EXPECT_EQ(stamp->migration, r->token);
  // One baseline per identity ever made on the branch, tombstoned ones too;
  // the audit record is signed by the migration actor; no graph commit.
  auto ws = Open().value();
  std::vector<ManifestRow> rows =
      ws->manifest().CommitRows("", r->branches[0].produced_version).value();
  std::set<std::string> types;
  int baselines = 0;
  for (const ManifestRow& row : rows) {
    types.insert(row.object_type);
    baselines += row.object_type == object_type::kHeadBaseline;
  }
  EXPECT_EQ(baselines, 4);  // orders, people (dropped), scratch (dropped), scratch again
  EXPECT_TRUE(types.count("migration_record"));
  EXPECT_FALSE(types.count("graph_commit"));
  auto record = ws->manifest().FindJournalRow("", MigrationRecordId(r->token)).value();
  ASSERT_TRUE(record.has_value());
  EXPECT_NE(record->metadata.find("\"actor\":\"loam:migration\""), std::string::npos);
  EXPECT_FALSE(r->identity_counter_was);  // the counter was ahead of every id
  // Running it again finds nothing to do.
  Result<MigrationReport> again = Migrate();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->already_current);
}

TEST_P(MigrationTest, ASecondMigratorIsRefusedAndTheTokenTakesOver) {
  Result<MigrationReport> crashed = Migrate(CrashAt("migrate.after_claim"));
  ASSERT_FALSE(crashed.ok());
  const std::string token = ClaimToken();
  Result<std::shared_ptr<WorkspaceEngine>> ws = Open();
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kMigrationRequired);
  EXPECT_NE(ws.status().message().find("is partially migrated (migration " + token),
            std::string::npos)
      << ws.status();
  Result<MigrationReport> second = Migrate();
  EXPECT_EQ(second.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(second.status().message().find("run 'loam migrate --take-over " + token + "'"),
            std::string::npos)
      << second.status();
  Result<MigrationReport> wrong = Migrate({}, "01ARZ3NDEKTSV4RRFFQ69G5FAV");
  EXPECT_EQ(wrong.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_FALSE(Stamped());
  Result<MigrationReport> resumed = Migrate({}, token);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->took_over);
  EXPECT_EQ(resumed->token, token);
  ExpectMigrated();
}

// A crash at every failpoint (and at the second and fourth branch's
// commits; on format 4 also inside the barrier's roll-back): the workspace
// stays refused and unstamped until a takeover finishes, which converges on
// the same result.
TEST_P(MigrationTest, ACrashAnywhereResumesAndConverges) {
  std::vector<std::pair<std::string, int>> points = {
      {"migrate.after_claim", 1},          {"migrate.before_branch_commit", 1},
      {"migrate.after_branch_commit", 1},  {"migrate.after_branch", 1},
      {"migrate.before_branch_commit", 2}, {"migrate.after_branch_commit", 4},
      {"migrate.after_branch", 4},         {"migrate.before_stamp", 1},
      {"migrate.after_stamp", 1}};
  if (Format4()) points.push_back({"recovery.after_restore", 1});  // inside the barrier
  for (const auto& [point, nth] : points) {
    SCOPED_TRACE(point + " #" + std::to_string(nth));
    SetUp();  // a fresh workspace to migrate
    Result<MigrationReport> crashed = Migrate(CrashAt(point, nth));
    ASSERT_FALSE(crashed.ok());
    const bool stamped = point == "migrate.after_stamp";
    EXPECT_EQ(Stamped(), stamped);
    EXPECT_EQ(Open().ok(), stamped);
    std::string token;
    if (!stamped) token = ClaimToken();
    Result<MigrationReport> resumed = Migrate({}, token);
    ASSERT_TRUE(resumed.ok()) << resumed.status();
    EXPECT_EQ(resumed->already_current, stamped);
    int done_earlier = 0;
    for (const BranchMigration& b : resumed->branches) done_earlier += b.already_done;
    if (point == "migrate.after_branch_commit" || point == "migrate.after_branch") {
      EXPECT_EQ(done_earlier, nth);  // confirmed by their markers, not converted twice
    }
    ExpectMigrated();
  }
}

TEST_P(MigrationTest, AnOlderStampIsDamageNotAFormat) {
  ASSERT_TRUE(WriteFormatStamp(*store_, "ws", {kPredecessorFormat, "init", "", 1}).ok());
  const std::string want =
      "ws/_control/format.json says workspace format 4, which no Loam stamps (the stamp begins "
      "with format 5): the stamp is damaged";
  Result<std::shared_ptr<WorkspaceEngine>> ws = Open();
  EXPECT_EQ(ws.status().error_code(), ErrorCode::kDataLoss);
  EXPECT_EQ(ws.status().message(), want);
  EXPECT_EQ(Migrate().status().message(), want);
}

// A writer that ignored the claim commits on a converted branch before the
// stamp: finalization sees the heads moved and does not stamp.
TEST_P(MigrationTest, ACommitAfterABranchIsConvertedStopsTheStamp) {
  auto rogue = OpenAnyFormat();
  bool wrote = false;
  auto write_once = [&](std::string_view at) {
    if (at == "migrate.after_branch" && !wrote) {
      wrote = true;
      EXPECT_TRUE(rogue->Write(Append("orders", {11})).ok());
    }
    return Status::OK();
  };
  Result<MigrationReport> r = Migrate(write_once);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(r.status().message().find("branch 'main' changed after its migration commit"),
            std::string::npos)
      << r.status();
  EXPECT_FALSE(Stamped());
}

// A branch created while a migration is stopped: the takeover refuses until
// told to record the new set, then converts it too.
TEST_P(MigrationTest, ANewBranchNeedsARepinAndIsThenConverted) {
  ASSERT_FALSE(Migrate(CrashAt("migrate.after_branch")).ok());
  const std::string token = ClaimToken();
  ASSERT_TRUE(OpenAnyFormat()->CreateBranch("late", "dev").ok());
  Result<MigrationReport> refused = Migrate({}, token);
  EXPECT_EQ(refused.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(refused.status().message().find("branch 'late' was created since the migration "
                                            "began; the migration stops. Stop every writer; once "
                                            "the branch set is settled, 'loam migrate "
                                            "--take-over " +
                                            token + " --repin-branches'"),
            std::string::npos)
      << refused.status();
  WorkspaceOptions o = testing::TestOptions();
  Result<MigrationReport> r = MigrateWorkspace(store_, "ws", o, MigrateOptions{token, true});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->from, From());    // from the claim
  EXPECT_EQ(r->ledger_done, 1);  // main, before the takeover touched anything
  EXPECT_EQ(r->ledger_pending, 4);
  EXPECT_EQ(r->branches.size(), 5u);
  ExpectMigrated();
  auto ws = Open().value();
  EXPECT_EQ(Capture(*ws, "late").heads, before_["dev"].heads);
}

TEST_P(MigrationTest, ABranchCannotForkFromBeforeTheMigration) {
  ASSERT_TRUE(Migrate().ok());
  auto ws = Open().value();
  const uint64_t migrated = ws->manifest().Current("").value().version;
  Status s = ws->CreateBranch("old", "", migrated - 2);
  EXPECT_EQ(s.error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(s.message().find("predates its migration to workspace format 5"), std::string::npos)
      << s;
  EXPECT_TRUE(ws->CreateBranch("new", "", migrated).ok());
  ExpectHeadsMatchFold(*ws, "new");
}

TEST_P(MigrationTest, ABranchRecreatedDuringMigrationIsCaught) {
  auto other = OpenAnyFormat();
  bool done = false;
  auto recreate = [&](std::string_view at) {
    if (at == "migrate.after_branch" && !done) {
      done = true;
      EXPECT_TRUE(other->DeleteBranch("lazy").ok());
      EXPECT_TRUE(other->CreateBranch("lazy", "dev").ok());
    }
    return Status::OK();
  };
  Result<MigrationReport> r = Migrate(recreate);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(r.status().message().find("branch 'lazy' changed during migration"), std::string::npos)
      << r.status();
  EXPECT_FALSE(Stamped());
}

TEST_P(MigrationTest, AMarkerThatDisagreesWithItsHeadsIsALoudConflict) {
  ASSERT_FALSE(Migrate(CrashAt("migrate.after_branch")).ok());  // main is done
  const std::string token = ClaimToken();
  // A writer that ignored the claim moves main's heads after its marker.
  auto rogue = OpenAnyFormat();
  ASSERT_TRUE(rogue->Write(Append("orders", {7})).ok());
  Result<MigrationReport> r = Migrate({}, token);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_code(), ErrorCode::kPreconditionFailed);
  EXPECT_NE(r.status().message().find("branch 'main' carries a heads marker"), std::string::npos)
      << r.status();
  EXPECT_FALSE(Stamped());
}

// Heads to read and publish: the write is rolled forward. Format 4 (its
// write crashed in SetUp): judged against the fold, it is rolled back, since
// a publish there would be a format-4 commit; its run would run again.
TEST_P(MigrationTest, APendingWriteIsSettledBeforeAnyTipIsPinned) {
  if (!Format4()) {
    auto crashing = OpenAnyFormat(CrashAt(std::string(failpoint::kAfterTableCommit)));
    ASSERT_FALSE(crashing->Write(Append("orders", {8, 9}, "dev")).ok());
  }
  EXPECT_EQ(OpenAnyFormat()->PendingSidecars().value(), 1);
  Result<MigrationReport> r = Migrate();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->recovery.rolled_forward, Format4() ? 0 : 1);
  EXPECT_EQ(r->recovery.rolled_back, Format4() ? 1 : 0);
  auto ws = Open().value();
  EXPECT_EQ(RowsOf(*ws, "orders", "dev"), before_["dev"].rows["orders"] + (Format4() ? 0 : 2));
  if (Format4()) {  // the fork itself was restored to the version its head names
    const TableHead head = ws->Current("dev").value().Find("orders")->head;
    OpenSpec fork;
    fork.branch = head.owner_ref;
    Dataset latest = Dataset::Open(store_, "ws/" + head.location, fork).value();
    EXPECT_EQ(latest.state().txn.op, OpType::kRestore);
    EXPECT_EQ(static_cast<int64_t>(latest.state().txn.restore_version), head.table_version);
  }
  EXPECT_EQ(ws->PendingSidecars().value(), 0);
  for (const std::string& b : kBranches) ExpectHeadsMatchFold(*ws, b);
  // The next write on the rolled-back table lands on the head's content.
  ASSERT_TRUE(ws->Write(Append("orders", {12}, "dev")).ok());
  EXPECT_EQ(RowsOf(*ws, "orders", "dev"), before_["dev"].rows["orders"] + (Format4() ? 1 : 3));
}

TEST_P(MigrationTest, ABranchMadeAfterMigrationInheritsCompleteHeads) {
  ASSERT_TRUE(Migrate().ok());
  auto ws = Open().value();
  ASSERT_TRUE(ws->CreateBranch("later", "dev").ok());
  auto marker = ws->manifest().FindJournalRow("later", HeadsMarkerId(kWorkspaceFormat)).value();
  ASSERT_TRUE(marker.has_value());  // inherited, content-scoped
  ExpectHeadsMatchFold(*ws, "later");
  ASSERT_TRUE(ws->Write(Append("orders", {10}, "later")).ok());
  ExpectHeadsMatchFold(*ws, "later");
  EXPECT_EQ(RowsOf(*ws, "orders", "later"), before_["dev"].rows["orders"] + 1);
  EXPECT_EQ(Capture(*ws, "dev"), before_["dev"]);
}

// On format 4 a write that crashed after its publish is finished, not
// undone: the fold holds its commit.
TEST(Format4BarrierTest, AWriteTheJournalHoldsIsFinishedNotUndone) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "src", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("orders", EventSchema(), {"id"}).ok());
  WorkspaceOptions o = testing::TestOptions();
  o.recover_on_open = false;
  o.failpoint = CrashAt(std::string(failpoint::kAfterPublish));
  auto crashing = WorkspaceEngine::Open(store, "src", o).value();
  ASSERT_FALSE(crashing->Write(Append("orders", {1, 2})).ok());
  ASSERT_EQ(crashing->PendingSidecars().value(), 1);
  ASSERT_TRUE(
      testing::WriteFormat4(*store, "src", store, "ws", testing::TestOptions().manifest.dataset)
          .ok());
  Result<MigrationReport> r = MigrateWorkspace(store, "ws", testing::TestOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->recovery.already_published, 1);
  EXPECT_EQ(r->recovery.rolled_back, 0);
  auto migrated = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
  EXPECT_EQ(RowsOf(*migrated, "orders"), 2);
  EXPECT_EQ(migrated->PendingSidecars().value(), 0);
}

// A fork inherits the source's marker; a damaged one is refused there, once,
// rather than spread to another branch.
TEST(InheritedMarkerTest, AForkOfABranchWithADamagedMarkerIsRefused) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("orders", EventSchema(), {"id"}).ok());
  PublishSpec spec;
  spec.build = [](PublishView&) -> Result<PublishPlan> {
    PublishPlan plan;
    plan.graph_commit = false;
    plan.journal_without_graph_commit = true;
    ManifestRow marker;
    marker.object_id = HeadsMarkerId(kWorkspaceFormat);
    marker.object_type = std::string(object_type::kHeadsMarker);
    marker.metadata = R"({"workspace_format":5,"heads_format":7,"head_count":1})";
    plan.journal.push_back(marker);
    return plan;
  };
  ASSERT_TRUE(ws->manifest().Publish(spec).ok());
  Status s = ws->CreateBranch("dev");
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(s.message(),
            "the heads marker of branch 'main' is damaged (heads marker 'heads_marker:00000005' "
            "is malformed: source_version is missing); run 'loam heads verify'");
  EXPECT_TRUE(ws->ListBranches().value().empty());
  // heads verify names it too.
  HeadsReport report = ws->VerifyHeads().value();
  ASSERT_FALSE(report.problems.empty());
  EXPECT_NE(report.problems.back().find("source_version is missing"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Sources, MigrationTest,
                         ::testing::Values(Source::kUnstampedHeads, Source::kFormat4), SourceName);

// Time travel after migration: every version of every branch reads the same
// from format 4's journal-only versions (folded) as from the heads the same
// history wrote ("ws").
void ExpectSameHistory(const std::shared_ptr<ObjectStore>& store,
                       const std::map<std::string, uint64_t>& tips) {
  auto heads = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
  auto folded = WorkspaceEngine::Open(store, "v4", testing::TestOptions()).value();
  for (const auto& [b, tip] : tips) {
    const uint64_t fork = b.empty() ? 1 : heads->manifest().BranchParent(b)->parent_version;
    for (uint64_t v = fork + 1; v <= tip; ++v) {
      SCOPED_TRACE("branch '" + b + "' version " + std::to_string(v));
      Snapshot want = heads->SnapshotAt(b, v).value();
      Result<Snapshot> got = folded->SnapshotAt(b, v);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->tables.size(), want.tables.size());
      for (const auto& [name, t] : want.tables) {
        const TableState* g = got->Find(name);
        ASSERT_NE(g, nullptr) << name;
        EXPECT_EQ(g->head, t.head);
        EXPECT_EQ(g->def, t.def);
      }
      EXPECT_EQ(got->grants, want.grants);
      EXPECT_EQ(got->graph_head, want.graph_head);
    }
  }
}

// A migration writes one baseline per identity ever made: they go in a
// fragment of their own, so that the fragments holding the partitions (all
// a current read decodes) hold at most the few journal rows of an ordinary
// commit beside them (64), never 80 baselines.
TEST(MigrationBaselinesTest, TheFragmentsCurrentReadsDecodeHoldNoBaselines) {
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  ASSERT_TRUE(ws->CreateTable("kept", EventSchema(), {}).ok());
  ASSERT_TRUE(ws->Write(Append("kept", {1})).ok());
  for (int i = 0; i < 80; ++i) {
    ASSERT_TRUE(ws->CreateTable("d" + std::to_string(i), EventSchema(), {}).ok());
    ASSERT_TRUE(ws->DropTable("d" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(store->Delete(FormatStampKey("ws")).ok());
  Result<MigrationReport> r = MigrateWorkspace(store, "ws", testing::TestOptions());
  ASSERT_TRUE(r.ok()) << r.status();
  auto after = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
  ManifestVersion v = after->manifest().Current("").value();
  Dataset ds = after->manifest().OpenDataset("").value();
  std::map<int32_t, uint64_t> partition_rows;  // by directory file
  for (uint32_t p = 0; p < kNumPartitions; ++p) {
    if (v.dir.slots[p].file >= 0) partition_rows[v.dir.slots[p].file] += v.dir.slots[p].count;
  }
  ASSERT_FALSE(partition_rows.empty());
  for (const auto& [file, rows] : partition_rows) {
    const HeadDirectory::File& f = v.dir.files[file];
    auto frag = std::find_if(ds.state().fragments.begin(), ds.state().fragments.end(),
                             [&](const Fragment& x) {
                               return f.path.ends_with(x.data_path) && x.data_offset == f.offset;
                             });
    ASSERT_NE(frag, ds.state().fragments.end()) << f.path;
    EXPECT_LE(frag->physical_rows, rows + 64) << f.path << " holds baselines beside partitions";
  }
  EXPECT_EQ(after->Current().value().tables.size(), 1u);
  ExpectHeadsMatchFold(*after);
}

// Seeded random histories: whatever the mix of operations and branches,
// every branch reads the same after migration as the fold gave before, from
// unstamped heads and from format 4, and every earlier version reads the same.
TEST(MigrationModelTest, RandomHistoriesMigrateToTheSameState) {
  for (uint32_t seed = 1; seed <= 4; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937 rng(seed);
    auto store = testing::NewTestStore();
    auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
    std::vector<std::string> branches = {""};
    int next_table = 0;
    for (int step = 0; step < 40; ++step) {
      const std::string branch = branches[rng() % branches.size()];
      Snapshot snap = ws->Current(branch).value();
      std::vector<std::string> names;
      for (const auto& [name, t] : snap.tables) names.push_back(name);
      const int op = static_cast<int>(rng() % 6);
      if (op == 0 || names.empty()) {
        ASSERT_TRUE(
            ws->CreateTable("t" + std::to_string(next_table++), EventSchema(), {}, branch).ok());
      } else if (op <= 2) {
        ASSERT_TRUE(ws->Write(Append(names[rng() % names.size()], {step}, branch)).ok());
      } else if (op == 3) {
        ASSERT_TRUE(
            ws->RenameTable(names[rng() % names.size()], "r" + std::to_string(next_table++), branch)
                .ok());
      } else if (op == 4) {
        ASSERT_TRUE(ws->DropTable(names[rng() % names.size()], branch).ok());
      } else if (branches.size() < 4) {
        branches.push_back("b" + std::to_string(step));
        ASSERT_TRUE(ws->CreateBranch(branches.back(), branch).ok());
      }
    }
    std::map<std::string, BranchState> before;
    std::map<std::string, uint64_t> tips;  // before the migration
    for (const std::string& b : branches) {
      before[b] = Capture(*ws, b);
      tips[b] = ws->manifest().Current(b).value().version;
    }
    ASSERT_TRUE(
        testing::WriteFormat4(*store, "ws", store, "v4", testing::TestOptions().manifest.dataset)
            .ok());
    ASSERT_TRUE(store->Delete(FormatStampKey("ws")).ok());
    for (const std::string root : {"ws", "v4"}) {
      SCOPED_TRACE(root);
      Result<MigrationReport> r = MigrateWorkspace(store, root, testing::TestOptions());
      ASSERT_TRUE(r.ok()) << r.status();
      auto after = WorkspaceEngine::Open(store, root, testing::TestOptions()).value();
      for (const std::string& b : branches) {
        EXPECT_EQ(Capture(*after, b), before[b]) << "branch '" << b << "'";
        ExpectHeadsMatchFold(*after, b);
      }
    }
    ExpectSameHistory(store, tips);
  }
}

}  // namespace
}  // namespace loam
