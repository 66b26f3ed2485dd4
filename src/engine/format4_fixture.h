// Test code only: how testdata/workspace_v4.json writes what a snapshot
// holds, shared by the program that wrote it (format4_fixture_main.cc) and
// the test that reads it back (compat_test.cc).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "catalog/snapshot.h"

namespace loam::testing {

// Grants as "sid:principal:role", in the snapshot's order.
inline nlohmann::json FixtureGrants(const Snapshot& snap) {
  nlohmann::json out = nlohmann::json::array();
  for (const Grant& g : snap.grants) {
    out.push_back(std::to_string(g.sid) + ":" + g.principal + ":" + std::string(RoleName(g.role)));
  }
  return out;
}

// Every table: [sid, incarnation, head version].
inline nlohmann::json FixtureTables(const Snapshot& snap) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, t] : snap.tables) {
    out[name] = {t.def.sid, t.def.inc, t.head.table_version};
  }
  return out;
}

}  // namespace loam::testing
