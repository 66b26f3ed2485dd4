// The latest-version hint on local disk (latest_hint.cc): the latest version
// is found without listing `_versions/`, and a hint that is behind, torn,
// missing or names a version that is gone never gives a wrong answer.
#include <gtest/gtest.h>

#include <filesystem>

#include "dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "io/counting_object_store.h"
#include "io/local_object_store.h"

namespace loam {
namespace {

using testing::People;
using testing::PeopleSchema;
using testing::Range;

class LatestHintTest : public ::testing::Test {
 protected:
  LatestHintTest() {
    std::filesystem::remove_all(dir_);
    local_ = LocalObjectStore::Open(dir_.string()).value();
    counting_ = std::make_shared<CountingObjectStore>(local_);
  }
  ~LatestHintTest() override { std::filesystem::remove_all(dir_); }

  // Opens the latest version of `branch` through the counting store.
  uint64_t OpenLatest(const std::string& branch = "", uint64_t* lists = nullptr) {
    counting_->Reset();
    OpenSpec spec;
    spec.branch = branch;
    Dataset ds = Dataset::Open(counting_, "t", spec).value();
    if (lists != nullptr) *lists = counting_->Snapshot().total.count(ObjectOp::kList);
    return ds.version();
  }
  Dataset AppendSome(Dataset ds, int commits) {
    for (int i = 0; i < commits; ++i) ds = ds.Append({People(Range(i, i + 1))}).value();
    return ds;
  }
  void SetHint(const std::string& text, const std::string& branch_dir = "") {
    ASSERT_TRUE(local_->Put("t/" + branch_dir + "_versions/latest", text).ok());
  }

  const std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("loam-hint-test-" + std::to_string(::getpid()));
  std::shared_ptr<ObjectStore> local_;
  std::shared_ptr<CountingObjectStore> counting_;
};

TEST_F(LatestHintTest, TheLatestVersionIsFoundWithoutListingItsDirectory) {
  Dataset ds = AppendSome(Dataset::Create(counting_, "t", PeopleSchema()).value(), 30);
  ASSERT_EQ(ds.version(), 31u);
  uint64_t lists = 99;
  EXPECT_EQ(OpenLatest("", &lists), 31u);
  EXPECT_EQ(lists, 0u);
  // The same requests at any depth: a GET of the hint, a HEAD of the version
  // it names and of the next one, then the version itself.
  const uint64_t at_31 = counting_->Snapshot().total.total_requests();
  AppendSome(ds, 40);
  EXPECT_EQ(OpenLatest("", &lists), 71u);
  EXPECT_EQ(lists, 0u);
  EXPECT_EQ(counting_->Snapshot().total.total_requests(), at_31);
}

TEST_F(LatestHintTest, AHintThatIsBehindTornMissingOrGoneNeverMisleads) {
  AppendSome(Dataset::Create(counting_, "t", PeopleSchema()).value(), 9);  // version 10
  uint64_t lists = 0;
  SetHint("3");  // behind: its writer died between the version and the hint
  EXPECT_EQ(OpenLatest("", &lists), 10u);
  EXPECT_EQ(lists, 0u);
  for (const char* bad : {"", "1x", "-4", "0", "999"}) {  // torn, or a version not there
    SetHint(bad);
    EXPECT_EQ(OpenLatest("", &lists), 10u) << "hint '" << bad << "'";
    EXPECT_EQ(lists, 1u) << "hint '" << bad << "'";
  }
  ASSERT_TRUE(local_->Delete("t/_versions/latest").ok());
  EXPECT_EQ(OpenLatest("", &lists), 10u);
  EXPECT_EQ(lists, 1u);
}

TEST_F(LatestHintTest, ABranchHasItsOwnHintWhichItsDeletionRemoves) {
  Dataset main = AppendSome(Dataset::Create(counting_, "t", PeopleSchema()).value(), 4);
  Dataset branch = AppendSome(main.CreateBranch("b").value(), 6);  // fork at 5: 6..11
  AppendSome(main, 2);                                             // main: 7
  uint64_t lists = 99;
  EXPECT_EQ(OpenLatest("b", &lists), 11u);
  EXPECT_EQ(lists, 0u);
  EXPECT_EQ(OpenLatest("", &lists), 7u);
  EXPECT_EQ(lists, 0u);
  ASSERT_TRUE(local_->Head("t/tree/b/_versions/latest").ok());
  ASSERT_TRUE(main.DeleteBranch("b").ok());
  EXPECT_TRUE(local_->Head("t/tree/b/_versions/latest").status().IsNotFound());
  // Recreated under the name, the branch starts again from its fork.
  Dataset again = Dataset::Open(counting_, "t").value().CreateBranch("b").value();
  SetHint("11", "tree/b/");  // as if the old incarnation's hint had survived
  EXPECT_EQ(OpenLatest("b"), again.version());
}

}  // namespace
}  // namespace loam
