// The migration benchmark (bench/migration; figures in docs/benchmarks.md):
// a history of `--tables` tables and `--commits` commits over `--branches`
// branches, written with heads in memory, replayed as a format-4 workspace
// onto the measured store (local disk or RGW) by the test-only writer, then
// migrated by `loam migrate`'s engine through a request-counting wrapper,
// and checked (`heads verify` on every branch, every branch's tables and
// heads as the history left them).
//
//   loam_migration_bench [--backend local|s3] [--dir D] [--tables 1000]
//                        [--commits 10000] [--branches 5] [--seed 1]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/format4_writer.h"
#include "engine/migration.h"
#include "engine/workspace_test_util.h"
#include "io/counting_object_store.h"
#include "io/local_object_store.h"
#include "io/s3_test_util.h"
#include "manifest/fold.h"

namespace loam {
namespace {

struct Args {
  std::string backend = "local";
  std::string dir = "/tmp/loam-migration-bench";
  int tables = 1000;
  int commits = 10000;
  int branches = 5;
  uint32_t seed = 1;
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string Branch(int i) { return i == 0 ? "" : "b" + std::to_string(i); }

// Tables created on main (one commit each); the branches forked from main
// or from each other along the way; then appends of one row to a random
// table of a random branch, with a rename every 97th and a drop every 499th
// commit. Every operation is one commit.
Status WriteHistory(WorkspaceEngine& ws, const Args& a) {
  std::mt19937 rng(a.seed);
  std::vector<std::vector<std::string>> names(a.branches);
  for (int t = 0; t < a.tables; ++t) {
    const std::string name = "t" + std::to_string(t);
    RETURN_NOT_OK(ws.CreateTable(name, testing::EventSchema(), {"id"}).status());
    names[0].push_back(name);
  }
  const int writes = a.commits - a.tables;
  int made = 1;
  for (int c = 0; c < writes; ++c) {
    if (made < a.branches && c >= (made - 1) * writes / (2 * a.branches)) {
      const int from = static_cast<int>(rng() % made);  // main or an earlier branch
      RETURN_NOT_OK(ws.CreateBranch(Branch(made), Branch(from)));
      names[made] = names[from];
      ++made;
    }
    const int b = static_cast<int>(rng() % made);
    std::vector<std::string>& live = names[b];
    const size_t pick = rng() % live.size();
    if (c % 499 == 498 && live.size() > 1) {
      RETURN_NOT_OK(ws.DropTable(live[pick], Branch(b)).status());
      live.erase(live.begin() + static_cast<long>(pick));
    } else if (c % 97 == 96) {
      const std::string to = live[pick] + "r";
      RETURN_NOT_OK(ws.RenameTable(live[pick], to, Branch(b)).status());
      live[pick] = to;
    } else {
      RETURN_NOT_OK(ws.Write(testing::Append(live[pick], {c}, Branch(b))).status());
    }
  }
  return Status::OK();
}

Result<std::shared_ptr<ObjectStore>> Target(const Args& a) {
  if (a.backend == "s3") {
    ASSIGN_OR_RETURN(auto s3, testing::OpenS3TestStore());
    return std::shared_ptr<ObjectStore>(s3);
  }
  std::filesystem::remove_all(a.dir);
  ASSIGN_OR_RETURN(auto local, LocalObjectStore::Open(a.dir));
  return std::shared_ptr<ObjectStore>(local);
}

// HeadSetDigest of every branch's stored heads.
Result<std::map<std::string, std::string>> Digests(const WorkspaceEngine& ws, int branches) {
  std::map<std::string, std::string> out;
  for (int b = 0; b < branches; ++b) {
    ASSIGN_OR_RETURN(ManifestVersion v, ws.manifest().Current(Branch(b)));
    std::vector<std::string> problems;
    FoldedHeads heads = ReadStoredHeads(ws.manifest(), v, &problems);
    if (!problems.empty()) return Status::DataLoss(problems.front());
    out[Branch(b)] = HeadSetDigest(heads.tables, heads.graphs);
  }
  return out;
}

void PrintIo(const char* what, const IoCounters& c) {
  std::printf("%-10s %s\n", what, c.ToString().c_str());
}

Status Run(const Args& a) {
  WorkspaceOptions options = testing::TestOptions();
  options.manifest.cache_bytes = 32 << 20;
  auto memory = std::make_shared<MemoryObjectStore>();
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto source, WorkspaceEngine::Init(memory, "src", options));
  RETURN_NOT_OK(WriteHistory(*source, a));
  ASSIGN_OR_RETURN(auto want, Digests(*source, a.branches));
  std::printf("history: %d tables, %d commits, %d branches, written in memory in %.1f s\n",
              a.tables, a.commits, a.branches, Since(t0));
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> target, Target(a));
  t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(testing::Format4Stats f4,
                   testing::WriteFormat4(*memory, "src", target, "ws", options.manifest.dataset));
  std::printf("format 4 on %s: %d objects, %d manifest versions, %d journal rows, in %.1f s\n",
              target->Describe().c_str(), f4.objects_copied, f4.versions_written, f4.journal_rows,
              Since(t0));
  auto counting = std::make_shared<CountingObjectStore>(target, /*prefix_depth=*/2);
  t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(MigrationReport r, MigrateWorkspace(counting, "ws", options));
  const double took = Since(t0);
  const IoSnapshot io = counting->Snapshot();
  std::printf("migrate: %.1f s, %llu requests\n", took,
              static_cast<unsigned long long>(io.total.total_requests()));
  PrintIo("total", io.total);
  for (const auto& [prefix, c] : io.by_prefix) PrintIo(prefix.c_str(), c);
  for (const BranchMigration& b : r.branches) {
    std::printf("  branch %-5s heads %lld, version %llu -> %llu\n",
                b.branch.empty() ? "main" : b.branch.c_str(), static_cast<long long>(b.heads),
                static_cast<unsigned long long>(b.source_version),
                static_cast<unsigned long long>(b.produced_version));
  }
  counting->Reset();
  t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto ws, WorkspaceEngine::Open(counting, "ws", options));
  ASSIGN_OR_RETURN(auto got, Digests(*ws, a.branches));
  if (got != want) return Status::DataLoss("migrated heads differ from the history's");
  for (int b = 0; b < a.branches; ++b) {
    ASSIGN_OR_RETURN(HeadsReport v, ws->VerifyHeads(Branch(b)));
    if (!v.ok()) return Status::DataLoss("heads verify on " + Branch(b) + ": " + v.problems[0]);
  }
  std::printf(
      "checked: heads equal the history's on every branch; heads verify clean "
      "(%.1f s, %llu requests)\n",
      Since(t0), static_cast<unsigned long long>(counting->Snapshot().total.total_requests()));
  if (a.backend == "s3") testing::DeleteEverything(*target);
  return Status::OK();
}

}  // namespace
}  // namespace loam

int main(int argc, char** argv) {
  loam::Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--backend")
      a.backend = v;
    else if (k == "--dir")
      a.dir = v;
    else if (k == "--tables")
      a.tables = std::atoi(v.c_str());
    else if (k == "--commits")
      a.commits = std::atoi(v.c_str());
    else if (k == "--branches")
      a.branches = std::atoi(v.c_str());
    else if (k == "--seed")
      a.seed = static_cast<uint32_t>(std::atoi(v.c_str()));
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (a.tables < 1 || a.commits <= a.tables || a.branches < 1) {
    std::fprintf(stderr, "need --tables >= 1, --commits > --tables, --branches >= 1\n");
    return 2;
  }
  loam::Status s = loam::Run(a);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok() ? 0 : 1;
}
