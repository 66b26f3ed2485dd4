// An upsert run's merge plan is carried past commits that touched none of
// its keys, and made again when one did (WorkspaceEngine::CarryMergePlan).
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "ingest/loader.h"
#include "ingest/loader_test_util.h"
#include "io/memory_object_store.h"

namespace loam::ingest {
namespace {

class LoaderCarryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_shared<MemoryObjectStore>();
    ws_ = NewLoaderWorkspace(store_);
    Schema accounts{{{"id", DataType::Int64(), false}, {"name", DataType::String()}}};
    ASSERT_TRUE(ws_->CreateTable("accounts", accounts, {"id"}).ok());
    files_["base.csv"] = "id,name\n1,ann\n2,bob\n3,cy\n4,dee\n";
    ASSERT_EQ(Load(LoadMode::kAppend, "base.csv").state, RunState::kSucceeded);
    // The run under test: 1 unchanged, 2 updated, 9 inserted.
    files_["run.csv"] = "id,name\n1,ann\n2,bobby\n9,nia\n";
  }

  // Loads `file`; `between` runs once, after the run's first validation and
  // before its commit. `validations` counts how often the run validated.
  RunRecord Load(LoadMode mode, const std::string& file, std::function<void()> between = {},
                 int* validations = nullptr) {
    LoaderOptions o;
    o.open_input = [this](const std::string& f) -> Result<std::unique_ptr<ByteSource>> {
      return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(files_.at(f)));
    };
    o.failpoint = [&, between](std::string_view p) mutable {
      if (p == failpoint::kRunAfterValidate && validations != nullptr) ++*validations;
      if (p == failpoint::kRunBeforeCommit && between) {
        between();
        between = {};
      }
      return Status::OK();
    };
    RunRequest r;
    r.table = "accounts";
    r.mode = mode;
    r.files = {file};
    r.principal = "owner";
    return RunLoader(ws_, r, o);
  }

  // Another writer's upsert of `csv`, committed while the run waits.
  std::function<void()> Upsert(std::string csv) {
    return [this, csv] {
      files_["other.csv"] = "id,name\n" + csv;
      ASSERT_EQ(Load(LoadMode::kUpsert, "other.csv").state, RunState::kSucceeded);
    };
  }

  // Another writer's delete of the row with `id`.
  std::function<void()> Delete(int64_t id) {
    return [this, id] {
      WriteRequest del;
      del.table = "accounts";
      del.mode = WriteMode::kDelete;
      del.where = {Predicate::Eq("id", id)};
      del.principal = "owner";
      ASSERT_TRUE(ws_->Write(del).ok());
    };
  }

  // Every row as "id:name", by id.
  std::string Contents() {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, "accounts").value().ReadAll().value();
    std::map<int64_t, std::string> rows;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      rows[all.columns[0].GetInt64(r)] = std::string(all.columns[1].GetBytes(r));
    }
    std::string out;
    for (const auto& [id, name] : rows) out += std::to_string(id) + ":" + name + " ";
    return out;
  }

  std::shared_ptr<MemoryObjectStore> store_;
  std::shared_ptr<WorkspaceEngine> ws_;
  std::map<std::string, std::string> files_;
};

TEST_F(LoaderCarryTest, AnUpsertCommitsOnANewerVersionThatTouchedNoneOfItsKeys) {
  int validations = 0;
  RunRecord r = Load(LoadMode::kUpsert, "run.csv", Upsert("3,cyd\n5,eve\n"), &validations);
  ASSERT_EQ(r.state, RunState::kSucceeded) << r.error;
  EXPECT_EQ(validations, 1);  // its plan was carried, not made again
  EXPECT_EQ(r.counters.inserted, 1);
  EXPECT_EQ(r.counters.updated, 1);
  EXPECT_EQ(r.counters.unchanged, 1);
  EXPECT_EQ(Contents(), "1:ann 2:bobby 3:cyd 4:dee 5:eve 9:nia ");
  // A delete of another key is no obstacle either.
  files_["again.csv"] = "id,name\n4,dee\n10,ten\n";
  validations = 0;
  RunRecord d = Load(LoadMode::kUpsert, "again.csv", Delete(5), &validations);
  ASSERT_EQ(d.state, RunState::kSucceeded) << d.error;
  EXPECT_EQ(validations, 1);
  EXPECT_EQ(Contents(), "1:ann 2:bobby 3:cyd 4:dee 9:nia 10:ten ");
}

// Each commit below touches one of the run's keys: the row it leaves alone
// (1), the row it replaces (2), or the key it inserts (9). The run plans
// again and its rows win, as if it had validated after that commit.
TEST_F(LoaderCarryTest, AnUpsertPlansAgainWhenACommitSinceTouchedOneOfItsKeys) {
  struct Case {
    const char* other;  // the other writer's upsert
    const char* after;  // the table after the run
    int64_t inserted, updated, unchanged;
  };
  const Case cases[] = {
      {"1,anna\n", "1:ann 2:bobby 3:cy 4:dee 9:nia ", 1, 2, 0},
      {"2,rob\n", "1:ann 2:bobby 3:cy 4:dee 9:nia ", 1, 1, 1},
      {"9,nine\n", "1:ann 2:bobby 3:cy 4:dee 9:nia ", 0, 2, 1},
  };
  for (const Case& c : cases) {
    SetUp();
    int validations = 0;
    RunRecord r = Load(LoadMode::kUpsert, "run.csv", Upsert(c.other), &validations);
    ASSERT_EQ(r.state, RunState::kSucceeded) << c.other << r.error;
    EXPECT_EQ(validations, 2) << c.other;
    EXPECT_EQ(Contents(), c.after) << c.other;
    EXPECT_EQ(r.counters.inserted, c.inserted) << c.other;
    EXPECT_EQ(r.counters.updated, c.updated) << c.other;
    EXPECT_EQ(r.counters.unchanged, c.unchanged) << c.other;
  }
  // A delete of the row the run leaves alone: the run puts it back.
  SetUp();
  int validations = 0;
  RunRecord r = Load(LoadMode::kUpsert, "run.csv", Delete(1), &validations);
  ASSERT_EQ(r.state, RunState::kSucceeded) << r.error;
  EXPECT_EQ(validations, 2);
  EXPECT_EQ(Contents(), "1:ann 2:bobby 3:cy 4:dee 9:nia ");
  EXPECT_EQ(r.counters.inserted, 2);
}

}  // namespace
}  // namespace loam::ingest
