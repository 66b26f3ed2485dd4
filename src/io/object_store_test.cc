#include "loam/object_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace loam {
namespace {

TEST(ValidateObjectKeyTest, AcceptsOrdinaryKeys) {
  for (const char* k : {"a", "a/b/c", "tables/7-01HZ/data/f.lrm", "x.y", "a/b..c", "ünï/cödé",
                        "with space", "a-b_c=d"}) {
    EXPECT_TRUE(ValidateObjectKey(k).ok()) << k;
  }
}

TEST(ValidateObjectKeyTest, RejectionsSayWhy) {
  struct Case {
    std::string key;
    std::string why;
  };
  for (const Case& c : std::vector<Case>{{"", "empty"},
                                         {"/a", "relative"},
                                         {"a//b", "empty segment"},
                                         {"a/", "ends with '/'"},
                                         {"..", "'..'"},
                                         {"a/.git", "reserved"},
                                         {"a\nb", "control character"},
                                         {"\xe2\x82", "UTF-8"},
                                         {"\xed\xa0\x80", "UTF-8"},  // surrogate
                                         {std::string(1025, 'a'), "1024"}}) {
    Status s = ValidateObjectKey(c.key);
    ASSERT_TRUE(s.IsInvalidArgument()) << c.key;
    EXPECT_NE(s.message().find(c.why), std::string::npos) << s.message();
  }
}

TEST(ValidateListPrefixTest, AllowsEmptyAndTrailingSlash) {
  EXPECT_TRUE(ValidateListPrefix("").ok());
  EXPECT_TRUE(ValidateListPrefix("a/").ok());
  EXPECT_TRUE(ValidateListPrefix("a/b").ok());
  EXPECT_TRUE(ValidateListPrefix("/").IsInvalidArgument());
  EXPECT_TRUE(ValidateListPrefix("a//").IsInvalidArgument());
}

TEST(OpenObjectStoreTest, ChoosesBackendByUri) {
  auto dir = std::filesystem::temp_directory_path() / ("loam-open-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto local = OpenObjectStore(dir.string());
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ((*local)->Describe(), "file://" + dir.string());
  ASSERT_TRUE((*local)->Put("k", "v").ok());
  auto file = OpenObjectStore("file://" + dir.string());
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->Get("k").value(), "v");
  std::filesystem::remove_all(dir);

  auto mem1 = OpenObjectStore("mem://shared-name").value();
  auto mem2 = OpenObjectStore("mem://shared-name").value();
  ASSERT_TRUE(mem1->Put("k", "v").ok());
  EXPECT_EQ(mem2->Get("k").value(), "v");
  EXPECT_TRUE(OpenObjectStore("mem://other").value()->Get("k").status().IsNotFound());
}

TEST(OpenObjectStoreTest, RejectsBadUris) {
  EXPECT_TRUE(OpenObjectStore("").status().IsInvalidArgument());
  EXPECT_TRUE(OpenObjectStore("mem://").status().IsInvalidArgument());
  EXPECT_TRUE(OpenObjectStore("file://relative").status().IsInvalidArgument());
  Status s = OpenObjectStore("gopher://x").status();
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_NE(s.message().find("gopher"), std::string::npos);
}

}  // namespace
}  // namespace loam
