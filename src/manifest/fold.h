// The journal fold: heads recomputed by replaying identity-bearing journal
// events in commit order. It is the reference (tests, `heads verify`,
// `heads repair`), never a hot path: its cost grows with history.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "manifest/manifest.h"

namespace loam {

struct FoldedHeads {
  std::map<int64_t, TableHead> tables;       // by stable id, tombstoned ones included
  std::map<std::string, GraphHead> graphs;   // by branch ("" = main)
};

// DataLoss when an event names an identity that was never incarnated, or
// follows its tombstone.
Result<FoldedHeads> FoldJournal(const std::vector<ManifestRow>& journal);

// Every table and graph head stored in a version's partitions.
Result<FoldedHeads> StoredHeads(const Manifest& manifest, const ManifestVersion& version);

struct HeadsReport {
  uint64_t manifest_version = 0;
  int tables_checked = 0;
  std::vector<std::string> problems;  // one line per differing head
  bool ok() const { return problems.empty(); }
};

// Recomputes the heads of `branch` from its journal and compares them with
// the stored ones.
Result<HeadsReport> VerifyHeads(const Manifest& manifest, const std::string& branch);
// Publishes the folded heads wherever they differ, as actor "loam:repair"
// (an audited graph commit). Run offline: concurrent writers would race it.
Result<HeadsReport> RepairHeads(Manifest& manifest, const std::string& branch);

}  // namespace loam
