// RunIdScanner over a memory store: both orders list every id once, within
// the time range, across empty years and dense windows, and a cursor resumes
// exactly after the last id it names.
#include "service/run_listing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "common/ulid.h"
#include "io/memory_object_store.h"

namespace loam::service {
namespace {

const std::string kPrefix = "ws/_control/runs/";
constexpr int64_t kNow = 1'800'000'000'000;  // ms, 2027

class RunIdScannerTest : public ::testing::Test {
 protected:
  // A run id created at `ms` (the n-th at that millisecond).
  std::string Add(int64_t ms, uint8_t n = 0) {
    std::array<uint8_t, 10> random{};
    random[9] = n;
    const std::string id = Ulid::FromParts(static_cast<uint64_t>(ms), random).ToString();
    EXPECT_TRUE(store_.Put(kPrefix + id + ".json", "{}").ok());
    added_.insert(id);
    return id;
  }
  std::vector<std::string> Scan(const RunIdRange& range, bool newest_first, size_t max = 1 << 20) {
    RunIdScanner scan(&store_, kPrefix, range, newest_first, kNow);
    std::vector<std::string> out;
    while (out.size() < max) {
      Result<std::optional<std::string>> id = scan.Next();
      EXPECT_TRUE(id.ok()) << id.status().ToString();
      if (!id.ok() || !*id) break;
      out.push_back(**id);
    }
    return out;
  }
  std::vector<std::string> Reversed(std::vector<std::string> v) {
    std::reverse(v.begin(), v.end());
    return v;
  }

  MemoryObjectStore store_;
  // Every id added, ascending.
  std::vector<std::string> Ids() const { return {added_.begin(), added_.end()}; }

  std::set<std::string> added_;
};

TEST_F(RunIdScannerTest, AnEmptyStoreEndsAtOnce) {
  EXPECT_TRUE(Scan({}, true).empty());
  EXPECT_TRUE(Scan({}, false).empty());
}

TEST_F(RunIdScannerTest, BothOrdersListEveryIdOnceAcrossEmptyYears) {
  const int64_t year = 365LL * 24 * 3600 * 1000;
  for (int64_t ms : {int64_t{5}, kNow - 20 * year, kNow - 3 * year, kNow - 1000, kNow - 999, kNow,
                     kNow + 3'600'000}) {  // the last from a clock ahead of ours
    Add(ms);
  }
  Add(kNow - 1000, 1);  // two in one millisecond
  EXPECT_EQ(Scan({}, false), Ids());
  EXPECT_EQ(Scan({}, true), Reversed(Ids()));
  // A store entry that is not a run record is no id.
  ASSERT_TRUE(store_.Put(kPrefix + "notes.txt", "x").ok());
  EXPECT_EQ(Scan({}, true), Reversed(Ids()));
}

TEST_F(RunIdScannerTest, ACursorResumesAfterTheLastId) {
  for (int i = 0; i < 50; ++i) Add(kNow - 7'000 * i);
  const std::vector<std::string> newest = Reversed(Ids());
  RunIdRange from{.before = newest[9]};
  EXPECT_EQ(Scan(from, true), std::vector<std::string>(newest.begin() + 10, newest.end()));
  const std::vector<std::string> ids = Ids();
  RunIdRange after{.after = ids[9]};
  EXPECT_EQ(Scan(after, false), std::vector<std::string>(ids.begin() + 10, ids.end()));
}

TEST_F(RunIdScannerTest, SinceIsInclusiveAndUntilExclusive) {
  for (int i = 0; i < 30; ++i) Add(kNow - 60'000 * i);  // one a minute
  const int64_t since = kNow - 60'000 * 10;             // the 11th newest, included
  const int64_t until = kNow - 60'000 * 2;              // the 3rd newest, excluded
  std::vector<std::string> want;
  for (const std::string& id : Ids()) {
    const auto ms = static_cast<int64_t>(Ulid::Parse(id)->millis());
    if (ms >= since && ms < until) want.push_back(id);
  }
  ASSERT_EQ(want.size(), 8u);
  RunIdRange range{.since_ms = since, .until_ms = until};
  EXPECT_EQ(Scan(range, false), want);
  EXPECT_EQ(Scan(range, true), Reversed(want));
  EXPECT_TRUE(Scan({.since_ms = kNow + 1, .until_ms = kNow + 1}, true).empty());
  EXPECT_TRUE(Scan({.until_ms = 0}, true).empty());
}

TEST_F(RunIdScannerTest, ADenseWindowIsNarrowedNotTruncated) {
  // More ids in the first minute than a window reads at once.
  for (int i = 0; i < 21'000; ++i) Add(kNow - i / 50, static_cast<uint8_t>(i % 50));
  Add(kNow - 90'000);
  const std::vector<std::string> newest = Scan({}, true, 30);
  const std::vector<std::string> ids = Ids();
  EXPECT_EQ(newest, std::vector<std::string>(ids.rbegin(), ids.rbegin() + 30));
  EXPECT_EQ(Scan({}, true), Reversed(Ids()));
}

}  // namespace
}  // namespace loam::service
