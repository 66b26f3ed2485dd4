// loam_soak_bench (bench/soak): many small runs into one table through the
// service in-process, on local disk, with automatic compaction and retention
// on (a shortened window). At each checkpoint it stops submitting, waits
// for the queue to drain, and prints what grows with age if anything does:
// a full scan's time, a single-row load's requests, bytes and time (the mean
// of --probe-loads `loam load`s through a second handle counting its
// requests, and the first apart, with the handle's open: a fresh process's),
// the fragments
// of the current version (and, sampled every 50 ms while runs were
// submitted, as readers met them), the workspace's objects and bytes, and RSS. After
// the last checkpoint it waits out the window and counts the objects again.
// With --upsert-keys N the runs upsert into N keys, so the table's rows stay
// put while its history grows. Not a CI test; figures in docs/benchmarks.md.
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/ulid.h"
#include "engine/retention.h"
#include "ingest/loader.h"
#include "io/counting_object_store.h"
#include "service/service.h"

namespace loam::service {
namespace {

using Steady = std::chrono::steady_clock;

struct Flags {
  std::string dir;
  std::vector<int64_t> checkpoints = {1000, 10000, 100000};
  int clients = 8;
  int64_t window_seconds = 60;
  int64_t retention_interval_seconds = 10;
  int64_t compaction_interval_seconds = 2;
  int64_t manifest_cache_mib = -1;  // -1: the default
  // > 0: runs upsert one row each on `id`, cycling through this many keys, so
  // the table's rows stay put while its history grows; 0: runs append.
  int64_t upsert_keys = 0;
  // Prints each probe load's requests and bytes by key prefix (3 segments).
  bool trace_load = false;
  // Single-row loads per measurement, by one fresh handle: the first, with
  // the handle's open, is a fresh process's; the publisher's merges and
  // journal-index folds fall on about one in 16, so the mean takes several.
  int probe_loads = 48;
};

double Seconds(Steady::time_point from) {
  return std::chrono::duration<double>(Steady::now() - from).count();
}

// Bytes malloc has handed out and not taken back (arenas and mmapped
// blocks): what the process holds, as against what it keeps resident.
int64_t HeapInUseMiB() {
  const struct mallinfo2 mi = mallinfo2();
  return static_cast<int64_t>((mi.uordblks + mi.hblkhd) >> 20);
}

int64_t RssMiB(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(std::strlen(field))) / 1024;
  }
  return -1;
}

struct Soak {
  Flags flags;
  std::shared_ptr<ObjectStore> store;
  std::shared_ptr<WorkspaceEngine> ws;
  std::unique_ptr<Service> svc;
  std::string pipeline;
  std::atomic<int64_t> submitted{0}, succeeded{0}, failed{0}, refused{0};
  std::atomic<int64_t> passes{0}, compacted_tables{0}, deferred{0}, versions_expired{0};
  // The table's fragments as readers meet them, sampled every 50 ms while
  // runs are submitted (SampleFragments).
  std::vector<size_t> fragment_samples;

  CallContext Ctx() const { return {ws->id(), "owner"}; }

  // Submits runs [from, to) from `flags.clients` threads, each retrying a
  // refused submission (429) with the same key after its Retry-After.
  void Submit(int64_t from, int64_t to) {
    std::atomic<int64_t> next{from};
    std::vector<std::thread> threads;
    for (int c = 0; c < flags.clients; ++c) {
      threads.emplace_back([&] {
        for (int64_t i = next++; i < to; i = next++) {
          const int64_t id = flags.upsert_keys > 0 ? i % flags.upsert_keys : i;
          const std::string data =
              "id,note\n" + std::to_string(id) + ",soak " + std::to_string(i) + "\n";
          for (;;) {
            Result<Submission> s =
                svc->SubmitInline(Ctx(), pipeline, "run-" + std::to_string(i), {"text/csv", data});
            if (s.ok()) break;
            if (!s.status().Is(ErrorCode::kOverloaded)) {
              std::fprintf(stderr, "submission %lld: %s\n", static_cast<long long>(i),
                           s.status().ToString().c_str());
              std::exit(1);
            }
            ++refused;
            const std::string_view after = s.status().detail("retryAfterMillis");
            std::this_thread::sleep_for(std::chrono::milliseconds(
                after.empty() ? 50 : std::stoll(std::string(after))));  // as a client backs off
          }
          ++submitted;
        }
      });
    }
    for (std::thread& t : threads) t.join();
  }

  // Samples the current table's fragments until `stop`, into fragment_samples.
  void SampleFragments(const std::atomic<bool>& stop) {
    while (!stop.load()) {
      Result<Snapshot> snap = ws->Current();
      Result<Dataset> table = snap.ok() ? ws->OpenTable(*snap, "events") : snap.status();
      if (table.ok()) fragment_samples.push_back(table->state().fragments.size());
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a sampling period
    }
  }

  // p50 / p99 / max of the samples since the last call.
  void PrintFragmentSamples() {
    std::vector<size_t> s;
    s.swap(fragment_samples);
    if (s.empty()) return;
    std::sort(s.begin(), s.end());
    std::printf("           fragments under load (%zu samples): p50 %zu, p99 %zu, max %zu\n",
                s.size(), s[s.size() / 2], s[s.size() * 99 / 100], s.back());
  }

  struct Figures {
    double scan_ms = 0;
    uint64_t load_requests = 0, load_bytes = 0;
    double load_ms = 0;
    uint64_t first_requests = 0, first_bytes = 0;  // the first load: a fresh process's
    size_t fragments = 0;
    int64_t objects = 0, bytes = 0;
    std::map<std::string, int64_t> by_area;  // objects per top-level area
  };

  Figures Measure(int64_t label) {
    Figures f;
    Snapshot snap = ws->Current().value();
    Dataset table = ws->OpenTable(snap, "events").value();
    f.fragments = table.state().fragments.size();
    std::vector<double> scans;
    for (int i = 0; i < 3; ++i) {
      const auto t0 = Steady::now();
      RecordBatch all = table.ReadAll().value();
      scans.push_back(Seconds(t0) * 1000);
      if (all.num_rows() < (flags.upsert_keys > 0 ? std::min(label, flags.upsert_keys) : label))
        std::fprintf(stderr, "scan: %lld rows\n", (long long)all.num_rows());
    }
    std::sort(scans.begin(), scans.end());
    f.scan_ms = scans[1];
    // Single-row loads through a second handle that counts its requests.
    auto counting = std::make_shared<CountingObjectStore>(store, flags.trace_load ? 3 : 1);
    WorkspaceOptions wo;
    wo.system_actor = true;
    auto other = WorkspaceEngine::Open(counting, "", wo).value();
    ingest::Loader loader(other);
    const std::string file = flags.dir + "/one-row.csv";
    const int kLoads = flags.probe_loads;
    uint64_t requests = 0, bytes = 0;
    double ms = 0;
    for (int i = 0; i < kLoads; ++i) {
      std::ofstream(file) << "id,note\n-" << label << i << ",probe\n";
      ingest::RunRequest r;
      r.table = "events";
      r.files = {file};
      r.format = ingest::InputFormat::kCsv;
      r.idempotency_key = "probe-" + NewUlidString();
      r.principal = "owner";
      if (i > 0) counting->Reset();  // the first load counts the handle's open too
      const auto t0 = Steady::now();
      ingest::RunRecord done = loader.Run(r).value();
      ms += Seconds(t0) * 1000;
      if (done.state != ingest::RunState::kSucceeded) std::fprintf(stderr, "probe load failed\n");
      const IoSnapshot io = counting->Snapshot();
      requests += io.total.total_requests();
      bytes += io.total.bytes_read + io.total.bytes_written;
      if (i == 0) {
        f.first_requests = io.total.total_requests();
        f.first_bytes = io.total.bytes_read + io.total.bytes_written;
      }
      if (flags.trace_load) TraceLoad(i, io);
    }
    f.load_requests = requests / kLoads;
    f.load_bytes = bytes / kLoads;
    f.load_ms = ms / kLoads;
    for (const ObjectInfo& o : store->ListAll("").value()) {
      ++f.objects;
      f.bytes += static_cast<int64_t>(o.meta.size);
      // "tables", "__manifest", "_control/runs", ...
      const size_t first = o.key.find('/');
      const bool deeper =
          o.key.compare(0, first, "_control") == 0 || o.key.compare(0, first, "__manifest") == 0;
      const size_t cut = deeper ? o.key.find('/', first + 1) : first;
      ++f.by_area[o.key.substr(0, cut)];
    }
    return f;
  }

  static void TraceLoad(int i, const IoSnapshot& io) {
    std::printf("           probe %d: %s\n", i, io.total.ToString().c_str());
    for (const auto& [prefix, c] : io.by_prefix) {
      std::printf("             %-44s %s\n", prefix.c_str(), c.ToString().c_str());
    }
  }

  void Print(const std::string& label, const Figures& f, double rate) {
    std::printf(
        "%-10s scan %7.1f ms | load %4llu requests %8llu B %6.1f ms (first %llu / %llu B) | "
        "fragments %5zu | "
        "objects %7lld %9lld B | RSS %5lld MiB (peak %lld, heap in use %lld) | %6.1f runs/s | "
        "failed %lld, "
        "429 %lld, compactions %lld (deferred %lld), versions expired %lld\n",
        label.c_str(), f.scan_ms, (unsigned long long)f.load_requests,
        (unsigned long long)f.load_bytes, f.load_ms, (unsigned long long)f.first_requests,
        (unsigned long long)f.first_bytes, f.fragments, (long long)f.objects, (long long)f.bytes,
        (long long)RssMiB("VmRSS:"), (long long)RssMiB("VmHWM:"), (long long)HeapInUseMiB(), rate,
        (long long)failed.load(), (long long)refused.load(), (long long)compacted_tables.load(),
        (long long)deferred.load(), (long long)versions_expired.load());
    std::printf("           objects by area:");
    for (const auto& [area, n] : f.by_area) std::printf(" %s %lld", area.c_str(), (long long)n);
    std::printf("\n");
    std::fflush(stdout);
  }
};

// False (after saying why) on an unknown flag.
bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") {
      flags->dir = v;
    } else if (k == "--checkpoints") {
      flags->checkpoints.clear();
      std::stringstream in(v);
      for (std::string n; std::getline(in, n, ',');) flags->checkpoints.push_back(std::stoll(n));
    } else if (k == "--clients") {
      flags->clients = std::stoi(v);
    } else if (k == "--window-seconds") {
      flags->window_seconds = std::stoll(v);
    } else if (k == "--compaction-interval-seconds") {
      flags->compaction_interval_seconds = std::stoll(v);
    } else if (k == "--retention-interval-seconds") {
      flags->retention_interval_seconds = std::stoll(v);
    } else if (k == "--manifest-cache-mib") {
      flags->manifest_cache_mib = std::stoll(v);
    } else if (k == "--upsert-keys") {
      flags->upsert_keys = std::stoll(v);
    } else if (k == "--probe-loads") {
      flags->probe_loads = std::max(1, std::stoi(v));
    } else if (k == "--trace-load") {
      flags->trace_load = v == "1";
    } else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return false;
    }
  }
  return true;
}

// The service as `loam serve` runs it, counting into `soak`.
ServiceOptions SoakServiceOptions(Soak& soak) {
  ServiceOptions so;
  so.workers = 2;
  so.small_run_workers = 16;
  so.group_commit_interval_micros = 50'000;  // as loam serve
  so.upload_secret = "soak-bench-secret-0123456789abcdef";
  so.compaction_interval_micros = soak.flags.compaction_interval_seconds * 1'000'000;
  so.retention_interval_micros = soak.flags.retention_interval_seconds * 1'000'000;
  so.retention_grace_micros = 60'000'000;
  so.on_run_finished = [&soak](const RunInfo& r) {
    (r.state == "succeeded" ? soak.succeeded : soak.failed)++;
  };
  so.on_compaction_pass = [&soak](const MaintenanceReport& r) {
    soak.compacted_tables += r.compacted;
    ++soak.passes;
    soak.deferred += static_cast<int64_t>(r.deferred.size());
    for (const std::string& why : r.deferred) std::fprintf(stderr, "deferred: %s\n", why.c_str());
  };
  so.on_retention_pass = [&soak](const RetentionReport& r) {
    soak.versions_expired += r.manifest_versions_removed + r.table_versions_removed;
  };
  return so;
}

int Main(int argc, char** argv) {
  Soak soak;
  if (!ParseFlags(argc, argv, &soak.flags)) return 2;
  if (soak.flags.dir.empty()) {
    soak.flags.dir = (std::filesystem::temp_directory_path() / ("loam-soak-" + NewUlidString()));
  }
  std::filesystem::create_directories(soak.flags.dir + "/ws");
  soak.store = OpenObjectStore(soak.flags.dir + "/ws").value();
  WorkspaceOptions wo;
  wo.owner = "owner";
  if (soak.flags.manifest_cache_mib >= 0) {
    wo.manifest.cache_bytes = static_cast<size_t>(soak.flags.manifest_cache_mib) << 20;
  }
  soak.ws = WorkspaceEngine::Init(soak.store, "", wo).value();
  Schema schema{{{"id", DataType::Int64(), false}, {"note", DataType::String()}}};
  if (!soak.ws->CreateTable("events", schema, {}).ok()) return 1;
  if (!WriteRetentionSetting(*soak.store, "", {soak.flags.window_seconds}).ok()) return 1;

  soak.svc = Service::Open(soak.ws, SoakServiceOptions(soak)).value();
  const std::string pipeline =
      soak.flags.upsert_keys > 0
          ? R"({"name":"soak","table":"events","format":"csv","mode":"upsert","keyColumns":["id"]})"
          : R"({"name":"soak","table":"events","format":"csv"})";
  soak.pipeline = soak.svc->CreatePipeline(soak.Ctx(), pipeline).value().id;
  soak.svc->StartWorkers();
  std::printf(
      "soak: %s, %d clients, window %lld s, retention every %lld s, compaction every %lld s\n",
      soak.flags.dir.c_str(), soak.flags.clients, (long long)soak.flags.window_seconds,
      (long long)soak.flags.retention_interval_seconds,
      (long long)soak.flags.compaction_interval_seconds);
  int64_t done = 0;
  for (int64_t checkpoint : soak.flags.checkpoints) {
    const auto t0 = Steady::now();
    std::atomic<bool> stop_sampling{false};
    std::thread sampler([&] { soak.SampleFragments(stop_sampling); });
    soak.Submit(done, checkpoint);
    if (!soak.svc->WaitForEmptyQueue(std::chrono::minutes(30)).ok()) return 1;
    stop_sampling = true;
    sampler.join();
    const double rate = static_cast<double>(checkpoint - done) / Seconds(t0);
    done = checkpoint;
    soak.Print(std::to_string(checkpoint) + " runs", soak.Measure(checkpoint), rate);
    soak.PrintFragmentSamples();
    // Settled: once the next compaction pass has run over the drained table.
    const int64_t passes = soak.passes.load();
    while (soak.passes.load() < passes + 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a bench waits for the pass
    }
    soak.Print("  settled", soak.Measure(checkpoint), rate);
  }
  // Idle past the window and a retention pass: what stays is what a
  // workspace of this content needs, whatever its age.
  std::this_thread::sleep_for(std::chrono::seconds(soak.flags.window_seconds +
                                                   2 * soak.flags.retention_interval_seconds + 10));
  soak.Print("idle", soak.Measure(done), 0);
  soak.svc->Stop();
  std::filesystem::remove_all(soak.flags.dir);
  return soak.failed.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace loam::service

int main(int argc, char** argv) { return loam::service::Main(argc, argv); }
