// Cost gates for the manifest (issue 4): with a counting store installed
// before the workspace opens, a current-state read of 10 heads and a
// single-table commit cost the same at every history depth, compacted or not,
// cold or warm; the journal fold (the control) grows. Prints the figures.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "engine/manifest_commit_util.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "io/counting_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;

constexpr int kTables = 10;

struct Figures {
  uint64_t requests = 0, bytes = 0;
  int files = 0, head_rows = 0;
};

struct DepthFigures {
  int depth = 0;
  Figures read_cold, read_warm, read_cold_compacted, read_warm_compacted;
  uint64_t write_cold = 0, write_warm = 0, publish_cold = 0, publish_warm = 0;
  uint64_t fold_rows = 0, fold_bytes = 0;
};

WorkspaceOptions CostOptions(bool cache) {
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.cache_bytes = cache ? (16 << 20) : 0;
  return o;
}

// One current-state read through `ws`, counted.
Figures ReadHeads(const Workspace& ws, CountingObjectStore& counting) {
  counting.Reset();
  SnapshotStats stats;
  Snapshot snap = ws.Current("", &stats).value();
  EXPECT_EQ(snap.tables.size(), static_cast<size_t>(kTables));
  const IoCounters c = counting.Snapshot().total;
  return {c.total_requests(), c.bytes_read, stats.partition_files_read, stats.head_rows_decoded};
}

// A single-table manifest commit through `manifest`, counted.
uint64_t PublishOne(Manifest& manifest, CountingObjectStore& counting, int64_t sid) {
  counting.Reset();
  EXPECT_TRUE(testing::PublishHeadOnly(manifest, sid).ok());
  return counting.Snapshot().total.total_requests();
}

DepthFigures Measure(int depth) {
  DepthFigures f;
  f.depth = depth;
  auto counting = std::make_shared<CountingObjectStore>(testing::NewTestStore());
  {
    auto ws = Workspace::Init(counting, "", CostOptions(false)).value();
    for (int t = 0; t < kTables; ++t) {
      EXPECT_TRUE(ws->CreateTable("t" + std::to_string(t), EventSchema(), {}).ok());
    }
    for (int c = 0; c < depth; ++c) {
      EXPECT_TRUE(ws->Write(Append("t" + std::to_string(c % kTables), {c})).ok());
    }
  }
  auto measure_reads = [&](Figures* cold, Figures* warm) {
    auto ws = Workspace::Open(counting, "", CostOptions(true)).value();
    *cold = ReadHeads(*ws, *counting);
    *warm = ReadHeads(*ws, *counting);
  };
  measure_reads(&f.read_cold, &f.read_warm);
  {
    auto ws = Workspace::Open(counting, "", CostOptions(true)).value();
    // Merge what the automatic merge would, so no merge falls on the
    // measured commits whatever the depth.
    EXPECT_TRUE(ws->manifest().Maintain("").ok());
    counting->Reset();
    EXPECT_TRUE(ws->Write(Append("t0", {1'000'000})).ok());
    f.write_cold = counting->Snapshot().total.total_requests();
    counting->Reset();
    EXPECT_TRUE(ws->Write(Append("t1", {1'000'001})).ok());
    f.write_warm = counting->Snapshot().total.total_requests();
    const int64_t sid = ws->Current().value().Find("t2")->def.sid;
    auto cold = Manifest::Open(counting, "", CostOptions(true).manifest).value();
    f.publish_cold = PublishOne(*cold, *counting, sid);
    f.publish_warm = PublishOne(*cold, *counting, sid);
    counting->Reset();
    f.fold_rows = ws->manifest().Journal("").value().size();
    f.fold_bytes = counting->Snapshot().total.bytes_read;
    EXPECT_TRUE(ws->manifest().Compact("").ok());
  }
  measure_reads(&f.read_cold_compacted, &f.read_warm_compacted);
  return f;
}

void ExpectSame(const Figures& a, const Figures& b, const std::string& what) {
  EXPECT_EQ(a.requests, b.requests) << what;
  EXPECT_EQ(a.files, b.files) << what;
  EXPECT_EQ(a.head_rows, b.head_rows) << what;
  EXPECT_LE(std::fabs(double(a.bytes) - double(b.bytes)), 0.01 * double(std::max(a.bytes, b.bytes)))
      << what << ": " << a.bytes << " vs " << b.bytes << " bytes";
}

TEST(ManifestCostTest, CurrentStateAndCommitsCostTheSameAtEveryDepth) {
  // LOAM_COST_DEPTHS=10,100,1000,10000 measures deeper histories (benchmarks.md).
  std::vector<int> depths = {10, 100, 1000};
  if (const char* env = std::getenv("LOAM_COST_DEPTHS")) {
    depths.clear();
    for (std::string_view rest = env; !rest.empty();) {
      const size_t comma = rest.find(',');
      depths.push_back(std::atoi(std::string(rest.substr(0, comma)).c_str()));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  std::vector<DepthFigures> all;
  for (int depth : depths) all.push_back(Measure(depth));
  std::printf("[ figures ] manifest cost, %d tables, requests / bytes / partition files / head rows\n",
              kTables);
  std::printf("[ figures ] depth | read cold | read warm | compacted cold | compacted warm | write cold/warm | publish cold/warm | fold rows/bytes\n");
  for (const DepthFigures& f : all) {
    auto fmt = [](const Figures& x) {
      return std::to_string(x.requests) + "/" + std::to_string(x.bytes) + "/" +
             std::to_string(x.files) + "/" + std::to_string(x.head_rows);
    };
    std::printf("[ figures ] %5d | %s | %s | %s | %s | %llu/%llu | %llu/%llu | %llu/%llu\n", f.depth,
                fmt(f.read_cold).c_str(), fmt(f.read_warm).c_str(),
                fmt(f.read_cold_compacted).c_str(), fmt(f.read_warm_compacted).c_str(),
                (unsigned long long)f.write_cold, (unsigned long long)f.write_warm,
                (unsigned long long)f.publish_cold, (unsigned long long)f.publish_warm,
                (unsigned long long)f.fold_rows, (unsigned long long)f.fold_bytes);
  }
  for (const DepthFigures& f : all) {
    EXPECT_EQ(f.read_cold.head_rows, kTables) << "depth " << f.depth;
    EXPECT_EQ(f.read_cold_compacted.head_rows, kTables) << "depth " << f.depth;
    EXPECT_LE(f.publish_cold, 6u) << "depth " << f.depth;
    EXPECT_LE(f.publish_warm, 2u) << "depth " << f.depth;
  }
  for (size_t i = 1; i < all.size(); ++i) {
    const std::string at = "depth " + std::to_string(all[i].depth) + " vs " +
                           std::to_string(all[0].depth);
    ExpectSame(all[i].read_cold, all[0].read_cold, "cold read, " + at);
    ExpectSame(all[i].read_warm, all[0].read_warm, "warm read, " + at);
    ExpectSame(all[i].read_cold_compacted, all[0].read_cold_compacted, "compacted cold read, " + at);
    ExpectSame(all[i].read_warm_compacted, all[0].read_warm_compacted, "compacted warm read, " + at);
    EXPECT_EQ(all[i].write_cold, all[0].write_cold) << at;
    EXPECT_EQ(all[i].write_warm, all[0].write_warm) << at;
    EXPECT_EQ(all[i].publish_cold, all[0].publish_cold) << at;
    EXPECT_EQ(all[i].publish_warm, all[0].publish_warm) << at;
  }
  // The control: folding the journal costs more as history grows, so the
  // gates above can tell a flat read from a fold.
  EXPECT_GT(all.back().fold_rows, 10 * all.front().fold_rows);
  EXPECT_GT(all.back().fold_bytes, 2 * all.front().fold_bytes);
}

}  // namespace
}  // namespace loam
