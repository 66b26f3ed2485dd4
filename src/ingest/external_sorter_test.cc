#include "ingest/external_sorter.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

namespace loam::ingest {
namespace {

struct Rec {
  uint64_t key = 0;
  uint64_t seq = 0;  // its place in the input: each record comes back once
};
struct ByKey {
  bool operator()(const Rec& a, const Rec& b) const { return a.key < b.key; }
};

size_t FilesUnder(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    n += e.is_regular_file() && e.path().string().find("/.loam/") == std::string::npos;
  }
  return n;
}

// Sorts n random records with a sort budget and a read budget, checking the
// order, that every record comes back once, and the meter's peak.
void SortAndCheck(ScratchSpace* scratch, size_t n, size_t budget, size_t read_budget) {
  MemoryMeter meter;
  std::mt19937_64 rng(n * 31 + budget);
  std::vector<Rec> want;
  {
    ExternalSorter<Rec, ByKey> sorter(scratch, budget, &meter);
    for (size_t i = 0; i < n; ++i) {
      want.push_back({rng() % (n / 2 + 1), i});  // some keys repeat
      ASSERT_TRUE(sorter.Add(want.back()).ok());
    }
    EXPECT_EQ(sorter.size(), n);
    EXPECT_LE(meter.peak(), std::max<size_t>(budget, 256 * sizeof(Rec)));
    Result<std::unique_ptr<SortedStream<Rec>>> out = sorter.Finish(read_budget);
    ASSERT_TRUE(out.ok()) << out.status();
    std::vector<uint64_t> seen(n, 0);
    uint64_t last = 0;
    size_t got = 0;
    for (SortedStream<Rec>& s = **out; s.Valid();) {
      ASSERT_GE(s.Get().key, last);
      last = s.Get().key;
      ASSERT_LT(s.Get().seq, n);
      seen[s.Get().seq]++;
      ASSERT_EQ(s.Get().key, want[s.Get().seq].key);
      ++got;
      ASSERT_TRUE(s.Next().ok());
    }
    EXPECT_EQ(got, n);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1u), static_cast<ptrdiff_t>(n));
    EXPECT_LE(meter.peak(), std::max({budget, read_budget, 256 * sizeof(Rec)}));
  }
  EXPECT_EQ(meter.now(), 0u);
  EXPECT_EQ(FilesUnder(scratch->dir()), 0u);  // runs are deleted as they are used up
}

TEST(ExternalSorterTest, SortsInMemoryOrThroughRunsWithinItsBudgets) {
  auto scratch = ScratchSpace::Create(::testing::TempDir()).value();
  SortAndCheck(scratch.get(), 0, 1 << 20, 1 << 20);
  SortAndCheck(scratch.get(), 1000, 1 << 20, 1 << 20);  // stays in memory
  // 50,000 records of 16 bytes in 64 KiB runs: 13 runs, merged at once.
  SortAndCheck(scratch.get(), 50'000, 64 << 10, 1 << 20);
  // Read budget for 4 blocks of 256 records: runs are first merged in groups.
  SortAndCheck(scratch.get(), 50'000, 4096, 4 * 256 * sizeof(Rec));
  const std::string dir = scratch->dir();
  scratch.reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(ExternalSorterTest, AMissingScratchParentIsUnavailable) {
  Result<std::unique_ptr<ScratchSpace>> s = ScratchSpace::Create("/nonexistent/loam-test");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnavailable) << s.status();
  EXPECT_NE(s.status().message().find("cannot create a scratch directory for spilled keys under "
                                      "/nonexistent/loam-test"),
            std::string::npos)
      << s.status();
}

}  // namespace
}  // namespace loam::ingest
