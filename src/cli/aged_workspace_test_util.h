// A workspace with a history hours old, written through the library with a
// clock behind the real one, as an aged workspace has it: for the
// time-travel window's front-door tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "engine/workspace.h"

namespace loam::testing {

inline constexpr int64_t kHourMicros = 3600LL * 1'000'000;

// Creates a workspace at `root` owned by "owner" with table t (id int64) and
// appends one row at each of 3, 2 and 1 hours before now; table "gone"
// (one row) lives from 3 to 2.5 hours before now. Returns the manifest
// version of each append to t.
inline std::vector<uint64_t> WriteAgedHistory(const std::string& root) {
  const int64_t now = Clock::System()->NowMicros();
  ManualClock clock(now - 3 * kHourMicros);
  WorkspaceOptions o;
  o.owner = "owner";
  o.system_actor = true;  // writes the history; the front door reads as the owner
  o.manifest.dataset.clock = &clock;
  auto ws = WorkspaceEngine::Init(OpenObjectStore(root).value(), "", o).value();
  Schema schema{{{"id", DataType::Int64(), false}}};
  EXPECT_TRUE(ws->CreateTable("t", schema, {}).ok());
  EXPECT_TRUE(ws->CreateTable("gone", schema, {}).ok());
  RecordBatch one(schema);
  EXPECT_TRUE(one.AppendRow({int64_t{7}}).ok());
  WriteRequest gone;
  gone.table = "gone";
  gone.rows = {one};
  EXPECT_TRUE(ws->Write(gone).ok());
  clock.SetMicros(now - 5 * kHourMicros / 2);
  EXPECT_TRUE(ws->DropTable("gone").ok());
  std::vector<uint64_t> versions;
  for (int64_t i = 0; i < 3; ++i) {
    clock.SetMicros(now - (3 - i) * kHourMicros);
    RecordBatch rows(schema);
    EXPECT_TRUE(rows.AppendRow({i}).ok());
    WriteRequest w;
    w.table = "t";
    w.rows = {rows};
    versions.push_back(ws->Write(w).value().manifest_version);
  }
  return versions;
}

}  // namespace loam::testing
