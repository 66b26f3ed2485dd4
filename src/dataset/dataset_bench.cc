// Dataset benchmarks (Google Benchmark; not part of the test suite).
// Run with scripts/bench; figures are recorded in docs/benchmarks.md.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "dataset/dataset.h"
#include "io/local_object_store.h"
#include "io/memory_object_store.h"

namespace loam {
namespace {

constexpr int64_t kRows = 1'000'000;

Schema EightColumns() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"user_id", DataType::Int64()},
                 {"ts", DataType::Timestamp()},
                 {"amount", DataType::Float64()},
                 {"score", DataType::Float64()},
                 {"qty", DataType::Int32()},
                 {"email", DataType::String()},
                 {"note", DataType::String()}}};
}

RecordBatch MakeBatch(int64_t rows) {
  RecordBatch b(EightColumns());
  std::mt19937_64 rng(42);
  for (auto& c : b.columns) c.Reserve(rows, rows * 32);
  for (int64_t i = 0; i < rows; ++i) {
    b.columns[0].AppendInt64(i);
    b.columns[1].AppendInt64(static_cast<int64_t>(rng() % 100000));
    b.columns[2].AppendInt64(1'700'000'000'000'000 + i * 1000);
    b.columns[3].AppendFloat64(static_cast<double>(rng() % 1000000) / 100.0);
    b.columns[4].AppendFloat64(static_cast<double>(rng() % 1000) / 7.0);
    b.columns[5].AppendInt32(static_cast<int32_t>(rng() % 100));
    b.columns[6].AppendBytes("user" + std::to_string(rng() % 100000) + "@example.com");
    b.columns[7].AppendBytes("order note " + std::to_string(rng()) + " xyz");
  }
  return b;
}

int64_t BatchBytes(const RecordBatch& b) {
  int64_t n = 0;
  for (const Column& c : b.columns) n += c.ByteSize();
  return n;
}

std::string FreshDir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("loam-bench-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir.string();
}

}  // namespace

const RecordBatch& SharedBatch() {
  static const RecordBatch* batch = new RecordBatch(MakeBatch(kRows));
  return *batch;
}

// The batch as the one-element vector Append takes (built once, not timed).
const std::vector<RecordBatch>& SharedBatches() {
  static const auto* batches = new std::vector<RecordBatch>{SharedBatch()};
  return *batches;
}

namespace {

// The first append in a fresh process (registered first, one iteration): it
// also pays for starting the encoding threads and first-touch memory.
void BM_AppendMillionRowsFirstInProcess(benchmark::State& state) {
  const RecordBatch& batch = SharedBatch();
  const std::string dir = FreshDir("first");
  auto store = LocalObjectStore::Open(dir).value();
  for (auto _ : state) {
    Dataset ds = Dataset::Create(store, "t", batch.schema).value();
    auto r = ds.Append(SharedBatches());
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * BatchBytes(batch));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_AppendMillionRowsFirstInProcess)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_AppendMillionRows(benchmark::State& state) {
  const RecordBatch& batch = SharedBatch();
  const std::string dir = FreshDir("append");
  auto store = LocalObjectStore::Open(dir).value();
  int run = 0;
  for (auto _ : state) {
    Dataset ds = Dataset::Create(store, "t" + std::to_string(run++), batch.schema).value();
    auto r = ds.Append(SharedBatches());
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * BatchBytes(batch));
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_AppendMillionRows)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

// The same without disk I/O: encoding, compression and commit only.
void BM_AppendMillionRowsInMemory(benchmark::State& state) {
  const RecordBatch& batch = SharedBatch();
  int run = 0;
  for (auto _ : state) {
    auto store = std::make_shared<MemoryObjectStore>();
    Dataset ds = Dataset::Create(store, "t" + std::to_string(run++), batch.schema).value();
    auto r = ds.Append(SharedBatches());
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * BatchBytes(batch));
}
BENCHMARK(BM_AppendMillionRowsInMemory)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);

struct ReadFixture {
  std::string dir;
  std::shared_ptr<ObjectStore> store;
  std::optional<Dataset> ds;
  ReadFixture() {
    dir = FreshDir("read");
    store = LocalObjectStore::Open(dir).value();
    Dataset d = Dataset::Create(store, "t", SharedBatch().schema).value();
    d = d.Append(SharedBatches()).value().CreateIndex("by_id", "id").value();
    DatasetOptions options;
    options.cache = std::make_shared<LruCache>(256 << 20);  // a warm dataset
    ds = Dataset::Open(store, "t", {}, options).value();
  }
  ~ReadFixture() { std::filesystem::remove_all(dir); }
};

ReadFixture& Reader() {
  static ReadFixture* f = new ReadFixture();
  return *f;
}

void BM_FullScan(benchmark::State& state) {
  ReadFixture& f = Reader();
  for (auto _ : state) {
    auto r = f.ds->Scan({});
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * kRows);
  state.SetBytesProcessed(state.iterations() * BatchBytes(SharedBatch()));
}
BENCHMARK(BM_FullScan)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_IndexedPointLookup(benchmark::State& state) {
  ReadFixture& f = Reader();
  std::mt19937_64 rng(7);
  for (auto _ : state) {
    ScanSpec spec;
    spec.where = {Predicate::Eq("id", static_cast<int64_t>(rng() % kRows))};
    auto r = f.ds->ReadAll(spec);
    if (!r.ok() || r->num_rows() != 1) state.SkipWithError("lookup failed");
  }
}
BENCHMARK(BM_IndexedPointLookup)->Unit(benchmark::kMicrosecond)->UseRealTime();

}  // namespace
}  // namespace loam

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  loam::SharedBatches();  // build the input before any benchmark runs
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
