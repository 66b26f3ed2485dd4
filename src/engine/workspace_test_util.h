// Helpers shared by the workspace tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

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
  o.manifest.cache_bytes = 0;
  o.system_actor = true;
  return o;
}

// Live row count of `table` on `branch`, read through its head.
inline int64_t RowsOf(const Workspace& ws, const std::string& table,
                      const std::string& branch = "") {
  Snapshot snap = ws.Current(branch).value();
  Dataset ds = ws.OpenTable(snap, table).value();
  return static_cast<int64_t>(ds.CountRows());
}

// Fails the test unless the stored heads equal the journal fold.
inline void ExpectHeadsMatchFold(const Workspace& ws, const std::string& branch = "") {
  Result<HeadsReport> r = ws.VerifyHeads(branch);
  ASSERT_TRUE(r.ok()) << r.status();
  std::string all;
  for (const std::string& p : r->problems) all += p + "\n";
  EXPECT_TRUE(r->ok()) << "branch '" << branch << "':\n" << all;
}

}  // namespace loam::testing
