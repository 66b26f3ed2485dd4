// Commit-rate benchmarks for the manifest (issue 4); run by scripts/bench,
// never by ctest. Every commit is durable: local disk, fsync'd.
//   BM_SingleTableWrite/<depth>       one writer, one-row appends (full write protocol)
//   BM_ManifestPublish/<depth>        one writer, manifest publish only
//   BM_DisjointWriters/8              8 writers on 8 tables; history stays linear
//   BM_DurableObjectFloor             the disk's ceiling: the 2 durable small objects a
//                                     write creates (table and manifest version files,
//                                     each with its fragment inline), nothing else
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "engine/manifest_commit_util.h"
#include "engine/workspace.h"
#include "io/local_object_store.h"

namespace loam {
namespace {

Schema OneColumn() { return Schema{{{"id", DataType::Int64(), false}}}; }

// Bare workspace writes, without a principal.
WorkspaceOptions BenchOptions() {
  WorkspaceOptions o;
  o.system_actor = true;
  return o;
}

WriteRequest OneRow(const std::string& table, int64_t id) {
  WriteRequest w;
  w.table = table;
  RecordBatch b(OneColumn());
  b.AppendRow({id}).CheckOK();
  w.rows = {std::move(b)};
  return w;
}

struct Fixture {
  std::string dir;
  std::shared_ptr<ObjectStore> store;
  std::shared_ptr<WorkspaceEngine> ws;
  explicit Fixture(const std::string& name, int tables, int64_t depth) {
    dir = (std::filesystem::temp_directory_path() /
           ("loam-bench-" + name + "-" + std::to_string(::getpid())))
              .string();
    std::filesystem::remove_all(dir);
    store = LocalObjectStore::Open(dir).value();
    ws = WorkspaceEngine::Init(store, "", BenchOptions()).value();
    for (int t = 0; t < tables; ++t)
      ws->CreateTable("t" + std::to_string(t), OneColumn(), {}).value();
    // History: `depth` single-table manifest commits, published directly
    // (faster than full writes) so that deep histories are affordable.
    if (depth == 0) return;
    const int64_t sid = ws->Current().value().Find("t0")->def.sid;
    for (int64_t c = 0; c < depth; ++c) testing::PublishHeadOnly(ws->manifest(), sid).CheckOK();
  }
  // Removed at exit, not here: on ext4 without a journal (this VM's disk)
  // inode allocation skips every inode freed in the last 60-300 s, so
  // deleting one fixture's ~20,000 files would slow the next benchmark's
  // object creations by a scan that has nothing to do with Loam.
  ~Fixture() { Doomed().push_back(dir); }
  static std::vector<std::string>& Doomed() {
    static std::vector<std::string> dirs;
    return dirs;
  }
};

// The two depths; 2 s of commits each, timed by the wall clock.
void AtBothDepths(benchmark::internal::Benchmark* b) {
  b->Arg(10)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);
}

void BM_SingleTableWrite(benchmark::State& state) {
  Fixture f("write", 1, state.range(0));
  int64_t id = 0;
  for (auto _ : state) {
    auto r = f.ws->Write(OneRow("t0", id++));
    if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_SingleTableWrite)->Apply(AtBothDepths);

void BM_ManifestPublish(benchmark::State& state) {
  Fixture f("publish", 1, state.range(0));
  const int64_t sid = f.ws->Current().value().Find("t0")->def.sid;
  for (auto _ : state) {
    Status st = testing::PublishHeadOnly(f.ws->manifest(), sid);
    if (!st.ok()) state.SkipWithError(st.ToString().c_str());
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_ManifestPublish)->Apply(AtBothDepths);

void BM_DisjointWriters(benchmark::State& state) {
  const int writers = static_cast<int>(state.range(0));
  Fixture f("writers", writers, 10);
  constexpr int kCommitsEach = 40;
  int64_t total = 0;
  for (auto _ : state) {
    std::vector<std::thread> threads;
    for (int w = 0; w < writers; ++w) {
      threads.emplace_back([&, w] {
        auto ws = WorkspaceEngine::Open(f.store, "", BenchOptions()).value();
        for (int c = 0; c < kCommitsEach; ++c)
          ws->Write(OneRow("t" + std::to_string(w), c)).value();
      });
    }
    for (auto& t : threads) t.join();
    total += writers * kCommitsEach;
  }
  // The history is one chain: every commit has exactly the one before as parent.
  auto log = f.ws->Log().value();
  for (size_t i = 0; i + 1 < log.size(); ++i) {
    if (log[i].parents != std::vector<std::string>{log[i + 1].id})
      state.SkipWithError("history is not linear");
  }
  state.counters["commits_per_s"] =
      benchmark::Counter(static_cast<double>(total), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DisjointWriters)->Arg(8)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(2);

// What the disk alone allows: per iteration, the two durable put-if-absent of
// small objects in two directories that a single-row write makes, with no
// Loam logic at all (4 fsyncs: each file, then its directory entry).
void BM_DurableObjectFloor(benchmark::State& state) {
  Fixture f("floor", 0, 0);
  const std::string payload(4096, 'x');
  const char* dirs[] = {"t/_versions/", "m/_versions/"};
  int64_t n = 0;
  for (auto _ : state) {
    for (const char* d : dirs) {
      StringSource src(payload);
      auto r = f.store->Write(d + std::to_string(n), src, PutOptions{PutCondition::kIfAbsent});
      if (!r.ok()) state.SkipWithError(r.status().ToString().c_str());
    }
    ++n;
  }
  state.counters["writes_per_s"] =
      benchmark::Counter(state.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_DurableObjectFloor)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2);

}  // namespace
}  // namespace loam

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const std::string& dir : loam::Fixture::Doomed()) std::filesystem::remove_all(dir);
  return 0;
}
