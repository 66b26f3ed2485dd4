// Where the manifest's mutable rows live. Tombstoned heads in levels (head
// directory format 9): every dropped table's head stays findable as levels
// fill and move up, through manifest compaction and repair, and a format-8
// directory (tombstones hashed into 16 partitions) is read and taken over by
// its header alone. A compacted manifest keeps its partitions in files of
// bounded size.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/coding.h"
#include "common/hash.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/memory_object_store.h"
#include "manifest/directory.h"
#include "manifest/manifest_internal.h"

namespace loam {
namespace {

using testing::EventSchema;

class TombstoneLevelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = WorkspaceEngine::Init(store_, "", testing::TestOptions()).value();
    ASSERT_TRUE(ws_->CreateTable("kept", EventSchema(), {}).ok());
  }

  // Creates and drops `n` tables, remembering their stable ids.
  void CreateAndDrop(int n) {
    for (int i = 0; i < n; ++i) {
      const std::string name = "d" + std::to_string(dropped_.size());
      const int64_t sid = ws_->CreateTable(name, EventSchema(), {}).value().sid;
      ASSERT_TRUE(ws_->DropTable(name).ok());
      dropped_.push_back(sid);
    }
  }

  // Rows in each tombstone partition of main's current directory.
  std::vector<uint32_t> LevelCounts() {
    ManifestVersion v = ws_->manifest().Current("").value();
    std::vector<uint32_t> out;
    for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) {
      out.push_back(v.dir.slots[p].file < 0 ? 0 : v.dir.slots[p].count);
    }
    return out;
  }

  // Every dropped table's head is found, tombstoned, and the heads agree
  // with the journal's fold.
  void ExpectEveryDroppedHeadFound() {
    ManifestVersion v = ws_->manifest().Current("").value();
    for (int64_t sid : dropped_) {
      Result<std::optional<TableHead>> h = ws_->manifest().ReadTableHead(v, sid);
      ASSERT_TRUE(h.ok()) << h.status();
      ASSERT_TRUE(h->has_value()) << "sid " << sid;
      EXPECT_EQ((*h)->state, HeadState::kTombstoned) << "sid " << sid;
    }
    testing::ExpectHeadsMatchFold(*ws_);
    EXPECT_EQ(ws_->Current().value().tables.size(), 1u);
  }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::vector<int64_t> dropped_;
};

TEST_F(TombstoneLevelsTest, DropsFillLevelZeroThenMoveUpWithinEachLevelsCapacity) {
  CreateAndDrop(64);
  std::vector<uint32_t> levels = LevelCounts();
  EXPECT_EQ(levels[0], 64u);  // at capacity: not moved yet
  EXPECT_EQ(levels[1], 0u);
  CreateAndDrop(1);  // over capacity: level 0 moves whole into level 1
  levels = LevelCounts();
  EXPECT_EQ(levels[0], 0u);
  EXPECT_EQ(levels[1], 65u);
  ExpectEveryDroppedHeadFound();
}

// Rows of tombstoned heads with stable ids [from, to), each a copy written
// at `version`.
std::vector<ManifestRow> Tombstones(int64_t from, int64_t to, int64_t version) {
  std::vector<ManifestRow> out;
  for (int64_t sid = from; sid < to; ++sid) {
    ManifestRow r;
    r.object_id = "head:" + std::to_string(sid);
    r.object_type = std::string(object_type::kTableHead);
    r.stable_table_id = sid;
    r.table_version = version;
    out.push_back(std::move(r));
  }
  return out;
}

// A level over capacity moves whole into the next, read when the commit
// does not hold it, and the move cascades; a moved head replaces the
// older copy of itself there. (Through real drops, level 2 needs 321.)
TEST(TombstoneSettleTest, ALevelOverCapacityMovesUpAndTheMoveCascades) {
  ASSERT_EQ(TombstoneLevelCapacity(0), 64u);
  ASSERT_EQ(TombstoneLevelCapacity(1), 256u);
  manifest_internal::PartitionRows parts;
  parts[kFirstTombstonePartition] = Tombstones(0, 65, 2);  // level 0, over by one
  std::vector<uint32_t> read;
  auto reader = [&](uint32_t p) -> Result<std::vector<ManifestRow>> {
    read.push_back(p);
    if (p == kFirstTombstonePartition + 1) return Tombstones(60, 60 + 256, 1);  // full
    if (p == kFirstTombstonePartition + 2) return Tombstones(1000, 1010, 1);
    return std::vector<ManifestRow>{};
  };
  ASSERT_TRUE(manifest_internal::SettleTombstoneLevels(&parts, reader).ok());
  EXPECT_EQ(read,
            (std::vector<uint32_t>{kFirstTombstonePartition + 1, kFirstTombstonePartition + 2}));
  EXPECT_TRUE(parts[kFirstTombstonePartition].empty());
  EXPECT_TRUE(parts[kFirstTombstonePartition + 1].empty());  // 65 + 256 - 5 copies > 256
  const std::vector<ManifestRow>& level2 = parts[kFirstTombstonePartition + 2];
  EXPECT_EQ(level2.size(), 10u + 316u);
  std::map<std::string, int64_t> version;
  for (const ManifestRow& r : level2) {
    EXPECT_TRUE(version.emplace(r.object_id, *r.table_version).second) << r.object_id;
  }
  for (int64_t sid = 60; sid < 65; ++sid) {
    EXPECT_EQ(version["head:" + std::to_string(sid)], 2) << sid;  // the newer copy
  }
  // At capacity, nothing moves and nothing is read.
  manifest_internal::PartitionRows full;
  full[kFirstTombstonePartition] = Tombstones(0, 64, 1);
  read.clear();
  ASSERT_TRUE(manifest_internal::SettleTombstoneLevels(&full, reader).ok());
  EXPECT_TRUE(read.empty());
  EXPECT_EQ(full[kFirstTombstonePartition].size(), 64u);
}

TEST_F(TombstoneLevelsTest, CompactionAndRepairKeepLevelsWithinCapacity) {
  CreateAndDrop(100);
  ASSERT_TRUE(ws_->manifest().Compact("").ok());
  std::vector<uint32_t> levels = LevelCounts();
  EXPECT_EQ(levels[0], 0u);  // compaction settles 100 heads into level 1
  EXPECT_EQ(levels[1], 100u);
  ExpectEveryDroppedHeadFound();
  HeadsReport repaired = ws_->RepairHeads().value();
  EXPECT_TRUE(repaired.changes.empty());
  CreateAndDrop(3);
  levels = LevelCounts();
  EXPECT_EQ(levels[0], 3u);
  ExpectEveryDroppedHeadFound();
}

// Rewrites main's current directory as a format-8 build laid it out: each
// tombstoned head in its hashed partition, the header saying 8.
void RewriteAsFormatEight(WorkspaceEngine& ws) {
  Dataset base = ws.manifest().OpenDataset("").value();
  ManifestVersion v = ws.manifest().Current("").value();
  std::map<uint32_t, std::vector<ManifestRow>> hashed;
  for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) {
    for (ManifestRow& r : ws.manifest().ReadPartition(v, p).value()) {
      hashed[TombstoneHeadPartitions(*r.stable_table_id, 8).at(0)].push_back(std::move(r));
    }
  }
  HeadDirectory dir = v.dir;
  std::vector<Fragment> added;
  for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) {
    dir.slots[p] = HeadDirectory::Slot{};
    auto& rows = hashed[p];
    if (rows.empty()) continue;
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.object_id < b.object_id; });
    Fragment f = base.WriteFragment(RowsToBatch(rows)).value();
    dir.Set(p, {f.data_path, f.data_size}, 0, static_cast<uint32_t>(rows.size()));
    added.push_back(f);
  }
  dir.Prune();
  std::string sealed = EncodeHeadDirectory(dir);
  std::string header;
  PutFixed32(&header, 8);
  sealed.replace(4, 4, header);
  sealed.resize(sealed.size() - 8);
  PutFixed64(&sealed, Hash64(sealed));
  ASSERT_TRUE(base.CommitRewrite(added, {}, sealed).ok());
}

TEST_F(TombstoneLevelsTest, AFormatEightDirectoryIsReadAndTakenOverByItsHeader) {
  CreateAndDrop(80);
  RewriteAsFormatEight(*ws_);
  ManifestVersion v = ws_->manifest().Current("").value();
  ASSERT_EQ(v.dir.format, 8u);
  uint32_t used = 0;
  for (uint32_t p = kFirstTombstonePartition; p < kNumPartitions; ++p) {
    used += v.dir.slots[p].file >= 0;
  }
  EXPECT_GT(used, 8u);  // hashed: spread over the 16 partitions
  ExpectEveryDroppedHeadFound();
  // A format-9 commit (one more drop) rewrites the header and level 0 (the
  // old partition 66 with its hashed heads, plus the new one) and nothing else.
  const std::vector<uint32_t> before = LevelCounts();
  CreateAndDrop(1);
  v = ws_->manifest().Current("").value();
  EXPECT_EQ(v.dir.format, kManifestFormatVersion);
  const std::vector<uint32_t> after = LevelCounts();
  EXPECT_EQ(after[0], before[0] + 1);
  for (uint32_t i = 1; i < after.size(); ++i) EXPECT_EQ(after[i], before[i]) << "level " << i;
  ExpectEveryDroppedHeadFound();
}

// After compaction a read of one head partition decodes a file of about
// `compacted_file_rows` rows, not every head of the workspace (one file of
// 120 heads and 120 definitions before), and the cache can hold it.
TEST(CompactedManifestTest, AReadOfOnePartitionDecodesAFileOfBoundedSize) {
  auto store = std::make_shared<MemoryObjectStore>();
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.compacted_file_rows = 8;
  auto ws = WorkspaceEngine::Init(store, "", o).value();
  constexpr int kTables = 120;
  for (int i = 0; i < kTables; ++i) {
    ASSERT_TRUE(ws->CreateTable("t" + std::to_string(i), EventSchema(), {}).ok());
  }
  ASSERT_TRUE(ws->manifest().Compact("").ok());
  WorkspaceOptions uncached = o;
  uncached.manifest.cache_bytes = 0;
  auto reader = WorkspaceEngine::Open(store, "", uncached).value();
  ManifestVersion v = reader->manifest().Current("").value();
  int64_t most = 0;
  std::set<int32_t> files;
  for (uint32_t p = 0; p < kTableHeadPartitions; ++p) {
    ManifestReadStats stats;
    ASSERT_TRUE(reader->manifest().ReadPartition(v, p, &stats).ok());
    most = std::max(most, stats.file_rows_decoded);
    if (v.dir.slots[p].file >= 0) files.insert(v.dir.slots[p].file);
  }
  EXPECT_LE(most, 16);  // 8, plus the partition that passed it
  EXPECT_GE(files.size(), 8u);
  EXPECT_LE(files.size(), 16u);
  EXPECT_EQ(files.count(v.dir.slots[kCatalogPartition].file), 0u);  // the catalog apart
  EXPECT_EQ(reader->Current().value().tables.size(), static_cast<size_t>(kTables));
  testing::ExpectHeadsMatchFold(*reader);
}

}  // namespace
}  // namespace loam
