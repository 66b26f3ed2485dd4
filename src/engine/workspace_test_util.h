// Helpers shared by the workspace tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "engine/workspace.h"
#include "io/memory_object_store.h"

namespace loam::testing {

inline Schema EventSchema() {
  return Schema{{{"id", DataType::Int64(), false}, {"v", DataType::String()}}};
}

inline RecordBatch Events(const std::vector<int64_t>& ids, const std::string& v = "x") {
  RecordBatch b(EventSchema());
  for (int64_t id : ids) b.AppendRow({id, v + std::to_string(id)}).CheckOK();
  return b;
}

inline WriteRequest Append(const std::string& table, std::vector<int64_t> ids,
                           const std::string& branch = "") {
  WriteRequest r;
  r.table = table;
  r.branch = branch;
  r.rows = {Events(ids)};
  return r;
}

inline WorkspaceOptions TestOptions() {
  WorkspaceOptions o;
  o.recovery_grace_micros = 0;
  o.sidecar_lease_micros = 0;  // no renewals from another thread (SidecarLeaseTest sets one)
  o.manifest.cache_bytes = 0;
  o.system_actor = true;
  return o;
}

// The workspace "ws" opened again as a process that crashes (Unavailable)
// at failpoint `point`.
inline std::shared_ptr<WorkspaceEngine> OpenCrashingAt(std::shared_ptr<ObjectStore> store,
                                                       WorkspaceOptions options,
                                                       std::string_view point) {
  options.failpoint = [at = std::string(point)](std::string_view p) {
    return p == at ? Status::Unavailable("crash") : Status::OK();
  };
  return WorkspaceEngine::Open(std::move(store), "ws", options).value();
}

// A history with every shape migration must keep: main; an owned fork (dev);
// a branch of a branch with a drop (dev2); a branch that never wrote (lazy);
// a rename; tombstones on three branches; a name dropped and created again
// (a new identity); grants set and revoked.
inline const std::vector<std::string>& BranchedHistoryBranches() {
  static const std::vector<std::string> branches = {"", "dev", "dev2", "lazy"};
  return branches;
}
inline Status BuildBranchedHistory(WorkspaceEngine& ws) {
  RETURN_NOT_OK(ws.CreateTable("orders", EventSchema(), {"id"}).status());
  RETURN_NOT_OK(ws.Write(Append("orders", {1, 2, 3})).status());
  RETURN_NOT_OK(ws.CreateTable("people", EventSchema(), {}).status());
  RETURN_NOT_OK(ws.Write(Append("people", {1})).status());
  RETURN_NOT_OK(ws.SetGrant("orders", "alice", Role::kWriter));
  RETURN_NOT_OK(ws.SetGrant("orders", "bob", Role::kReader));
  RETURN_NOT_OK(ws.SetGrant("orders", "bob", std::nullopt));
  RETURN_NOT_OK(ws.CreateTable("scratch", EventSchema(), {}).status());
  RETURN_NOT_OK(ws.DropTable("scratch").status());
  RETURN_NOT_OK(ws.CreateTable("scratch", EventSchema(), {}).status());  // a new identity
  RETURN_NOT_OK(ws.CreateBranch("dev"));
  RETURN_NOT_OK(ws.Write(Append("orders", {4, 5}, "dev")).status());  // dev owns a fork
  RETURN_NOT_OK(ws.RenameTable("people", "persons", "dev").status());
  RETURN_NOT_OK(ws.DropTable("scratch", "dev").status());
  RETURN_NOT_OK(ws.CreateBranch("lazy", "dev"));  // never writes: inherits lazily
  RETURN_NOT_OK(ws.CreateBranch("dev2", "dev"));
  RETURN_NOT_OK(ws.DropTable("orders", "dev2").status());
  RETURN_NOT_OK(ws.Write(Append("orders", {6})).status());
  return ws.DropTable("people").status();
}

// Live row count of `table` on `branch`, read through its head.
inline int64_t RowsOf(const WorkspaceEngine& ws, const std::string& table,
                      const std::string& branch = "") {
  Snapshot snap = ws.Current(branch).value();
  Dataset ds = ws.OpenTable(snap, table).value();
  return static_cast<int64_t>(ds.CountRows());
}

// Fails the test unless the stored heads equal the journal fold.
inline void ExpectHeadsMatchFold(const WorkspaceEngine& ws, const std::string& branch = "") {
  Result<HeadsReport> r = ws.VerifyHeads(branch);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string all;
  for (const std::string& p : r->problems) all += p + "\n";
  EXPECT_TRUE(r->ok()) << "branch '" << branch << "':\n" << all;
}

}  // namespace loam::testing
