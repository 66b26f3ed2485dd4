// Cost gates for the manifest and the write path (label `cost`). With a
// counting store installed before the workspace opens, these cost the same
// at every history depth (10, 100, 1,000 commits; LOAM_COST_DEPTHS for more):
// a current-state read of 10 heads (cold, warm, compacted), a branch's
// current read, and a load through the loader with a run id (its median
// requests and bytes, no LIST of the table's versions, and an amortised
// cost that includes the publisher's merges and journal-index folds), and a
// fresh process's single-row load (no journal-index read at all). Reads
// also cost the same after 0 and 1,000 create/drop cycles
// (LOAM_COST_CYCLES), and so do a drop (amortised) and a read after the
// manifest is compacted. The journal fold (the control) grows. Runs on memory,
// local disk ("/local") and RGW ("/s3"). Prints the figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string_view>

#include "engine/manifest_commit_util.h"
#include "engine/workspace.h"
#include "engine/workspace_test_util.h"
#include "ingest/loader.h"
#include "io/counting_object_store.h"
#include "io/test_store.h"

namespace loam {
namespace {

using testing::Append;
using testing::EventSchema;

constexpr int kTables = 10;
constexpr int kLoads = 48;  // loads measured per depth: three journal-index folds
// Documented bound (docs/format/manifest.md, "Merging"): the merges and the
// journal-index folds add at most this many requests per load, amortised.
constexpr double kAmortisedExtraRequests = 3.0;
// Fragments a journal look-up scans at most: the index's tail bound plus
// those a merge adds between folds.
constexpr int kMaxLookupScan = 16 + 4;

struct Figures {
  uint64_t requests = 0, bytes = 0, lists = 0;
  int files = 0, head_rows = 0;
};

struct LoadFigures {
  uint64_t median_requests = 0, median_bytes = 0, max_requests = 0, table_lists = 0;
  double mean_requests = 0, mean_bytes = 0;
};

struct DepthFigures {
  int depth = 0;
  Figures read_cold, read_warm, read_cold_compacted, read_warm_compacted, branch_cold;
  LoadFigures load;
  Figures load_cold;  // one load by a fresh process (files: journal-index reads)
  uint64_t publish_cold = 0, publish_warm = 0;
  int lookup_scanned = 0, lookup_scanned_after = 0, lookup_scanned_compacted = -1;
  uint64_t fold_rows = 0, fold_bytes = 0;
};

std::vector<int> FromEnv(const char* name, std::vector<int> fallback) {
  const char* env = std::getenv(name);
  if (env == nullptr || *env == '\0') return fallback;
  std::vector<int> out;
  for (std::string_view rest = env; !rest.empty();) {
    const size_t comma = rest.find(',');
    out.push_back(std::atoi(std::string(rest.substr(0, comma)).c_str()));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out;
}

WorkspaceOptions CostOptions(bool cache) {
  WorkspaceOptions o = testing::TestOptions();
  o.manifest.cache_bytes = cache ? (16 << 20) : 0;
  return o;
}

// One current-state read of `branch` through `ws`, counted.
Figures ReadHeads(const WorkspaceEngine& ws, CountingObjectStore& counting,
                  const std::string& branch = "") {
  counting.Reset();
  SnapshotStats stats;
  Snapshot snap = ws.Current(branch, &stats).value();
  EXPECT_EQ(snap.tables.size(), static_cast<size_t>(kTables));
  const IoCounters c = counting.Snapshot().total;
  return {c.total_requests(), c.bytes_read, c.count(ObjectOp::kList), stats.partition_files_read,
          stats.head_rows_decoded};
}

uint64_t PublishOne(Manifest& manifest, CountingObjectStore& counting, int64_t sid) {
  counting.Reset();
  EXPECT_TRUE(testing::PublishHeadOnly(manifest, sid).ok());
  return counting.Snapshot().total.total_requests();
}

uint64_t Median(std::vector<uint64_t> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `loads` appends of one row through the loader, each with its run id,
// counted one by one. Nothing is merged beforehand: the publisher's merges
// and index folds fall where they fall, as in production.
LoadFigures MeasureLoads(std::shared_ptr<WorkspaceEngine> ws, CountingObjectStore& counting,
                         int loads, int64_t first_id) {
  std::map<std::string, std::string> files;
  ingest::LoaderOptions lo;
  lo.open_input = [&](const std::string& f) -> Result<std::unique_ptr<ByteSource>> {
    return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(files.at(f)));
  };
  ingest::Loader loader(ws, lo);
  std::vector<uint64_t> requests, bytes;
  LoadFigures out;
  // The first loads of a process warm its caches (the journal's tail, the
  // index pages); then `loads` are measured.
  constexpr int kWarmUp = 20;
  for (int i = -kWarmUp; i < loads; ++i) {
    const std::string name = "l" + std::to_string(i + kWarmUp) + ".csv";
    files[name] = "id,v\n" + std::to_string(first_id + i + kWarmUp) + ",x\n";
    ingest::RunRequest req;
    req.table = "t" + std::to_string((i + kWarmUp) % kTables);
    req.files = {name};
    counting.Reset();
    Result<ingest::RunRecord> rec = loader.Run(req);
    const IoSnapshot snap = counting.Snapshot();
    EXPECT_TRUE(rec.ok() && rec->state == ingest::RunState::kSucceeded)
        << rec.status() << (rec.ok() ? rec->error : "");
    if (i < 0) continue;
    requests.push_back(snap.total.total_requests());
    if (std::getenv("LOAM_COST_VERBOSE")) {
      for (const auto& [prefix, c] : snap.by_prefix) {
        std::printf("[ verbose ] load %d %s %s\n", i, prefix.c_str(), c.ToString().c_str());
      }
    }
    bytes.push_back(snap.total.bytes_read + snap.total.bytes_written);
    auto tables = snap.by_prefix.find("tables");
    if (tables != snap.by_prefix.end()) out.table_lists += tables->second.count(ObjectOp::kList);
  }
  out.median_requests = Median(requests);
  out.median_bytes = Median(bytes);
  out.max_requests = *std::max_element(requests.begin(), requests.end());
  out.mean_requests = std::accumulate(requests.begin(), requests.end(), 0.0) / loads;
  out.mean_bytes = std::accumulate(bytes.begin(), bytes.end(), 0.0) / loads;
  return out;
}

// One single-row load by a fresh process (`loam load`), counted, its open
// included; `files` are its reads of journal-index files. Its publish merges
// and folds nothing here (those are amortised over the loads above), so what
// reads the index is the run's look-ups: its commit cannot be older than the
// run, and they read no level built before it, however deep the history.
Figures MeasureColdLoad(std::shared_ptr<ObjectStore> store, int64_t id) {
  auto counting = std::make_shared<CountingObjectStore>(store, /*prefix_depth=*/2);
  WorkspaceOptions o = CostOptions(true);
  o.manifest.merge_fanout = 0;
  o.manifest.index_tail_fragments = 0;
  auto ws = WorkspaceEngine::Open(counting, "", o).value();
  const std::string csv = "id,v\n" + std::to_string(id) + ",x\n";
  ingest::LoaderOptions lo;
  lo.open_input = [&](const std::string&) -> Result<std::unique_ptr<ByteSource>> {
    return std::unique_ptr<ByteSource>(std::make_unique<StringSource>(csv));
  };
  ingest::RunRequest req;
  req.table = "t3";
  req.files = {"cold.csv"};
  Result<ingest::RunRecord> rec = ingest::Loader(ws, lo).Run(req);
  EXPECT_TRUE(rec.ok() && rec->state == ingest::RunState::kSucceeded)
      << rec.status() << (rec.ok() ? rec->error : "");
  const IoSnapshot snap = counting->Snapshot();
  Figures f;
  f.requests = snap.total.total_requests();
  f.bytes = snap.total.bytes_read + snap.total.bytes_written;
  auto index = snap.by_prefix.find("__manifest/_indices/");
  if (index != snap.by_prefix.end()) f.files = static_cast<int>(index->second.reads());
  return f;
}

DepthFigures Measure(int depth) {
  DepthFigures f;
  f.depth = depth;
  auto counting = std::make_shared<CountingObjectStore>(testing::NewTestStore());
  {
    auto ws = WorkspaceEngine::Init(counting, "", CostOptions(false)).value();
    for (int t = 0; t < kTables; ++t) {
      EXPECT_TRUE(ws->CreateTable("t" + std::to_string(t), EventSchema(), {}).ok());
    }
    // History: `depth` writes, each recorded with a run id.
    for (int c = 0; c < depth; ++c) {
      WriteRequest w = Append("t" + std::to_string(c % kTables), {c});
      w.run_id = "history-" + std::to_string(c);
      EXPECT_TRUE(ws->Write(w).ok());
    }
    // Each table's rows in one fragment again (a version file lists its
    // table's fragments: that is table size, not history, and compaction
    // bounds it); the versions stay.
    for (int t = 0; t < kTables; ++t) {
      WriteRequest compact;
      compact.table = "t" + std::to_string(t);
      compact.mode = WriteMode::kCompact;
      EXPECT_TRUE(ws->Write(compact).ok());
    }
    // A branch with writes of its own.
    EXPECT_TRUE(ws->CreateBranch("dev").ok());
    for (int c = 0; c < 3; ++c) EXPECT_TRUE(ws->Write(Append("t0", {-c - 1}, "dev")).ok());
  }
  auto measure_reads = [&](Figures* cold, Figures* warm) {
    auto ws = WorkspaceEngine::Open(counting, "", CostOptions(true)).value();
    *cold = ReadHeads(*ws, *counting);
    *warm = ReadHeads(*ws, *counting);
  };
  measure_reads(&f.read_cold, &f.read_warm);
  {
    auto ws = WorkspaceEngine::Open(counting, "", CostOptions(true)).value();
    f.branch_cold = ReadHeads(*ws, *counting, "dev");
  }
  {
    // An uncovered tail of at least 5 fragments (5 commits without a fold),
    // then the steady state after reconciliation.
    WorkspaceOptions no_fold = CostOptions(true);
    no_fold.manifest.index_tail_fragments = 0;
    auto ws = WorkspaceEngine::Open(counting, "", no_fold).value();
    for (int c = 0; c < 5; ++c) EXPECT_TRUE(ws->Write(Append("t1", {-100 - c})).ok());
    JournalLookupStats tail, after;
    // A run that never committed: the whole tail is scanned.
    EXPECT_FALSE(ws->manifest().FindJournalRow("", RunCommitId("never"), &tail).value());
    f.lookup_scanned = tail.fragments_scanned;
    EXPECT_TRUE(ws->manifest().Reconcile("").ok());
    EXPECT_FALSE(ws->manifest().FindJournalRow("", RunCommitId("never"), &after).value());
    EXPECT_TRUE(ws->manifest().FindJournalRow("", RunCommitId("history-0")).value());
    f.lookup_scanned_after = after.fragments_scanned;
    EXPECT_TRUE(after.index_used);
  }
  {
    WorkspaceOptions o = CostOptions(true);
    auto ws = WorkspaceEngine::Open(counting, "", o).value();
    f.load = MeasureLoads(ws, *counting, kLoads, 1'000'000);
    f.load_cold = MeasureColdLoad(counting, 2'000'000);
    // Single-table publishes: the median of cold ones (a fresh process
    // each), and of warm ones (merges and folds fall on a few).
    const int64_t sid = ws->Current().value().Find("t2")->def.sid;
    std::vector<uint64_t> cold, warm;
    for (int i = 0; i < 5; ++i) {
      auto fresh = Manifest::Open(counting, "", CostOptions(true).manifest).value();
      cold.push_back(PublishOne(*fresh, *counting, sid));
    }
    auto writer = Manifest::Open(counting, "", CostOptions(true).manifest).value();
    for (int i = 0; i < 33; ++i) warm.push_back(PublishOne(*writer, *counting, sid));
    f.publish_cold = Median(cold);
    f.publish_warm = Median(warm);
    counting->Reset();
    f.fold_rows = ws->manifest().Journal("").value().size();
    f.fold_bytes = counting->Snapshot().total.bytes_read;
    EXPECT_TRUE(ws->manifest().Compact("").ok());
    // Compaction leaves the journal indexed: a look-up scans no fragment.
    JournalLookupStats compacted;
    EXPECT_FALSE(ws->manifest().FindJournalRow("", RunCommitId("never"), &compacted).value());
    EXPECT_TRUE(ws->manifest().FindJournalRow("", RunCommitId("history-1")).value());
    f.lookup_scanned_compacted = compacted.fragments_scanned;
  }
  measure_reads(&f.read_cold_compacted, &f.read_warm_compacted);
  return f;
}

// Bytes may differ by a few per cent: the rows hold numbers (versions, row
// counts) whose encoded width varies. Growth with history would be many times.
constexpr double kBytesTolerance = 0.03;
// Mean load bytes (merges and folds included) at any depth against depth 10.
constexpr double kAmortisedBytesGrowth = 1.25;
// A fresh process's single-row load at any depth against depth 10 (the
// version file it reads names each journal-index level's fragments).
constexpr double kFreshLoadBytesGrowth = 1.1;

bool SameBytes(double a, double b) { return std::fabs(a - b) <= kBytesTolerance * std::max(a, b); }

void ExpectSame(const Figures& a, const Figures& b, const std::string& what) {
  EXPECT_EQ(a.requests, b.requests) << what;
  EXPECT_EQ(a.files, b.files) << what;
  EXPECT_EQ(a.head_rows, b.head_rows) << what;
  EXPECT_TRUE(SameBytes(double(a.bytes), double(b.bytes)))
      << what << ": " << a.bytes << " vs " << b.bytes << " bytes";
}

std::string Fmt(const Figures& x) {
  return std::to_string(x.requests) + "/" + std::to_string(x.bytes) + "/" +
         std::to_string(x.files) + "/" + std::to_string(x.head_rows);
}

TEST(ManifestCostTest, ReadsAndLoadsCostTheSameAtEveryDepth) {
  std::vector<DepthFigures> all;
  for (int depth : FromEnv("LOAM_COST_DEPTHS", {10, 100, 1000})) all.push_back(Measure(depth));
  std::printf(
      "[ figures ] backend %s, %d tables; reads: requests/bytes/partition files/head rows\n",
      testing::TestBackendName().c_str(), kTables);
  std::printf(
      "[ figures ] depth | read cold | read warm | compacted cold | compacted warm | "
      "branch cold | load median req/bytes | load mean req/bytes | load max | "
      "publish cold/warm | look-up scan before/after/compacted | fold rows/bytes | "
      "fresh-process load req/bytes/index reads\n");
  for (const DepthFigures& f : all) {
    std::printf(
        "[ figures ] %5d | %s | %s | %s | %s | %s | %llu/%llu | %.2f/%.0f | %llu | "
        "%llu/%llu | %d/%d/%d | %llu/%llu | %llu/%llu/%d\n",
        f.depth, Fmt(f.read_cold).c_str(), Fmt(f.read_warm).c_str(),
        Fmt(f.read_cold_compacted).c_str(), Fmt(f.read_warm_compacted).c_str(),
        Fmt(f.branch_cold).c_str(), (unsigned long long)f.load.median_requests,
        (unsigned long long)f.load.median_bytes, f.load.mean_requests, f.load.mean_bytes,
        (unsigned long long)f.load.max_requests, (unsigned long long)f.publish_cold,
        (unsigned long long)f.publish_warm, f.lookup_scanned, f.lookup_scanned_after,
        f.lookup_scanned_compacted, (unsigned long long)f.fold_rows,
        (unsigned long long)f.fold_bytes, (unsigned long long)f.load_cold.requests,
        (unsigned long long)f.load_cold.bytes, f.load_cold.files);
  }
  for (const DepthFigures& f : all) {
    const std::string at = "depth " + std::to_string(f.depth);
    EXPECT_EQ(f.read_cold.head_rows, kTables) << at;
    EXPECT_EQ(f.read_cold_compacted.head_rows, kTables) << at;
    if (testing::TestBackendName() == "local") {
      // A LIST there reads every name in the directory: the latest manifest
      // version comes from its hint instead (docs/format/dataset.md).
      EXPECT_EQ(f.read_cold.lists, 0u) << at;
      EXPECT_EQ(f.branch_cold.lists, 0u) << at;
    }
    // On local disk a publish also GETs the latest-version hint and HEADs one
    // version more, instead of the LIST, and puts the hint after it commits.
    const uint64_t hint = testing::TestBackendName() == "local" ? 3 : 0;
    EXPECT_LE(f.publish_cold, 6u + hint) << at;
    EXPECT_LE(f.publish_warm, 2u + hint) << at;
    // A load never lists the table's versions; the merges and folds it
    // carries stay within the documented amortised bound.
    EXPECT_EQ(f.load.table_lists, 0u) << at;
    EXPECT_LE(f.load.mean_requests, f.load.median_requests + kAmortisedExtraRequests) << at;
    EXPECT_GE(f.lookup_scanned, 5) << at;
    EXPECT_LE(f.lookup_scanned, kMaxLookupScan + 5) << at;
    EXPECT_EQ(f.lookup_scanned_after, 0) << at;
    // Its run is newer than every level of the journal index: none is read
    // (2 to 6 pages at depths 10 to 10,000 without the run's journal floor).
    EXPECT_EQ(f.load_cold.files, 0) << "fresh-process load, " << at;
    EXPECT_EQ(f.lookup_scanned_compacted, 0) << at;
  }
  for (size_t i = 1; i < all.size(); ++i) {
    const std::string at =
        "depth " + std::to_string(all[i].depth) + " vs " + std::to_string(all[0].depth);
    ExpectSame(all[i].read_cold, all[0].read_cold, "cold read, " + at);
    ExpectSame(all[i].read_warm, all[0].read_warm, "warm read, " + at);
    ExpectSame(all[i].read_cold_compacted, all[0].read_cold_compacted,
               "compacted cold read, " + at);
    ExpectSame(all[i].read_warm_compacted, all[0].read_warm_compacted,
               "compacted warm read, " + at);
    ExpectSame(all[i].branch_cold, all[0].branch_cold, "branch read, " + at);
    EXPECT_EQ(all[i].load.median_requests, all[0].load.median_requests) << "load, " << at;
    EXPECT_TRUE(SameBytes(double(all[i].load.median_bytes), double(all[0].load.median_bytes)))
        << "load bytes, " << at << ": " << all[i].load.median_bytes << " vs "
        << all[0].load.median_bytes;
    EXPECT_LE(std::fabs(all[i].load.mean_requests - all[0].load.mean_requests),
              kAmortisedExtraRequests)
        << "amortised load, " << at;
    // The folds a load carries write levels of the journal index, not the
    // whole index: their amortised bytes do not grow with history either
    // (they grew 7x from depth 10 to 10,000 when a fold rewrote it whole).
    EXPECT_LE(all[i].load.mean_bytes, kAmortisedBytesGrowth * all[0].load.mean_bytes)
        << "amortised load bytes, " << at << ": " << all[i].load.mean_bytes << " vs "
        << all[0].load.mean_bytes;
    EXPECT_EQ(all[i].load_cold.requests, all[0].load_cold.requests) << "fresh load, " << at;
    EXPECT_LE(all[i].load_cold.bytes, kFreshLoadBytesGrowth * all[0].load_cold.bytes)
        << "fresh load bytes, " << at << ": " << all[i].load_cold.bytes << " vs "
        << all[0].load_cold.bytes;
    EXPECT_EQ(all[i].publish_cold, all[0].publish_cold) << at;
    EXPECT_EQ(all[i].publish_warm, all[0].publish_warm) << at;
  }
  // The control: folding the journal costs more as history grows, so the
  // gates above can tell a flat read from a fold.
  EXPECT_GT(all.back().fold_rows, 5 * all.front().fold_rows);
  EXPECT_GT(all.back().fold_bytes, 2 * all.front().fold_bytes);
}

// Reads of 10 live tables, and a write to one, after `cycles` create/drop
// cycles of another table. Both histories end alike (a grant, then a write
// to each live table), so the last commits leave the same layout.
struct CycleFigures {
  Figures cold, warm, compacted;
  uint64_t write = 0;
  double drop_requests = 0, drop_bytes = 0;  // means over DropsMeasured() drops
};

// Drops measured after the cycles (LOAM_COST_DROPS): enough that level
// moves of the tombstone partitions fall among them as in production.
int DropsMeasured() { return FromEnv("LOAM_COST_DROPS", {128}).front(); }

CycleFigures MeasureCycles(int cycles) {
  auto counting = std::make_shared<CountingObjectStore>(testing::NewTestStore());
  {
    auto ws = WorkspaceEngine::Init(counting, "", CostOptions(false)).value();
    for (int t = 0; t < kTables; ++t) {
      EXPECT_TRUE(ws->CreateTable("t" + std::to_string(t), EventSchema(), {}).ok());
    }
    for (int c = 0; c < cycles; ++c) {
      EXPECT_TRUE(ws->CreateTable("tmp", EventSchema(), {}).ok());
      EXPECT_TRUE(ws->DropTable("tmp").ok());
    }
    EXPECT_TRUE(ws->SetGrant("t0", "ada", Role::kReader).ok());
    for (int t = 0; t < kTables; ++t) {
      EXPECT_TRUE(ws->Write(Append("t" + std::to_string(t), {t})).ok());
    }
  }
  CycleFigures f;
  auto ws = WorkspaceEngine::Open(counting, "", CostOptions(true)).value();
  f.cold = ReadHeads(*ws, *counting);
  f.warm = ReadHeads(*ws, *counting);
  // A write's median: the publisher's merges and folds fall on a few, at
  // places that depend on the history's layout (the loads gate amortises them).
  std::vector<uint64_t> writes;
  for (int i = 0; i < 9; ++i) {
    counting->Reset();
    EXPECT_TRUE(ws->Write(Append("t3", {99 + i})).ok());
    writes.push_back(counting->Snapshot().total.total_requests());
  }
  f.write = Median(writes);
  const int drops = DropsMeasured();
  for (int c = 0; c < drops; ++c) {
    EXPECT_TRUE(ws->CreateTable("tmp", EventSchema(), {}).ok());
    counting->Reset();
    EXPECT_TRUE(ws->DropTable("tmp").ok());
    const IoCounters drop = counting->Snapshot().total;
    f.drop_requests += double(drop.total_requests()) / drops;
    f.drop_bytes += double(drop.bytes_read + drop.bytes_written) / drops;
  }
  EXPECT_TRUE(ws->manifest().Compact("").ok());
  auto fresh = WorkspaceEngine::Open(counting, "", CostOptions(true)).value();
  f.compacted = ReadHeads(*fresh, *counting);
  return f;
}

TEST(ManifestCostTest, DroppedTablesCostCurrentReadsNothing) {
  const int cycles = FromEnv("LOAM_COST_CYCLES", {1000}).front();
  const CycleFigures none = MeasureCycles(0), many = MeasureCycles(cycles);
  std::printf(
      "[ figures ] backend %s, %d live tables: cycles | read cold | read warm | write | "
      "drop mean req/bytes | compacted read cold\n",
      testing::TestBackendName().c_str(), kTables);
  for (const auto& [n, f] : {std::pair{0, &none}, std::pair{cycles, &many}}) {
    std::printf("[ figures ] %6d | %s | %s | %llu | %.2f/%.0f | %s\n", n, Fmt(f->cold).c_str(),
                Fmt(f->warm).c_str(), (unsigned long long)f->write, f->drop_requests, f->drop_bytes,
                Fmt(f->compacted).c_str());
  }
  const std::string after = " after " + std::to_string(cycles) + " cycles";
  EXPECT_EQ(none.cold.head_rows, kTables);
  ExpectSame(many.cold, none.cold, "cold read" + after);
  ExpectSame(many.warm, none.warm, "warm read" + after);
  EXPECT_EQ(many.write, none.write);
  // A drop rewrites the newest level of the tombstones, and a level move now
  // and then: its amortised cost does not follow the drops before it (a
  // tombstone partition rewritten whole grew with them: 2.47x at 1,000).
  EXPECT_LE(many.drop_requests, none.drop_requests + kAmortisedExtraRequests) << "drop" << after;
  EXPECT_LE(many.drop_bytes, kAmortisedBytesGrowth * none.drop_bytes)
      << "drop bytes" << after << ": " << many.drop_bytes << " vs " << none.drop_bytes;
  // Compaction keeps the tombstones in a fragment of their own.
  ExpectSame(many.compacted, none.compacted, "compacted read" + after);
}

}  // namespace
}  // namespace loam
