#include <gtest/gtest.h>

#include "common/coding.h"
#include "common/hash.h"
#include "dataset/btree_index.h"
#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;
using testing::Range;

// id -> name of the rows a scan returns; fails on duplicates.
std::map<int64_t, std::string> Rows(const Dataset& ds, std::vector<Predicate> where, bool use_index,
                                    ScanStats* stats = nullptr) {
  ScanSpec spec;
  spec.where = std::move(where);
  spec.use_index = use_index;
  spec.stats = stats;
  RecordBatch b = ds.ReadAll(spec).value();
  std::map<int64_t, std::string> out;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    EXPECT_TRUE(
        out.emplace(b.columns[0].GetInt64(r), std::string(b.columns[1].GetBytes(r))).second);
  }
  return out;
}

class IndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 5; ++i) ds_ = ds_.Append({People(Range(i * 300, i * 300 + 300))}).value();
  }
  void ExpectSameAsFullScan(const Dataset& ds, const std::vector<Predicate>& where) {
    EXPECT_EQ(Rows(ds, where, true), Rows(ds, where, false));
  }
  std::shared_ptr<ObjectStore> store_ = testing::NewTestStore();
  Dataset ds_ = Dataset::Create(store_, "t", PeopleSchema()).value();
};

TEST_F(IndexTest, IndexedLookupsMatchFullScans) {
  Dataset ds = ds_.CreateIndex("by_id", "id").value();
  ASSERT_NE(ds.state().FindIndex("by_id"), nullptr);
  EXPECT_EQ(ds.state().FindIndex("by_id")->entries, 1500u);
  ScanStats stats;
  auto one = Rows(ds, {Predicate::Eq("id", int64_t{777})}, true, &stats);
  EXPECT_EQ(one, (std::map<int64_t, std::string>{{777, "name-777-v1"}}));
  EXPECT_EQ(stats.fragments_scanned, 0);
  EXPECT_EQ(stats.fragments_taken, 1);
  EXPECT_GT(stats.index_pages_read, 0);
  for (const auto& where : std::vector<std::vector<Predicate>>{
           {Predicate::In("id", {int64_t{1}, int64_t{299}, int64_t{300}, int64_t{5000}})},
           {Predicate::Lt("id", int64_t{10})},
           {Predicate::Le("id", int64_t{10})},
           {Predicate::Gt("id", int64_t{1490})},
           {Predicate::Ge("id", int64_t{1490}), Predicate::Lt("id", int64_t{1495})},
           {Predicate::Eq("id", int64_t{-5})},
       }) {
    ExpectSameAsFullScan(ds, where);
  }
  EXPECT_EQ(Rows(ds, {Predicate::Ge("id", int64_t{1490}), Predicate::Lt("id", int64_t{1495})}, true)
                .size(),
            5u);
}

TEST_F(IndexTest, UncoveredTailIsScannedAndOptimizeFoldsItIn) {
  Dataset ds = ds_.CreateIndex("by_id", "id").value();
  for (int k = 0; k < 3; ++k) ds = ds.Append({People({5000 + k})}).value();
  ScanStats stats;
  auto got = Rows(ds, {Predicate::Eq("id", int64_t{5001})}, true, &stats);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_EQ(stats.fragments_scanned, 3);  // exactly the uncovered tail
  EXPECT_EQ(stats.fragments_taken, 0);
  Dataset optimized = ds.OptimizeIndices().value();
  EXPECT_EQ(optimized.version(), ds.version() + 1);
  ScanStats after;
  EXPECT_EQ(Rows(optimized, {Predicate::Eq("id", int64_t{5001})}, true, &after), got);
  EXPECT_EQ(after.fragments_scanned, 0);
  EXPECT_EQ(optimized.OptimizeIndices().value().version(), optimized.version());  // nothing to fold
}

TEST_F(IndexTest, DeletesAndUpsertsNeverReturnStaleRows) {
  Dataset ds = ds_.CreateIndex("by_id", "id").value();
  ds = ds.Delete({Predicate::Eq("id", int64_t{10})}).value();
  ds = ds.MergeInsert({"id"}, {People({20, 9000}, "v2")}).value();
  EXPECT_TRUE(Rows(ds, {Predicate::Eq("id", int64_t{10})}, true).empty());
  EXPECT_EQ(Rows(ds, {Predicate::Eq("id", int64_t{20})}, true)[20], "name-20-v2");
  ExpectSameAsFullScan(ds, {Predicate::Lt("id", int64_t{30})});
  ExpectSameAsFullScan(ds, {Predicate::Gt("id", int64_t{1000})});
}

TEST_F(IndexTest, CompactionRemapsEntriesInsteadOfLosingCoverage) {
  Dataset ds = ds_.CreateIndex("by_id", "id").value();
  ds = ds.Delete({Predicate::Lt("id", int64_t{100})}).value();
  ds = ds.Append({People({7000})}).value();  // uncovered tail fragment
  Dataset compacted = ds.Compact({.target_rows = 1000}).value();
  ASSERT_LT(compacted.state().fragments.size(), ds.state().fragments.size());
  ExpectSameAsFullScan(compacted, {Predicate::Ge("id", int64_t{0})});
  ScanStats stats;
  EXPECT_EQ(Rows(compacted, {Predicate::Eq("id", int64_t{450})}, true, &stats).size(), 1u);
  // Bins: [f0 f1 f2] -> covered by the remapped index; [f3 f4 tail] mixes in
  // a row the index never had, so that new fragment is uncovered (scanned).
  EXPECT_EQ(stats.fragments_taken, 1);
  EXPECT_EQ(stats.fragments_scanned, 1);
  // The tail row that was compacted together with covered rows is found.
  EXPECT_EQ(Rows(compacted, {Predicate::Eq("id", int64_t{7000})}, true).size(), 1u);
}

TEST_F(IndexTest, StringIndexAndErrors) {
  Dataset ds = ds_.CreateIndex("by_name", "name").value();
  EXPECT_EQ(Rows(ds, {Predicate::Eq("name", std::string("name-42-v1"))}, true).size(), 1u);
  ExpectSameAsFullScan(ds, {Predicate::Lt("name", std::string("name-11"))});
  EXPECT_TRUE(ds.CreateIndex("by_score", "score").status().IsInvalidArgument());
  EXPECT_TRUE(ds.CreateIndex("x", "nope").status().IsInvalidArgument());
  EXPECT_TRUE(ds.CreateIndex("bad/name", "id").status().IsInvalidArgument());
}

TEST_F(IndexTest, CorruptIndexIsDataLossNotWrongAnswers) {
  Dataset ds = ds_.CreateIndex("by_id", "id").value();
  const std::string key = "t/" + ds.state().FindIndex("by_id")->path;
  std::string bytes = store_->Get(key).value();
  const uint64_t root = ds.state().FindIndex("by_id")->root_offset;
  bytes[root + 20] = static_cast<char>(bytes[root + 20] ^ 0x40);
  ASSERT_TRUE(store_->Delete(key).ok());
  ASSERT_TRUE(store_->Put(key, bytes).ok());
  ScanSpec spec;
  spec.where = {Predicate::Eq("id", int64_t{5})};
  EXPECT_TRUE(ds.ReadAll(spec).status().IsDataLoss());
  spec.use_index = false;
  EXPECT_EQ(ds.ReadAll(spec).value().num_rows(), 1);
}

// A page whose checksum holds but whose links lead backwards (a loop of
// leaves, a root larger than the file) is data loss, not a hang or a 4 GiB
// read.
TEST(BTreeBoundsTest, LinksThatLeadBackOrOutsideTheFileAreDataLoss) {
  MemoryObjectStore store;
  std::vector<IndexEntry> entries;
  for (int i = 0; i < 4; ++i) entries.push_back({std::string(1, static_cast<char>('a' + i)), 1u});
  IndexMeta meta;
  ASSERT_TRUE(WriteBTreeIndex(store, "i", entries, 2, &meta).ok());
  ASSERT_EQ(meta.levels, 2u);
  ASSERT_EQ(LookupBTreeRange(store, "i", meta, std::nullopt, std::nullopt).value().size(), 4u);
  std::string file = store.Get("i").value();
  // The first leaf spans [0, second_at) and links to the second; point the
  // second back at the first.
  const uint64_t second_at = DecodeFixed(file.data() + 5, 8);
  const uint32_t second_size = static_cast<uint32_t>(DecodeFixed(file.data() + 13, 4));
  std::string leaf = file.substr(second_at, second_size);
  std::string link;
  PutFixed64(&link, 0);
  PutFixed32(&link, static_cast<uint32_t>(second_at));
  leaf.replace(5, 12, link);
  leaf.resize(leaf.size() - 8);
  PutFixed64(&leaf, Hash64(leaf));
  file.replace(second_at, leaf.size(), leaf);
  ASSERT_TRUE(store.Put("i", file).ok());
  Status loop = LookupBTreeRange(store, "i", meta, std::nullopt, std::nullopt).status();
  EXPECT_TRUE(loop.IsDataLoss()) << loop;
  EXPECT_NE(loop.message().find("out of place"), std::string::npos) << loop;
  EXPECT_TRUE(ReadAllBTreeEntries(store, "i", meta).status().IsDataLoss());

  IndexMeta huge = meta;
  huge.root_size = UINT32_MAX;
  EXPECT_TRUE(LookupBTreeRange(store, "i", huge, std::nullopt, std::nullopt).status().IsDataLoss());
  huge = meta;
  huge.levels = kMaxIndexLevels + 1;
  EXPECT_TRUE(LookupBTreeRange(store, "i", huge, std::nullopt, std::nullopt).status().IsDataLoss());
}

}  // namespace
}  // namespace loam

namespace loam {
namespace {

TEST(ReadCacheTest, CachedReadsEqualUncachedAndHitTheCache) {
  auto store = testing::NewTestStore();
  Dataset ds = Dataset::Create(store, "t", PeopleSchema()).value();
  for (int i = 0; i < 3; ++i) ds = ds.Append({People(Range(i * 100, i * 100 + 100))}).value();
  ds = ds.Delete({Predicate::Eq("id", int64_t{5})}).value().CreateIndex("by_id", "id").value();
  DatasetOptions cached_opts;
  cached_opts.cache = std::make_shared<LruCache>(64 << 20);
  Dataset cached = Dataset::Open(store, "t", {}, cached_opts).value();
  for (int round = 0; round < 2; ++round) {
    for (int64_t id : {int64_t{5}, int64_t{6}, int64_t{150}, int64_t{299}, int64_t{1000}}) {
      EXPECT_EQ(Rows(cached, {Predicate::Eq("id", id)}, true),
                Rows(ds, {Predicate::Eq("id", id)}, false));
    }
    EXPECT_EQ(Contents(cached), Contents(ds));
  }
  EXPECT_GT(cached_opts.cache->hits(), 0u);
  EXPECT_GT(cached_opts.cache->charge(), 0u);
}

}  // namespace
}  // namespace loam
