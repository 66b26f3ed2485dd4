// Crash safety: a simulated process death at every write of every operation
// leaves a dataset that opens and equals either the state before or the
// state after the operation; never anything in between.
#include <gtest/gtest.h>

#include <functional>

#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/fault_injection_object_store.h"
#include "io/memory_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

using Op = std::function<Status(const Dataset&)>;

// Builds the starting state: two appends and a delete, plus a branch.
std::shared_ptr<ObjectStore> BuildStartingState() {
  auto store = testing::NewTestStore();
  Dataset ds = Dataset::Create(store, "t", PeopleSchema()).value();
  ds = ds.Append({People({1, 2, 3})}).value();
  ds = ds.Append({People({4, 5})}).value();
  ds = ds.Delete({Predicate::Eq("id", int64_t{2})}).value();
  (void)ds.CreateBranch("b").value();
  return store;
}

struct OpCase {
  std::string name;
  std::string branch;
  Op op;
};

std::vector<OpCase> Cases() {
  auto s = [](Result<Dataset> r) { return r.status(); };
  return {
      {"append", "", [=](const Dataset& d) { return s(d.Append({People({6, 7})})); }},
      {"delete", "", [=](const Dataset& d) { return s(d.Delete({Predicate::Ge("id", int64_t{4})})); }},
      {"merge", "", [=](const Dataset& d) { return s(d.MergeInsert({"id"}, {People({1, 5, 9}, "m")})); }},
      {"overwrite", "", [=](const Dataset& d) { return s(d.Overwrite({People({42})})); }},
      {"restore", "", [=](const Dataset& d) { return s(d.Restore(2)); }},
      {"add_column", "", [=](const Dataset& d) { return s(d.AddColumn({"extra", DataType::Int64()})); }},
      {"branch_merge", "b", [=](const Dataset& d) { return s(d.MergeInsert({"id"}, {People({3, 8}, "b")})); }},
      {"compact", "", [=](const Dataset& d) { return s(d.Compact({.target_rows = 100})); }},
      {"create_index", "", [=](const Dataset& d) { return s(d.CreateIndex("by_id", "id")); }},
      {"cleanup", "", [=](const Dataset& d) {
         CleanupOptions o;
         o.older_than_micros = Clock::System()->NowMicros() + 1;
         o.grace_cutoff_micros = o.older_than_micros;
         return d.Cleanup(o).status();
       }},
  };
}

TEST(DatasetCrashTest, CrashAtEveryWriteLeavesBeforeOrAfter) {
  int crash_points = 0;
  for (const OpCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    // Reference states and the number of writes the operation performs.
    auto ref = BuildStartingState();
    const auto before = Contents(Dataset::Open(ref, "t", {.branch = c.branch}).value());
    auto counting = std::make_shared<CountingObjectStore>(ref);
    ASSERT_TRUE(c.op(Dataset::Open(counting, "t", {.branch = c.branch}).value()).ok());
    const uint64_t writes = counting->Snapshot().total.writes();
    const Dataset after_ds = Dataset::Open(ref, "t", {.branch = c.branch}).value();
    const auto after = Contents(after_ds);
    ASSERT_GE(writes, 1u);
    for (uint64_t n = 1; n <= writes; ++n) {
      for (FaultAction action : {FaultAction::kCrashBefore, FaultAction::kCrashAfter}) {
        SCOPED_TRACE("write " + std::to_string(n) + (action == FaultAction::kCrashBefore ? " before" : " after"));
        auto store = BuildStartingState();
        auto faulty = std::make_shared<FaultInjectionObjectStore>(store);
        Dataset ds = Dataset::Open(faulty, "t", {.branch = c.branch}).value();
        faulty->AddRule(FaultRule::CrashAt("die", WriteOpMask(), n, action));
        const Status s = c.op(ds);
        ++crash_points;
        ASSERT_TRUE(faulty->crashed());
        // "Restart": open the surviving store directly.
        auto reopened = Dataset::Open(store, "t", {.branch = c.branch});
        ASSERT_TRUE(reopened.ok()) << reopened.status();
        const auto got = Contents(*reopened);
        EXPECT_TRUE(got == before || got == after) << "operation status: " << s;
        if (s.ok()) {
          EXPECT_EQ(got, after);  // acknowledged means durable
        }
        // The dataset stays writable after the crash.
        auto more = reopened->Restore(reopened->version());
        EXPECT_TRUE(more.ok()) << more.status();
      }
    }
  }
  std::printf("[ figures ] %d crash points checked\n", crash_points);
  EXPECT_GE(crash_points, 2 * static_cast<int>(Cases().size()));
}

}  // namespace
}  // namespace loam
