// Deletion vectors of one 10,000,000-row fragment, 1 % and 50 % of its rows
// deleted, scattered (uniform) or clustered (runs of 1,000): deletion file
// format 1 (sorted uint32) against format 2 (a CRoaring bitmap in its
// portable serialization, run containers where they are smaller). Bytes
// stored, encode time, decode time to the sorted rows a reader uses, and the
// bitmap's own deserialization alone. Run by scripts/bench (BENCH=dataset).
#include <benchmark/benchmark.h>
#include <roaring/roaring.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "dataset/deletion_file.h"

namespace loam {
namespace {

constexpr uint32_t kFragmentRows = 10'000'000;

// range(0): per mille deleted; range(1): 1 = runs of 1,000 rows.
std::vector<uint32_t> DeletedRows(int64_t per_mille, bool clustered) {
  std::mt19937_64 rng(7);
  std::vector<uint32_t> rows;
  if (clustered) {
    const uint32_t runs = static_cast<uint32_t>(kFragmentRows / 1000 * per_mille / 1000);
    std::vector<uint32_t> starts(kFragmentRows / 1000);
    for (uint32_t i = 0; i < starts.size(); ++i) starts[i] = i * 1000;
    std::shuffle(starts.begin(), starts.end(), rng);
    for (uint32_t i = 0; i < runs; ++i) {
      for (uint32_t r = 0; r < 1000; ++r) rows.push_back(starts[i] + r);
    }
  } else {
    for (uint32_t r = 0; r < kFragmentRows; ++r) {
      if (static_cast<int64_t>(rng() % 1000) < per_mille) rows.push_back(r);
    }
  }
  std::sort(rows.begin(), rows.end());
  return rows;
}

std::string RoaringBytes(const std::vector<uint32_t>& rows) {
  roaring_bitmap_t* b = roaring_bitmap_create();
  roaring_bitmap_add_many(b, rows.size(), rows.data());
  roaring_bitmap_run_optimize(b);
  std::string out(roaring_bitmap_portable_size_in_bytes(b), '\0');
  roaring_bitmap_portable_serialize(b, out.data());
  roaring_bitmap_free(b);
  return out;
}

void SetCounters(benchmark::State& state, const std::vector<uint32_t>& rows, size_t bytes) {
  state.counters["deleted"] = static_cast<double>(rows.size());
  state.counters["KiB"] = static_cast<double>(bytes) / 1024;
}

// `version` 1: sorted uint32 rows; 2: a roaring bitmap (what Loam writes).
std::string EncodeAs(const DeletionVector& dv, int64_t version) {
  return version == 1 ? dv.EncodeSorted() : dv.Encode();
}

// range(2): the deletion file format.
void BM_DeletionFileEncode(benchmark::State& state) {
  const DeletionVector dv(DeletedRows(state.range(0), state.range(1) == 1));
  size_t bytes = 0;
  for (auto _ : state) bytes = EncodeAs(dv, state.range(2)).size();
  SetCounters(state, dv.rows(), bytes);
}

// To the sorted rows readers use, every check included.
void BM_DeletionFileDecode(benchmark::State& state) {
  const DeletionVector dv(DeletedRows(state.range(0), state.range(1) == 1));
  const std::string bytes = EncodeAs(dv, state.range(2));
  for (auto _ : state) {
    Result<DeletionVector> back = DeletionVector::Decode(bytes, "bench", kFragmentRows);
    if (!back.ok() || back->size() != dv.size()) state.SkipWithError("decode failed");
  }
  SetCounters(state, dv.rows(), bytes.size());
}

// The bitmap alone (the lever: a reader testing rows with
// roaring_bitmap_contains instead of a sorted vector).
void BM_RoaringDecodeToBitmap(benchmark::State& state) {
  const std::vector<uint32_t> rows = DeletedRows(state.range(0), state.range(1) == 1);
  const std::string bytes = RoaringBytes(rows);
  for (auto _ : state) {
    roaring_bitmap_t* b = roaring_bitmap_portable_deserialize_safe(bytes.data(), bytes.size());
    if (b == nullptr || roaring_bitmap_get_cardinality(b) != rows.size()) {
      state.SkipWithError("decode failed");
    }
    roaring_bitmap_free(b);
  }
  SetCounters(state, rows, bytes.size());
}

void Shapes(benchmark::internal::Benchmark* b) {
  for (int64_t per_mille : {10, 500}) {
    for (int64_t clustered : {0, 1})
      b->Args({per_mille, clustered, 1})->Args({per_mille, clustered, 2});
  }
}

BENCHMARK(BM_DeletionFileEncode)->Apply(Shapes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DeletionFileDecode)->Apply(Shapes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_RoaringDecodeToBitmap)->Apply(Shapes)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace loam
