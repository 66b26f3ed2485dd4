#include "cli/heap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace loam::cli {
namespace {

// Resident set size of this process, from /proc/self/statm (0 if unknown).
size_t ResidentBytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<size_t>(sysconf(_SC_PAGESIZE)) : 0;
}

TEST(Heap, PrefaultMakesMemoryResidentAndKeepsItForReuse) {
  TuneHeap();
  const size_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  HeapPrefault prefault(64 << 20);
  prefault.Wait();
  const size_t after = ResidentBytes();
  EXPECT_GE(after, before + (60 << 20)) << before << " -> " << after;
  // The prefaulted memory is free heap: allocating and touching 48 MiB now
  // barely grows the resident set.
  char* p = static_cast<char*>(std::malloc(48 << 20));
  ASSERT_NE(p, nullptr);
  std::memset(p, 1, 48 << 20);
  EXPECT_LT(ResidentBytes(), after + (8 << 20));
  std::free(p);
}

TEST(Heap, WorkingSetFollowsTheInputUpToItsCaps) {
  EXPECT_EQ(LoadWorkingSet(false, 1000), 1000u);
  EXPECT_EQ(LoadWorkingSet(false, uint64_t{1} << 40), size_t{48} << 20);
  EXPECT_EQ(LoadWorkingSet(true, 1000), 3250u);
  EXPECT_EQ(LoadWorkingSet(true, uint64_t{1} << 40), size_t{144} << 20);
}

}  // namespace
}  // namespace loam::cli
