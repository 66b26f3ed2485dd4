// Key checks past their memory bound: the run's and the table's keys spill
// to sorted runs on scratch storage, memory stays under the bound, and every
// outcome (refusals, their messages, upsert counters, the rows) is the one
// the in-memory checks give.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/hash.h"
#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "ingest/stager.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

constexpr size_t kSmallBound = size_t{4} << 20;

class StagerSpillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ws_ = NewLoaderWorkspace(std::make_shared<MemoryObjectStore>());
    ASSERT_TRUE(
        ws_->CreateTable("t",
                         Schema{{{"id", DataType::Int64(), false}, {"name", DataType::String()}}},
                         {"id"})
            .ok());
    // A directory of this test's own: ctest runs tests in parallel.
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(test->test_suite_name()) + "." + test->name();
    std::replace(name.begin(), name.end(), '/', '_');
    scratch_ = std::filesystem::path(::testing::TempDir()) / ("loam-spill-" + name);
    std::filesystem::remove_all(scratch_);
    std::filesystem::create_directories(scratch_);
  }

  void TearDown() override { std::filesystem::remove_all(scratch_); }

  // `bound`: the key memory bound; the key map may take all of it (no
  // sorting below the bound) when `map_to_bound`.
  LoaderOptions Options(size_t bound, bool map_to_bound = false) {
    LoaderOptions o;
    o.key_memory_bytes = bound;
    if (map_to_bound) o.key_map_bytes = bound;
    o.scratch_dir = scratch_.string();
    o.batch_rows = 4096;
    o.open_input = [this](const std::string& file) -> Result<std::unique_ptr<ByteSource>> {
      auto it = files_.find(file);
      if (it == files_.end()) return Status::NotFound("no input " + file);
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(it->second));
    };
    return o;
  }

  RunRecord Load(LoadMode mode, std::vector<std::string> files, size_t bound,
                 bool map_to_bound = false) {
    RunRequest r;
    r.table = "t";
    r.mode = mode;
    r.files = std::move(files);
    r.principal = "owner";
    return RunLoader(ws_, r, Options(bound, map_to_bound));
  }

  // Validates (stages nothing) with the bound, as a run's first attempt would.
  StagedInput Stage(LoadMode mode, const std::string& file, size_t bound,
                    bool map_to_bound = false) {
    RunRequest r;
    r.table = "t";
    r.mode = mode;
    r.files = {file};
    const Snapshot snap = ws_->Current().value();
    const Dataset data = ws_->OpenTable(snap, "t").value();
    const LoaderOptions lo = Options(bound, map_to_bound);
    StagerOptions so;
    so.key_map_bytes = lo.key_map_bytes;
    so.stage = false;
    so.batch_rows = lo.batch_rows;
    so.key_memory_bytes = bound;
    so.scratch_dir = lo.scratch_dir;
    so.open_input = lo.open_input;
    StageFailure failed;
    Result<StagedInput> staged = StageInput(r, *snap.Find("t"), data, so, &failed);
    EXPECT_TRUE(staged.ok()) << staged.status();
    return staged.ok() ? std::move(*staged) : StagedInput{};
  }

  // Rows first..last (inclusive), named n<id>, and x<id> where `changed`.
  static std::string Rows(int64_t first, int64_t last,
                          const std::function<bool(int64_t)>& changed = nullptr) {
    std::string out = "id,name\n";
    for (int64_t id = first; id <= last; ++id) {
      out +=
          std::to_string(id) + (changed && changed(id) ? ",x" : ",n") + std::to_string(id) + "\n";
    }
    return out;
  }

  // Rows, a checksum of their contents, and what the scratch directory holds.
  std::string Table() {
    RecordBatch all = ws_->OpenTable(ws_->Current().value(), "t").value().ReadAll().value();
    uint64_t sum = 0;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      sum += static_cast<uint64_t>(all.columns[0].GetInt64(r)) *
             Hash64(all.columns[1].IsNull(r) ? "" : all.columns[1].GetBytes(r));
    }
    return std::to_string(all.num_rows()) + " rows, sum " + std::to_string(sum);
  }
  bool ScratchIsEmpty() const { return std::filesystem::is_empty(scratch_); }

  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
  std::filesystem::path scratch_;
};

TEST_F(StagerSpillTest, KeyedRunsAboveTheBoundSpillAndStayUnderIt) {
  files_["base.csv"] = Rows(0, 19'999);
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, kSmallBound).state, RunState::kSucceeded);
  // 200,000 new keys: about 25 MiB of hash map when the map may take the
  // whole default bound.
  files_["new.csv"] = Rows(20'000, 219'999);
  const size_t big = StagerOptions::kDefaultKeyMemoryBytes;
  const StagedInput in_memory = Stage(LoadMode::kAppend, "new.csv", big, true);
  EXPECT_FALSE(in_memory.keys_spilled);
  EXPECT_GT(in_memory.key_memory_peak, kSmallBound);
  const StagedInput spilled = Stage(LoadMode::kAppend, "new.csv", kSmallBound);
  EXPECT_TRUE(spilled.keys_spilled);
  EXPECT_LE(spilled.key_memory_peak, kSmallBound);
  EXPECT_EQ(spilled.counters.inserted, 200'000);
  // With the default map share the same run sorts its keys well below the
  // default bound, and holds far less.
  const StagedInput sorted = Stage(LoadMode::kAppend, "new.csv", big);
  EXPECT_TRUE(sorted.keys_spilled);
  EXPECT_LT(sorted.key_memory_peak, in_memory.key_memory_peak);
  EXPECT_EQ(sorted.counters.inserted, 200'000);

  // An upsert of 200,000 keys: 10,000 in the table (every other one
  // renamed), 190,000 new. The same counters either way, under the bound.
  files_["up.csv"] = Rows(10'000, 209'999, [](int64_t id) { return id < 20'000 && id % 2 == 0; });
  const StagedInput up_memory = Stage(LoadMode::kUpsert, "up.csv", big, true);
  const StagedInput up_spilled = Stage(LoadMode::kUpsert, "up.csv", kSmallBound);
  EXPECT_FALSE(up_memory.keys_spilled);
  EXPECT_TRUE(up_spilled.keys_spilled);
  EXPECT_LE(up_spilled.key_memory_peak, kSmallBound);
  for (const StagedInput* s : {&up_memory, &up_spilled}) {
    EXPECT_EQ(s->counters.inserted, 190'000);
    EXPECT_EQ(s->counters.updated, 5'000);
    EXPECT_EQ(s->counters.unchanged, 5'000);
  }

  // Committed under the bound: the rows are the ones an in-memory run
  // leaves, and the scratch directory is empty again.
  RunRecord up = Load(LoadMode::kUpsert, {"up.csv"}, kSmallBound);
  ASSERT_EQ(up.state, RunState::kSucceeded) << up.error;
  EXPECT_EQ(up.counters.updated, 5'000);
  const std::string spilled_table = Table();
  EXPECT_TRUE(ScratchIsEmpty());
  SetUp();
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, kSmallBound).state, RunState::kSucceeded);
  ASSERT_EQ(Load(LoadMode::kUpsert, {"up.csv"}, big, true).state, RunState::kSucceeded);
  EXPECT_EQ(Table(), spilled_table);
  EXPECT_EQ(spilled_table.substr(0, 12), "210000 rows,");
}

// Bound 0 spills from the ninth key on; the default never does here.
class SpilledOutcomes : public StagerSpillTest, public ::testing::WithParamInterface<size_t> {};

TEST_P(SpilledOutcomes, RefusalsAndUpsertsAreTheSameAsInMemory) {
  const size_t bound = GetParam();
  files_["base.csv"] = Rows(0, 299);
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, bound).state, RunState::kSucceeded);
  const std::string before = Table();

  // A key twice in the run, across files: the earliest repeat is named.
  files_["a.csv"] = Rows(1000, 1299);
  files_["b.csv"] = "id,name\n" + Rows(2000, 2100).substr(8) + "1250,again\n1100,again\n";
  for (LoadMode mode : {LoadMode::kAppend, LoadMode::kReplace, LoadMode::kUpsert}) {
    RunRecord twice = Load(mode, {"a.csv", "b.csv"}, bound);
    EXPECT_EQ(twice.error_code, "duplicate_key") << twice.error;
    EXPECT_NE(twice.error.find("a.csv line 252 and b.csv line 103 have the same key (id); keep "
                               "one row per key in a run"),
              std::string::npos)
        << twice.error;
  }

  // Keys the table holds: the first five rows in input order, and a count.
  files_["c.csv"] =
      "id,name\n" + Rows(500, 520).substr(8) + "290,x\n7,x\n12,x\n299,x\n5,x\n3,x\n0,x\n";
  RunRecord held = Load(LoadMode::kAppend, {"c.csv"}, bound);
  EXPECT_EQ(held.error_code, "duplicate_key") << held.error;
  EXPECT_NE(held.error.find("duplicate key: 7 row(s) of the run have a key (id) that table 't' "
                            "already holds: c.csv line 23, c.csv line 24, c.csv line 25, c.csv "
                            "line 26, c.csv line 27 and 2 more; append only new keys, or upsert"),
            std::string::npos)
      << held.error;
  EXPECT_EQ(Table(), before);

  // An upsert: 100 unchanged, 50 renamed, 150 new.
  files_["u.csv"] = Rows(150, 449, [](int64_t id) { return id >= 250 && id < 300; });
  RunRecord up = Load(LoadMode::kUpsert, {"u.csv"}, bound);
  ASSERT_EQ(up.state, RunState::kSucceeded) << up.error;
  EXPECT_EQ(up.counters.unchanged, 100);
  EXPECT_EQ(up.counters.updated, 50);
  EXPECT_EQ(up.counters.inserted, 150);
  EXPECT_EQ(Table().substr(0, 11), "450 rows, s");
  EXPECT_TRUE(ScratchIsEmpty());
}

TEST_P(SpilledOutcomes, AnUpsertInputThatChangesBetweenItsReadsFails) {
  const size_t bound = GetParam();
  files_["base.csv"] = Rows(0, 299);
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, bound).state, RunState::kSucceeded);
  const std::string before = Table();
  const std::string first = Rows(200, 499, [](int64_t id) { return id % 3 == 0; });
  std::string moved = first;  // a matched row one line later
  moved.insert(moved.find("\n250,") + 1, "600,new\n");
  for (const std::string& second :
       {Rows(200, 499),     // changed values only
        first + "700,x\n",  // a row more
        first.substr(0, first.rfind('\n', first.size() - 2) + 1), moved}) {
    auto reads = std::make_shared<int>(0);
    LoaderOptions o = Options(bound);
    o.retain_bytes = 0;  // parse twice in memory too
    o.open_input = [&, reads](const std::string&) -> Result<std::unique_ptr<ByteSource>> {
      return std::unique_ptr<ByteSource>(
          std::make_unique<StringSource>((*reads)++ == 0 ? first : second));
    };
    RunRequest r;
    r.table = "t";
    r.mode = LoadMode::kUpsert;
    r.files = {"u.csv"};
    r.principal = "owner";
    RunRecord rec = Loader(ws_, o).Run(r).value();
    if (second == Rows(200, 499)) {
      // Same keys on the same lines: the plan still holds (values are
      // staged as read the second time).
      EXPECT_EQ(rec.state, RunState::kSucceeded) << rec.error;
      continue;
    }
    EXPECT_EQ(rec.state, RunState::kFailed);
    EXPECT_NE(rec.error.find("the input changed while the run read it a second time"),
              std::string::npos)
        << rec.error;
    EXPECT_EQ(*reads, 2);
    EXPECT_TRUE(ScratchIsEmpty());
  }
}

// The input parsed twice (in memory or spilled) keeps a hash of each table
// row: a row whose hash equals its table row's is unchanged only if its
// bytes are. Every hash is made to collide; the counters and the rows are
// still those of rows compared byte for byte, in several groups (over 64 KiB
// of candidates).
TEST_P(SpilledOutcomes, EqualContentHashesOfDifferentRowsAreAnUpdate) {
  const auto changed = [](int64_t id) { return id % 7 == 0; };
  int64_t renamed = 0;
  for (int64_t id = 10'000; id < 20'000; ++id) renamed += changed(id);
  files_["base.csv"] = Rows(0, 19'999);
  files_["u.csv"] = Rows(10'000, 29'999, changed);
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, GetParam()).state, RunState::kSucceeded);
  ASSERT_EQ(Load(LoadMode::kUpsert, {"u.csv"}, GetParam()).state, RunState::kSucceeded);
  const std::string compared = Table();
  SetUp();
  ASSERT_EQ(Load(LoadMode::kAppend, {"base.csv"}, GetParam()).state, RunState::kSucceeded);
  LoaderOptions o = Options(GetParam());
  o.retain_bytes = 0;  // parse twice in memory too
  o.collide_content_hashes = true;
  RunRequest r;
  r.table = "t";
  r.mode = LoadMode::kUpsert;
  r.files = {"u.csv"};
  r.principal = "owner";
  const RunRecord up = Loader(ws_, o).Run(r).value();
  ASSERT_EQ(up.state, RunState::kSucceeded) << up.error;
  EXPECT_EQ(up.counters.unchanged, 10'000 - renamed);
  EXPECT_EQ(up.counters.updated, renamed);
  EXPECT_EQ(up.counters.inserted, 10'000);
  EXPECT_EQ(Table(), compared);
  EXPECT_TRUE(ScratchIsEmpty());
}

INSTANTIATE_TEST_SUITE_P(Bounds, SpilledOutcomes,
                         ::testing::Values(size_t{0}, StagerOptions::kDefaultKeyMemoryBytes),
                         [](const auto& p) { return p.param == 0 ? "Spilled" : "InMemory"; });

}  // namespace
}  // namespace loam::ingest
