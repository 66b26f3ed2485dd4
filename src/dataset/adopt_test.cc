// Dataset::Adopt: another branch's version made this branch's next one.
#include <gtest/gtest.h>

#include "dataset/dataset.h"
#include "dataset/dataset_test_util.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Contents;
using testing::People;
using testing::PeopleSchema;

class AdoptTest : public ::testing::Test {
 protected:
  Dataset Open(const std::string& branch) {
    return Dataset::Open(store_, "t", {.branch = branch}, options_).value();
  }
  size_t FilesUnder(const std::string& prefix) { return store_->ListAll(prefix).value().size(); }

  DatasetOptions options_;
  std::shared_ptr<ObjectStore> store_ = testing::NewTestStore();
  Dataset main_ = Dataset::Create(store_, "t", PeopleSchema(), options_).value();
};

TEST_F(AdoptTest, MainTakesABranchsContentAndOutlivesTheBranch) {
  Dataset main2 = main_.Append({People({1, 2, 3})}).value();  // inline in main's version file
  main2 = main2.Append({People({7})}).value();                // a fragment dev leaves alone
  const uint64_t kept_id = main2.state().fragments.at(1).id;
  Dataset dev = main2.CreateBranch("dev").value();
  dev = dev.Append({People({4, 5})}).value();
  dev = dev.Delete({Predicate::Eq("id", int64_t{2})}).value();  // a deletion of main's fragment
  dev = dev.AddColumn(Field{"note", DataType::String(), true}).value();
  ASSERT_GT(FilesUnder("t/tree/dev/data/"), 0u);
  ASSERT_GT(FilesUnder("t/tree/dev/_deletions/"), 0u);

  uint64_t copied = 0;
  Result<Dataset> adopted = main2.Adopt(dev, {.expected_version = main2.version()}, &copied);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(adopted->version(), main2.version() + 1);
  EXPECT_GT(copied, 0u);
  EXPECT_EQ(Contents(*adopted), Contents(dev));
  EXPECT_EQ(adopted->state().schema, dev.state().schema);
  // Main's own fragment keeps its id (row addresses stay); nothing it reads
  // lives in the branch's directory.
  EXPECT_NE(adopted->state().FindFragment(kept_id), nullptr);
  for (const Fragment& f : adopted->state().fragments) {
    EXPECT_FALSE(f.data_path.starts_with("tree/")) << f.data_path;
    EXPECT_FALSE(f.deletion_path.starts_with("tree/")) << f.deletion_path;
  }
  ASSERT_TRUE(main2.DeleteBranch("dev").ok());
  EXPECT_EQ(FilesUnder("t/tree/"), 0u);
  EXPECT_EQ(Contents(Open("")), Contents(*adopted));
}

TEST_F(AdoptTest, FilesOfTheTargetsOwnChainAreSharedNotCopied) {
  Dataset dev = main_.Append({People({1})}).value().CreateBranch("dev").value();
  dev = dev.Append({People({2, 3})}).value();
  Dataset feature = dev.CreateBranch("feature").value().Append({People({4})}).value();
  uint64_t copied = 0;
  Result<Dataset> adopted = dev.Adopt(feature, {.expected_version = dev.version()}, &copied);
  ASSERT_TRUE(adopted.ok()) << adopted.status();
  EXPECT_EQ(Contents(*adopted), Contents(feature));
  // Only feature's own fragment was copied: dev's and main's are read where they are.
  uint64_t feature_bytes = 0;
  for (const Fragment& f : feature.state().fragments) {
    if (f.data_path.starts_with("tree/feature/")) feature_bytes += f.data_size;
  }
  EXPECT_EQ(copied, feature_bytes);
  size_t in_dev = 0;
  for (const Fragment& f : adopted->state().fragments)
    in_dev += f.data_path.starts_with("tree/dev/");
  EXPECT_EQ(in_dev, 2u);  // dev's own file, and the copy of feature's
}

TEST_F(AdoptTest, NeedsAnExpectedVersionThatIsStillTheLatest) {
  Dataset main2 = main_.Append({People({1})}).value();
  Dataset dev = main2.CreateBranch("dev").value().Append({People({2})}).value();
  EXPECT_TRUE(main2.Adopt(dev).status().IsInvalidArgument());
  ASSERT_TRUE(main2.Append({People({9})}).ok());  // main moved
  Status stale = main2.Adopt(dev, {.expected_version = main2.version()}).status();
  EXPECT_TRUE(stale.Is(ErrorCode::kConflict)) << stale;
  EXPECT_EQ(Open("").CountRows(), 2u);  // unchanged
}

}  // namespace
}  // namespace loam
