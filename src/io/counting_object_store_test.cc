#include "io/counting_object_store.h"

#include <gtest/gtest.h>

#include "io/memory_object_store.h"

namespace loam {
namespace {

TEST(CountingObjectStoreTest, CountsRequestsAndBytesPerOperation) {
  CountingObjectStore store(std::make_shared<MemoryObjectStore>());
  ASSERT_TRUE(store.Put("tables/t1/a", "12345").ok());
  ASSERT_TRUE(store.PutIfAbsent("tables/t1/b", "xy").ok());
  ASSERT_TRUE(store.PutIfAbsent("tables/t1/b", "xy").status().IsAlreadyExists());
  ObjectMeta meta;
  ASSERT_TRUE(store.Get("tables/t1/a", &meta).ok());
  ASSERT_TRUE(store.PutIfMatch("tables/t1/a", "678", meta.etag).ok());
  ASSERT_TRUE(store.GetRange("tables/t1/a", 1, 1).ok());
  ASSERT_TRUE(store.Head("__manifest/v1").status().IsNotFound());
  ASSERT_TRUE(store.List("tables/", "", 0).ok());
  ASSERT_TRUE(store.Delete("tables/t1/b").ok());

  IoSnapshot s = store.Snapshot();
  EXPECT_EQ(s.total.count(ObjectOp::kPut), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kPutIfAbsent), 2u);
  EXPECT_EQ(s.total.count(ObjectOp::kPutIfMatch), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kGet), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kGetRange), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kHead), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kList), 1u);
  EXPECT_EQ(s.total.count(ObjectOp::kDelete), 1u);
  EXPECT_EQ(s.total.total_requests(), 9u);
  EXPECT_EQ(s.total.reads(), 4u);
  EXPECT_EQ(s.total.writes(), 5u);
  EXPECT_EQ(s.total.errors, 2u);
  EXPECT_EQ(s.total.bytes_read, 5u + 1u);             // full get + one-byte range
  EXPECT_EQ(s.total.bytes_written, 5u + 2u + 2u + 3u);  // the failed put still sent its body
  ASSERT_EQ(s.by_prefix.size(), 2u);
  EXPECT_EQ(s.by_prefix["tables/"].total_requests(), 8u);
  EXPECT_EQ(s.by_prefix["__manifest/"].count(ObjectOp::kHead), 1u);
  EXPECT_NE(s.total.ToString().find("put_if_absent=2"), std::string::npos) << s.total.ToString();

  store.Reset();
  EXPECT_EQ(store.Snapshot().total.total_requests(), 0u);
  EXPECT_TRUE(store.Snapshot().by_prefix.empty());
}

TEST(CountingObjectStoreTest, PrefixDepthGroupsDeeper) {
  CountingObjectStore store(std::make_shared<MemoryObjectStore>(), /*prefix_depth=*/2);
  ASSERT_TRUE(store.Put("tables/a/x", "1").ok());
  ASSERT_TRUE(store.Put("tables/b/x", "1").ok());
  ASSERT_TRUE(store.Put("root-object", "1").ok());
  IoSnapshot s = store.Snapshot();
  EXPECT_EQ(s.by_prefix.count("tables/a/"), 1u);
  EXPECT_EQ(s.by_prefix.count("tables/b/"), 1u);
  EXPECT_EQ(s.by_prefix.count(""), 1u);
}

}  // namespace
}  // namespace loam
