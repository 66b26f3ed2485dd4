#include "cli/heap.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <system_error>
#include <vector>

#include "common/logging.h"

namespace loam::cli {
namespace {

constexpr size_t kBlock = 16 << 20;   // below the mmap threshold: heap memory
std::atomic<bool> heap_tuned{false};  // TuneHeap ran: freed blocks stay mapped

}  // namespace

void TuneHeap() {
  heap_tuned.store(true);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_ARENA_MAX, 1);
}

HeapPrefault::HeapPrefault(size_t bytes) {
  // Reserved first: a vector growing between the blocks would leave small
  // live chunks between them, so after the frees they could not merge into
  // one free run and a large allocation would miss them (mmap, fresh pages).
  std::vector<void*> blocks;
  blocks.reserve(bytes / kBlock + 1);
  uintptr_t lo = UINTPTR_MAX, hi = 0;  // the span of the blocks
  for (size_t done = 0; done < bytes; done += kBlock) {
    void* p = std::malloc(kBlock);
    if (p == nullptr) break;
    blocks.push_back(p);
    lo = std::min(lo, reinterpret_cast<uintptr_t>(p));
    hi = std::max(hi, reinterpret_cast<uintptr_t>(p) + kBlock);
  }
  for (void* p : blocks) std::free(p);  // back to the heap
  // Without TuneHeap's mmap threshold free() unmapped the blocks: hands off.
  if (blocks.empty() || !heap_tuned.load()) return;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  lo = (lo + page - 1) & ~(page - 1);
  hi &= ~(page - 1);
  // Huge pages where the kernel has them: one fault per 2 MiB. One range,
  // so no page between two blocks splits the mapping.
  static_cast<void>(madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE));
  // Made resident while the caller goes on. The span is heap the caller may
  // already be using: populating a page that is present changes nothing,
  // and one the caller reaches first is simply faulted in by it.
  try {
    thread_ = std::thread([this, lo, hi] { Populate(lo, hi); });
  } catch (const std::system_error&) {
    // No thread: the pages fault in as they are first used.
  }
}

HeapPrefault::~HeapPrefault() {
  stop_.store(true, std::memory_order_relaxed);
  Wait();
}

void HeapPrefault::Wait() {
  if (thread_.joinable()) thread_.join();
}

void HeapPrefault::Populate(uintptr_t lo, uintptr_t hi) {
  constexpr uintptr_t kStep = 2 << 20;  // between checks of stop_
  const auto start = std::chrono::steady_clock::now();
  uintptr_t at = lo;
  for (; at < hi && !stop_.load(std::memory_order_relaxed); at += kStep) {
    const size_t n = static_cast<size_t>(std::min(kStep, hi - at));
    if (madvise(reinterpret_cast<void*>(at), n, MADV_POPULATE_WRITE) != 0) break;
  }
  LOAM_LOG_DEBUG("heap prefault: {} MiB resident in {} ms", (std::min(at, hi) - lo) >> 20,
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count());
}

size_t LoadWorkingSet(bool upsert, uint64_t input_bytes) {
  const uint64_t in_flight = std::min<uint64_t>(input_bytes, 48 << 20);
  // Measured: an upsert of 25 MB of CSV peaks at 79 MiB of heap, 3.2 times
  // its input (the kept batches, the key map, a few batches in flight).
  const uint64_t kept = upsert ? std::min<uint64_t>(input_bytes * 9 / 4, 96 << 20) : 0;
  return static_cast<size_t>(in_flight + kept);
}

}  // namespace loam::cli
