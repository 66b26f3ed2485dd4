#include "cli/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "common/logging.h"

namespace loam::cli {
namespace {

constexpr size_t kBlock = 16 << 20;  // below the mmap threshold: heap memory

}  // namespace

void TuneHeap() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 1);
}

HeapPrefault::HeapPrefault(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Reserved first: a vector growing between the blocks would leave small
  // live chunks between them, so after the frees they could not merge into
  // one free run and a large allocation would miss them (mmap, fresh pages).
  std::vector<void*> blocks;
  blocks.reserve(bytes / kBlock + 1);
  ranges_.reserve(bytes / kBlock + 1);
  for (size_t done = 0; done < bytes; done += kBlock) {
    void* p = std::malloc(kBlock);
    if (p == nullptr) break;
    blocks.push_back(p);
    const uintptr_t lo = (reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1);
    const uintptr_t hi = (reinterpret_cast<uintptr_t>(p) + kBlock) & ~(page - 1);
    // Huge pages where the kernel has them: one fault per 2 MiB.
    static_cast<void>(madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE));
    ranges_.emplace_back(lo, hi - lo);
  }
  for (void* p : blocks) std::free(p);  // back to the heap
  // Made resident while the caller goes on. The memory is free heap that the
  // caller may already be using: populating a page that is present changes
  // nothing, and one it reaches first is simply faulted in by it.
  thread_ = std::thread([ranges = ranges_] {
    const auto start = std::chrono::steady_clock::now();
    size_t done = 0;
    for (const auto& [lo, size] : ranges) {
      if (madvise(reinterpret_cast<void*>(lo), size, MADV_POPULATE_WRITE) != 0) break;
      done += size;
    }
    LOAM_LOG_DEBUG("heap prefault: {} MiB resident in {} ms", done >> 20,
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
  });
}

void HeapPrefault::Wait() {
  if (thread_.joinable()) thread_.join();
}

size_t LoadWorkingSet(bool upsert, uint64_t input_bytes) {
  const uint64_t in_flight = std::min<uint64_t>(input_bytes, 48 << 20);
  // Measured: an upsert of 25 MB of CSV peaks at 79 MiB of heap, 3.2 times
  // its input (the kept batches, the key map, a few batches in flight).
  const uint64_t kept = upsert ? std::min<uint64_t>(input_bytes * 9 / 4, 96 << 20) : 0;
  return static_cast<size_t>(in_flight + kept);
}

}  // namespace loam::cli
