// Heap tuning for the loam process (glibc malloc). Loads allocate batch
// buffers at a high rate, and on a virtual machine the first touch of a page
// traps to the hypervisor: about 5-10 us per 4 KiB page on the machine
// measured in docs/benchmarks.md, even after MADV_POPULATE_WRITE. Without
// help, faults cost an upsert of 25 MB about half of its time. These keep
// freed buffers for reuse and make a load's working set resident as huge
// pages (one fault per 2 MiB), populated off the load's critical path.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <thread>

namespace loam::cli {

// Process-wide malloc settings for `loam load` only (every other command,
// `loam serve` included, keeps glibc's defaults): buffers up to 32 MiB (the
// largest threshold glibc accepts) come from the heap, freed memory stays
// there up to 256 MiB, and one arena serves every thread, so all of them
// reuse what HeapPrefault made resident.
void TuneHeap();

// Makes about `bytes` of heap resident, as huge pages where the kernel has
// them, and leaves it free for reuse. The pages are populated on a
// background thread so the caller goes on at once (on a VM a cold 2 MiB page
// can take milliseconds). Wait() joins it; the destructor stops it early.
// Best effort: without MADV_POPULATE_WRITE (Linux < 5.14), a thread, or
// TuneHeap's settings, pages fault in on first use.
class HeapPrefault {
 public:
  explicit HeapPrefault(size_t bytes);
  ~HeapPrefault();
  HeapPrefault(const HeapPrefault&) = delete;
  HeapPrefault& operator=(const HeapPrefault&) = delete;

  void Wait();

 private:
  void Populate(uintptr_t lo, uintptr_t hi);

  std::atomic<bool> stop_{false};
  std::thread thread_;  // running Populate
};

// The heap a load of `input_bytes` works in: a few batches in flight, and
// for upserts the kept input (up to its 64 MiB budget) and the key maps.
size_t LoadWorkingSet(bool upsert, uint64_t input_bytes);

}  // namespace loam::cli
