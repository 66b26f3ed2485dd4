// Parse throughput of the ingestion front end; run by scripts/bench
// (BENCH=ingest), never by ctest. Input: the 8-column CSV shape
// (int64 id, two strings, float64, int32, bool, timestamp, a ~40-char
// string), 1,000,000 rows held in memory so only parsing is measured.
#include <benchmark/benchmark.h>

#include "ingest/csv_batches.h"

namespace loam::ingest {
namespace {

const std::string& Input() {
  static const std::string text = [] {
    std::string t = "id,name,city,score,count,active,at,note\n";
    for (int i = 0; i < 1'000'000; ++i) {
      t += std::to_string(i) + ",name" + std::to_string(i % 97) + ",\"Paris, FR\"," +
           std::to_string(i % 1000) + ".25," + std::to_string(i % 50000) + "," +
           (i % 2 ? "true" : "false") + ",2026-11-30T04:10:" + std::to_string(10 + i % 50) +
           "Z,some forty character string of padding ok\n";
    }
    return t;
  }();
  return text;
}

void BM_CsvReader(benchmark::State& state) {
  const std::string& text = Input();
  for (auto _ : state) {
    StringSource src(text);
    CsvReader reader(src, {});
    (void)reader.ReadHeader().value();
    CsvRecord rec;
    int64_t rows = 0;
    while (reader.Next(&rec).value()) ++rows;
    benchmark::DoNotOptimize(rows);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_CsvReader)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_CsvToTypedBatches(benchmark::State& state) {
  const std::string& text = Input();
  const Schema schema{{{"id", DataType::Int64(), false},
                       {"name", DataType::String()},
                       {"city", DataType::String()},
                       {"score", DataType::Float64()},
                       {"count", DataType::Int32()},
                       {"active", DataType::Bool()},
                       {"at", DataType::Timestamp()},
                       {"note", DataType::String()}}};
  for (auto _ : state) {
    StringSource src(text);
    CsvBatches in = CsvBatches::Open(src, schema, "bench.csv").value();
    while (in.Next(65536).value().has_value()) {
    }
    benchmark::DoNotOptimize(in.rows_read());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_CsvToTypedBatches)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace loam::ingest

BENCHMARK_MAIN();
