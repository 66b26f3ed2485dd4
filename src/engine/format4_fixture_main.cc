// Test code only: writes testdata/workspace_v4 (a format-4 workspace) and
// testdata/workspace_v4.json (what each branch held, as the same history
// read with heads), from a history with main, owned and lazily inherited
// branches, renames, drops, a recreated name, tombstones on three branches,
// grants, and a write that crashed between its table commit and its publish.
//
//   loam_format4_fixture <output directory> <expectations file>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/status_macros.h"
#include "engine/format4_fixture.h"
#include "engine/format4_writer.h"
#include "engine/workspace_test_util.h"
#include "io/local_object_store.h"
#include "manifest/fold.h"

namespace loam {
namespace {

using json = nlohmann::json;
using testing::Append;
using testing::EventSchema;

// What a branch reads: table -> rows and ids, grants, the head digest, the
// log length, and the tables at each of the branch's own versions.
Result<json> Expectations(const WorkspaceEngine& ws) {
  json out = json::object();
  for (const std::string& b : testing::BranchedHistoryBranches()) {
    ASSIGN_OR_RETURN(Snapshot snap, ws.Current(b));
    json tables = json::object();
    for (const auto& [name, t] : snap.tables) {
      ASSIGN_OR_RETURN(Dataset ds, ws.OpenTable(snap, name));
      tables[name] = {{"rows", ds.CountRows()}, {"sid", t.def.sid}, {"inc", t.def.inc}};
    }
    ASSIGN_OR_RETURN(ManifestVersion tip, ws.manifest().Current(b));
    std::vector<std::string> problems;
    FoldedHeads heads = ReadStoredHeads(ws.manifest(), tip, &problems);
    if (!problems.empty()) return Status::Internal(problems.front());
    ASSIGN_OR_RETURN(std::vector<GraphCommitInfo> log, ws.Log(b));
    ASSIGN_OR_RETURN(BranchInfo parent, ws.manifest().BranchParent(b));
    json versions = json::object();
    for (uint64_t v = b.empty() ? 2 : parent.parent_version + 1; v <= tip.version; ++v) {
      ASSIGN_OR_RETURN(Snapshot at, ws.SnapshotAt(b, v));
      versions[std::to_string(v)] = {{"tables", testing::FixtureTables(at)},
                                     {"grants", testing::FixtureGrants(at)}};
    }
    out[b.empty() ? "main" : b] = {{"tables", tables},
                                   {"grants", testing::FixtureGrants(snap)},
                                   {"head_digest", HeadSetDigest(heads.tables, heads.graphs)},
                                   {"manifest_version", tip.version},
                                   {"log", log.size()},
                                   {"versions", versions}};
  }
  return out;
}

Status Run(const std::string& dir, const std::string& expectations) {
  auto memory = std::make_shared<MemoryObjectStore>();
  WorkspaceOptions options = testing::TestOptions();
  ASSIGN_OR_RETURN(auto ws, WorkspaceEngine::Init(memory, "src", options));
  RETURN_NOT_OK(testing::BuildBranchedHistory(*ws));
  ASSIGN_OR_RETURN(json expected, Expectations(*ws));
  // A write that crashed after its table commit: its sidecar stays pending.
  options.failpoint = [](std::string_view at) {
    return at == failpoint::kAfterTableCommit ? Status::Aborted("crashed") : Status::OK();
  };
  ASSIGN_OR_RETURN(auto crashing, WorkspaceEngine::Open(memory, "src", options));
  if (crashing->Write(Append("orders", {8, 9}, "dev")).ok()) {
    return Status::Internal("the crashing write succeeded");
  }
  ASSIGN_OR_RETURN(auto local, LocalObjectStore::Open(dir));
  ASSIGN_OR_RETURN(testing::Format4Stats stats,
                   testing::WriteFormat4(*memory, "src", local, "", options.manifest.dataset));
  local.reset();
  std::filesystem::remove_all(std::filesystem::path(dir) / ".loam");  // the store's lock files
  std::ofstream(expectations) << expected.dump(2) << "\n";
  std::printf("%d objects copied, %d manifest versions, %d journal rows\n", stats.objects_copied,
              stats.versions_written, stats.journal_rows);
  return Status::OK();
}

}  // namespace
}  // namespace loam

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s <output directory> <expectations file>\n", argv[0]);
    return 2;
  }
  loam::Status s = loam::Run(argv[1], argv[2]);
  if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  return s.ok() ? 0 : 1;
}
