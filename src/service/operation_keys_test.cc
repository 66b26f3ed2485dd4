// OperationKeyStore: one answer per key and request, kept for replays;
// another request under the key is refused; a reservation whose request
// died passes on after the grace; expired and abandoned records are swept.
#include "service/operation_keys.h"

#include <gtest/gtest.h>

#include "io/memory_object_store.h"

namespace loam::service {
namespace {

constexpr int64_t kGrace = 1'000, kRetention = 10'000;

class OperationKeyStoreTest : public ::testing::Test {
 protected:
  Result<OperationClaim> Claim(const std::string& key, const std::string& fingerprint, int64_t now,
                               const std::string& principal = "ada") {
    return keys_.Claim(principal, key, fingerprint, {now, kGrace, kRetention});
  }
  int64_t Records() { return static_cast<int64_t>(store_->ListAll("ws/").value().size()); }

  std::shared_ptr<MemoryObjectStore> store_ = std::make_shared<MemoryObjectStore>();
  OperationKeyStore keys_{store_, "ws", "w1"};
};

TEST_F(OperationKeyStoreTest, TheFirstAnswerIsReplayedToTheSameRequestOnly) {
  Result<OperationClaim> first = Claim("k", "f1", 100);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_FALSE(first->replay);
  // While the first request runs, its twin is told to come back.
  EXPECT_TRUE(Claim("k", "f1", 200).status().Is(ErrorCode::kRequestInFlight));
  ASSERT_TRUE(
      keys_.Settle(*first, {201, R"({"id":"p1"})", {{"Location", "/v1/pipelines/p1"}}}).ok());
  Result<OperationClaim> again = Claim("k", "f1", 300);
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_TRUE(again->replay);
  EXPECT_EQ(again->replay->status, 201);
  EXPECT_EQ(again->replay->body, R"({"id":"p1"})");
  EXPECT_EQ(again->replay->headers.at("Location"), "/v1/pipelines/p1");
  Result<OperationClaim> other = Claim("k", "f2", 300);
  EXPECT_TRUE(other.status().Is(ErrorCode::kIdempotencyKeyReused)) << other.status();
  // Keys are the principal's own.
  Result<OperationClaim> bob = Claim("k", "f2", 300, "bob");
  ASSERT_TRUE(bob.ok()) << bob.status();
  EXPECT_FALSE(bob->replay);
  // Past its retention the key names a new request.
  Result<OperationClaim> later = Claim("k", "f2", 100 + kRetention + 1);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_FALSE(later->replay);
}

TEST_F(OperationKeyStoreTest, AReleasedOrAbandonedReservationPassesOn) {
  Result<OperationClaim> first = Claim("k", "f1", 100);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(keys_.Release(*first).ok());
  Result<OperationClaim> second = Claim("k", "f1", 150);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(second->replay);
  // Its request died: after the grace a retry takes the reservation over,
  // and the dead request's late answer is not kept over it.
  Result<OperationClaim> third = Claim("k", "f1", 150 + kGrace + 1);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_FALSE(keys_.Settle(*second, {200, "late", {}}).ok());
  ASSERT_TRUE(keys_.Settle(*third, {200, "mine", {}}).ok());
  EXPECT_EQ(Claim("k", "f1", 2'000)->replay->body, "mine");
  // A release by a request that no longer holds it removes nothing.
  ASSERT_TRUE(keys_.Release(*second).ok());
  EXPECT_EQ(Claim("k", "f1", 2'000)->replay->body, "mine");
}

TEST_F(OperationKeyStoreTest, TheSweepRemovesExpiredAnswersAndAbandonedReservations) {
  ASSERT_TRUE(keys_.Settle(*Claim("old", "f", 0), {200, "", {}}).ok());
  ASSERT_TRUE(keys_.Settle(*Claim("new", "f", 5'000), {200, "", {}}).ok());
  ASSERT_TRUE(Claim("dead", "f", 0).ok());
  ASSERT_TRUE(Claim("running", "f", 10'500).ok());
  ASSERT_EQ(Records(), 4);
  int64_t removed = 0;
  std::string cursor;
  do {
    Result<int64_t> page = keys_.SweepPage(&cursor, 1, /*now=*/11'000, /*abandoned=*/5'000);
    ASSERT_TRUE(page.ok()) << page.status();
    removed += *page;
  } while (!cursor.empty());
  EXPECT_EQ(removed, 2);  // "old" and "dead"
  EXPECT_EQ(Records(), 2);
  EXPECT_TRUE(Claim("new", "f", 11'000)->replay);
}

}  // namespace
}  // namespace loam::service
