// Seeded randomized history (creates, writes, renames, drops, recreates,
// branch writes, handoffs, reopens) checked after every step: the stored
// heads equal the journal fold on every branch, and each branch's tables hold
// exactly what an in-memory model says. Replay a failure with
// LOAM_MODEL_SEED=<seed>; LOAM_MANIFEST_MODEL_STEPS sets the length.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Events;
using testing::EventSchema;

struct ModelTable {
  int64_t sid = 0;
  std::set<int64_t> ids;
};
using BranchModel = std::map<std::string, ModelTable>;  // by table name

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

std::set<int64_t> IdsOf(const WorkspaceEngine& ws, const std::string& branch,
                        const std::string& table) {
  Snapshot snap = ws.Current(branch).value();
  RecordBatch all = ws.OpenTable(snap, table).value().ReadAll().value();
  std::set<int64_t> out;
  for (int64_t r = 0; r < all.num_rows(); ++r) out.insert(all.columns[0].GetInt64(r));
  return out;
}

TEST(WorkspaceModelTest, HeadsEqualTheJournalFoldAfterEveryStep) {
  const uint64_t seed = static_cast<uint64_t>(EnvInt("LOAM_MODEL_SEED", 20261130));
  const int64_t steps = EnvInt("LOAM_MANIFEST_MODEL_STEPS", 1000);
  std::printf("[ seed ] LOAM_MODEL_SEED=%llu steps=%lld\n", static_cast<unsigned long long>(seed),
              static_cast<long long>(steps));
  std::mt19937_64 rng(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto store = testing::NewTestStore();
  auto ws = WorkspaceEngine::Init(store, "ws", testing::TestOptions()).value();
  std::map<std::string, BranchModel> model{{"", {}}};
  std::set<int64_t> tombstoned;
  int64_t next_id = 0;
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  std::map<std::string, int> counts;

  for (int64_t step = 0; step < steps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step) + " seed " + std::to_string(seed));
    std::vector<std::string> branches;
    for (const auto& [b, m] : model) branches.push_back(b);
    const std::string branch = branches[pick(branches.size())];
    BranchModel& m = model[branch];
    const std::string name = names[pick(names.size())];
    const bool exists = m.count(name) > 0;
    const int op = static_cast<int>(pick(100));
    if (!exists && op < 60) {
      WriteResult r = ws->CreateTable(name, EventSchema(), {"id"}, branch).value();
      EXPECT_FALSE(tombstoned.count(r.sid));
      m[name] = ModelTable{r.sid, {}};
      counts["create"]++;
    } else if (!exists) {
      EXPECT_TRUE(ws->Write(testing::Append(name, {1}, branch)).status().IsNotFound());
      counts["write-missing"]++;
    } else if (op < 40) {
      WriteRequest w;
      w.table = name;
      w.branch = branch;
      const int mode = static_cast<int>(pick(4));
      std::vector<int64_t> ids;
      for (int i = 0; i < 1 + static_cast<int>(pick(3)); ++i) ids.push_back(next_id++);
      ModelTable& t = m[name];
      if (mode == 0) {
        w.mode = WriteMode::kAppend;
        t.ids.insert(ids.begin(), ids.end());
      } else if (mode == 1) {
        w.mode = WriteMode::kUpsert;
        if (!t.ids.empty()) ids.push_back(*t.ids.begin());
        t.ids.insert(ids.begin(), ids.end());
      } else if (mode == 2) {
        w.mode = WriteMode::kReplace;
        t.ids = std::set<int64_t>(ids.begin(), ids.end());
      } else {
        w.mode = WriteMode::kDelete;
        const int64_t cut = t.ids.empty() ? 0 : *std::next(t.ids.begin(), pick(t.ids.size()));
        w.where = {Predicate::Lt("id", cut)};
        std::erase_if(t.ids, [&](int64_t id) { return id < cut; });
      }
      if (mode != 3) w.rows = {Events(ids)};
      ASSERT_TRUE(ws->Write(w).ok()) << "write mode " << mode;
      counts["write"]++;
    } else if (op < 50) {
      const std::string to = names[pick(names.size())];
      Status st = ws->RenameTable(name, to, branch).status();
      if (m.count(to)) {
        EXPECT_TRUE(st.IsAlreadyExists()) << st;
      } else {
        ASSERT_TRUE(st.ok()) << st;
        m[to] = m[name];
        m.erase(name);
        counts["rename"]++;
      }
    } else if (op < 58) {
      ASSERT_TRUE(ws->DropTable(name, branch).ok());
      tombstoned.insert(m[name].sid);
      m.erase(name);
      counts["drop"]++;
    } else if (op < 66 && model.size() < 4) {
      const std::string b = "b" + std::to_string(step);
      ASSERT_TRUE(ws->CreateBranch(b, branch).ok());
      model[b] = m;
      counts["branch"]++;
    } else if (op < 72 && !branch.empty()) {
      ASSERT_TRUE(ws->ForkTable(name, branch).ok());
      counts["handoff"]++;
    } else if (op < 76) {
      ws = WorkspaceEngine::Open(store, "ws", testing::TestOptions()).value();
      counts["reopen"]++;
    } else {
      EXPECT_EQ(IdsOf(*ws, branch, name), m[name].ids);
      counts["read"]++;
    }
    // Every branch: heads equal the fold; tables equal the model.
    for (const auto& [b, bm] : model) {
      testing::ExpectHeadsMatchFold(*ws, b);
      Snapshot snap = ws->Current(b).value();
      ASSERT_EQ(snap.tables.size(), bm.size()) << "branch '" << b << "'";
      for (const auto& [n, t] : bm) {
        ASSERT_NE(snap.Find(n), nullptr) << n;
        EXPECT_EQ(snap.Find(n)->def.sid, t.sid);
        EXPECT_EQ(snap.Find(n)->head.row_count, static_cast<int64_t>(t.ids.size())) << n;
      }
    }
    if (::testing::Test::HasFailure()) break;
  }
  for (const auto& [b, bm] : model) {
    for (const auto& [n, t] : bm) EXPECT_EQ(IdsOf(*ws, b, n), t.ids) << b << "/" << n;
  }
  std::string summary;
  for (const auto& [k, v] : counts) summary += " " + k + "=" + std::to_string(v);
  std::printf("[ figures ] %lld steps:%s\n", static_cast<long long>(steps), summary.c_str());
}

}  // namespace
}  // namespace loam
