// Model-based randomized test (leveldb's "Randomized" style): random dataset
// operations checked against an in-memory model after every step.
//
// Replay a failure with LOAM_MODEL_SEED=<seed>; LOAM_MODEL_OPS sets the
// number of operations (default 10,000).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>

#include "dataset/dataset_test_util.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using Contents_t = std::map<int64_t, std::string>;

uint64_t EnvOr(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

// A batch of `ids` in `schema` (extra columns beyond the first three are null).
RecordBatch MakeBatch(const Schema& schema, const std::vector<int64_t>& ids, const std::string& tag) {
  RecordBatch b(schema);
  for (int64_t id : ids) {
    std::vector<Value> row = {id, "name-" + std::to_string(id) + "-" + tag,
                              static_cast<double>(id) * 1.5};
    row.resize(schema.fields.size());
    b.AppendRow(row).CheckOK();
  }
  return b;
}

class Model {
 public:
  explicit Model(uint64_t seed) : rng_(seed) {
    store_ = testing::NewTestStore();
    Dataset ds = Dataset::Create(store_, "m", testing::PeopleSchema()).value();
    branches_.emplace("", Branch{ds, {{1, {}}}});
  }

  void Step(int step) {
    const int pick = static_cast<int>(rng_() % 100);
    Branch& br = branches_.at(current_);
    const std::string tag = "s" + std::to_string(step);
    Contents_t next = br.history.rbegin()->second;
    Result<Dataset> r = Status::Internal("no operation");
    std::string what;
    if (pick < 22) {
      what = "append";
      std::vector<int64_t> ids;
      for (int k = 1 + rng_() % 4; k > 0; --k) ids.push_back(next_id_++);
      for (int64_t id : ids) next[id] = "name-" + std::to_string(id) + "-" + tag;
      r = br.ds.Append({MakeBatch(br.ds.schema(), ids, tag)});
    } else if (pick < 34) {
      what = "delete";
      const int64_t lo = RandomId(next), hi = lo + static_cast<int64_t>(rng_() % 5);
      for (auto it = next.lower_bound(lo); it != next.end() && it->first <= hi;) it = next.erase(it);
      r = br.ds.Delete({Predicate::Ge("id", lo), Predicate::Le("id", hi)});
    } else if (pick < 56) {
      what = "merge";
      std::set<int64_t> ids;
      for (int k = 1 + rng_() % 5; k > 0; --k) {
        ids.insert(rng_() % 3 == 0 ? next_id_++ : RandomId(next));
      }
      for (int64_t id : ids) next[id] = "name-" + std::to_string(id) + "-" + tag;
      r = br.ds.MergeInsert({"id"}, {MakeBatch(br.ds.schema(), {ids.begin(), ids.end()}, tag)});
    } else if (pick < 60) {
      what = "overwrite";
      next.clear();
      std::vector<int64_t> ids;
      for (int k = rng_() % 6; k > 0; --k) ids.push_back(next_id_++);
      for (int64_t id : ids) next[id] = "name-" + std::to_string(id) + "-" + tag;
      r = br.ds.Overwrite({MakeBatch(br.ds.schema(), ids, tag)});
    } else if (pick < 64) {
      what = "restore";
      auto it = br.history.begin();
      std::advance(it, rng_() % br.history.size());
      next = it->second;
      r = br.ds.Restore(it->first);
    } else if (pick < 65 && added_columns_ < 3 && current_.empty()) {
      what = "add_column";
      r = br.ds.AddColumn({"extra" + std::to_string(step), DataType::Int64()});
      ++added_columns_;
    } else if (pick < 68 && branches_.size() < 6) {
      what = "branch";
      const std::string name = "b" + std::to_string(step);
      auto created = br.ds.CreateBranch(name);
      ASSERT_TRUE(created.ok()) << created.status();
      branches_.emplace(name, Branch{*created, br.history, current_, created->version()});
      current_ = name;
      return;
    } else if (pick < 76) {
      what = "switch";
      auto it = branches_.begin();
      std::advance(it, rng_() % branches_.size());
      current_ = it->first;
      return;
    } else if (pick < 79) {
      what = "compact";
      r = br.ds.Compact({.target_rows = 1 + rng_() % 12});
    } else if (pick < 80) {
      what = "cleanup";
      CleanupOptions opts;
      opts.older_than_micros = Clock::System()->NowMicros() + 1;
      opts.grace_cutoff_micros = opts.older_than_micros;
      auto st = br.ds.Cleanup(opts);
      ASSERT_TRUE(st.ok()) << st.status();
      PruneHistoryAfterCleanup();
      ++ops_[what];
      return;
    } else if (pick < 82) {
      what = br.ds.state().FindIndex("by_id") ? "optimize_index" : "create_index";
      r = what == "create_index" ? br.ds.CreateIndex("by_id", "id") : br.ds.OptimizeIndices();
    } else if (pick < 84) {
      what = "indexed_lookup";
      const int64_t id = RandomId(next);
      ScanSpec spec;
      spec.where = {rng_() % 2 ? Predicate::Eq("id", id) : Predicate::Le("id", id)};
      RecordBatch got = br.ds.ReadAll(spec).value();
      size_t expected = 0;
      for (const auto& [k, v] : next) expected += (spec.where[0].op == CompareOp::kEq ? k == id : k <= id);
      ASSERT_EQ(static_cast<size_t>(got.num_rows()), expected) << "lookup of " << id;
      for (int64_t row = 0; row < got.num_rows(); ++row) {
        const int64_t k = got.columns[0].GetInt64(row);
        ASSERT_EQ(next.at(k), got.columns[1].GetBytes(row));
      }
      return;
    } else if (pick < 86) {
      what = "time_travel";
      auto it = br.history.begin();
      std::advance(it, rng_() % br.history.size());
      auto old = Dataset::Open(store_, "m", {.branch = current_, .version = it->first});
      ASSERT_TRUE(old.ok()) << old.status();
      ASSERT_EQ(testing::Contents(*old), it->second) << "version " << it->first;
      return;
    } else if (pick < 90) {
      what = "tag";
      const std::string name = "t" + std::to_string(step);
      ASSERT_TRUE(br.ds.CreateTag(name, br.ds.version()).ok());
      tags_.insert(Owner(current_, br.ds.version()));
      auto tagged = Dataset::Open(store_, "m", {.tag = name});
      ASSERT_TRUE(tagged.ok()) << tagged.status();
      ASSERT_EQ(testing::Contents(*tagged), br.history.rbegin()->second);
      return;
    } else {
      what = "reopen";
      auto reopened = Dataset::Open(store_, "m", {.branch = current_});
      ASSERT_TRUE(reopened.ok()) << reopened.status();
      br.ds = *reopened;
      ASSERT_EQ(testing::Contents(br.ds), br.history.rbegin()->second);
      return;
    }
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    br.ds = *r;
    br.history[br.ds.version()] = next;
    ASSERT_EQ(testing::Contents(br.ds), next) << what << " at step " << step;
    ++ops_[what];
  }

  const std::map<std::string, int>& ops() const { return ops_; }

 private:
  struct Branch {
    Dataset ds;
    std::map<uint64_t, Contents_t> history;  // version -> contents
    std::string parent;
    uint64_t fork_version = 0;  // versions up to here live in the parent
  };
  using VersionId = std::pair<std::string, uint64_t>;  // (owning branch, version)

  VersionId Owner(std::string branch, uint64_t version) const {
    while (!branch.empty() && version <= branches_.at(branch).fork_version) {
      branch = branches_.at(branch).parent;
    }
    return {branch, version};
  }

  // Cleanup keeps each branch's latest, tagged versions and fork points.
  void PruneHistoryAfterCleanup() {
    std::set<VersionId> kept = tags_;
    for (const auto& [name, b] : branches_) {
      kept.insert(Owner(name, b.history.rbegin()->first));
      if (!name.empty()) kept.insert({b.parent, b.fork_version});
    }
    for (auto& [name, b] : branches_) {
      for (auto it = b.history.begin(); it != b.history.end();) {
        it = kept.count(Owner(name, it->first)) ? std::next(it) : b.history.erase(it);
      }
    }
  }

  int64_t RandomId(const Contents_t& c) {
    if (c.empty() || rng_() % 4 == 0) {
      // Any id ever used, or the next fresh one (then consumed, so appends
      // never reuse it).
      const int64_t id = static_cast<int64_t>(rng_() % (next_id_ + 1));
      if (id == next_id_) ++next_id_;
      return id;
    }
    auto it = c.begin();
    std::advance(it, rng_() % c.size());
    return it->first;
  }

  std::mt19937_64 rng_;
  std::shared_ptr<ObjectStore> store_;
  std::map<std::string, Branch> branches_;
  std::string current_;
  int64_t next_id_ = 0;
  int added_columns_ = 0;
  std::map<std::string, int> ops_;
  std::set<VersionId> tags_;
};

TEST(DatasetModelTest, RandomOperationsMatchTheModel) {
  const uint64_t seed = EnvOr("LOAM_MODEL_SEED", 20261129);
  const uint64_t ops = EnvOr("LOAM_MODEL_OPS", 10000);
  std::printf("[ seed ] LOAM_MODEL_SEED=%llu LOAM_MODEL_OPS=%llu\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(ops));
  Model model(seed);
  for (uint64_t i = 0; i < ops; ++i) {
    model.Step(static_cast<int>(i));
    if (::testing::Test::HasFatalFailure()) {
      FAIL() << "replay with LOAM_MODEL_SEED=" << seed << " (failed at step " << i << ")";
    }
  }
  std::string summary;
  for (const auto& [op, n] : model.ops()) summary += op + "=" + std::to_string(n) + " ";
  std::printf("[ figures ] committed operations: %s\n", summary.c_str());
}

}  // namespace
}  // namespace loam
