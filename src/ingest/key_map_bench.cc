// The upsert's key matching with two hash maps side by side: Loam's
// FlatHashMap (with the stager's prefetching, 32 keys ahead) against
// boost::unordered_flat_map (SIMD groups of 15, no prefetch API). The work is
// the stager's: insert the run's keys (a Seen-sized value each), then probe
// every key of the table, a fraction of which the run holds. Keys are
// 128-bit hashes; both maps use their low 64 bits as the hash, which
// boost is told is already mixed. Run by scripts/bench (BENCH=ingest).
#include <benchmark/benchmark.h>

#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <string>
#include <vector>

#include "common/flat_hash_map.h"
#include "common/hash.h"

namespace loam::ingest {
namespace {

struct Value {  // the stager's Seen: where a run key was first met
  uint32_t file = 0;
  bool staged = false;
  int64_t line = 0;
  uint32_t batch = 0, row = 0, existing = 0;
};

struct MixedHash {
  using is_avalanching = void;  // the low half of an xxh3-128 digest
  size_t operator()(const Hash128Value& h) const { return static_cast<size_t>(h.lo); }
};

std::vector<Hash128Value> Keys(int64_t first, int64_t n) {
  std::vector<Hash128Value> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int64_t i = first; i < first + n; ++i) keys.push_back(Hash128(std::to_string(i)));
  return keys;
}

// Run keys 0..run; table keys start so that `hit_percent` of them are run keys.
struct Workload {
  std::vector<Hash128Value> run, table;
  Workload(int64_t run_keys, int64_t table_keys, int64_t hit_percent)
      : run(Keys(0, run_keys)),
        table(Keys(run_keys - table_keys * hit_percent / 100, table_keys)) {}
};

void BM_KeyMatchFlatHashMap(benchmark::State& state) {
  const Workload w(state.range(0), state.range(1), state.range(2));
  int64_t found = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    FlatHashMap<Value> map(w.run.size());
    for (size_t i = 0; i < w.run.size(); ++i) {
      if (i + 32 < w.run.size()) map.Prefetch(w.run[i + 32], /*for_insert=*/true);
      map.FindOrInsert(w.run[i]).row = static_cast<uint32_t>(i);
    }
    found = 0;
    for (size_t i = 0; i < w.table.size(); ++i) {
      if (i + 32 < w.table.size()) map.Prefetch(w.table[i + 32]);
      found += map.Find(w.table[i]) != nullptr;
    }
    bytes = FlatHashMap<Value>::MemoryBytesFor(w.run.size());
    benchmark::DoNotOptimize(found);
  }
  state.counters["found"] = static_cast<double>(found);
  state.counters["map_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

void BM_KeyMatchBoostFlatMap(benchmark::State& state) {
  const Workload w(state.range(0), state.range(1), state.range(2));
  int64_t found = 0;
  size_t bytes = 0;
  for (auto _ : state) {
    boost::unordered_flat_map<Hash128Value, Value, MixedHash> map;
    map.reserve(w.run.size());
    for (size_t i = 0; i < w.run.size(); ++i) map[w.run[i]].row = static_cast<uint32_t>(i);
    found = 0;
    for (const Hash128Value& k : w.table) found += map.find(k) != map.end();
    // Slots plus one metadata byte per slot (16-byte groups of 15 slots).
    bytes = map.bucket_count() * (sizeof(std::pair<Hash128Value, Value>) + 1);
    benchmark::DoNotOptimize(found);
  }
  state.counters["found"] = static_cast<double>(found);
  state.counters["map_MiB"] = static_cast<double>(bytes) / (1 << 20);
}

// {run keys, table keys, % of table keys the run holds}.
void Shapes(benchmark::internal::Benchmark* b) {
  b->Args({100'000, 1'000'000, 10});
  b->Args({1'000'000, 4'000'000, 25});
  b->Args({1'000'000, 1'000'000, 100});
  b->Args({4'000'000, 4'000'000, 5});
}

BENCHMARK(BM_KeyMatchFlatHashMap)->Apply(Shapes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_KeyMatchBoostFlatMap)->Apply(Shapes)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace loam::ingest
