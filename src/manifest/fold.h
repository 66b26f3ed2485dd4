// The journal fold: heads recomputed by replaying identity-bearing journal
// events in commit order. It is the reference (tests, `heads verify`,
// `heads repair`), never a hot path: its cost grows with history.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manifest/manifest.h"

namespace loam {

struct FoldedHeads {
  std::map<int64_t, TableHead> tables;      // by stable id, tombstoned ones included
  std::map<std::string, GraphHead> graphs;  // by branch ("" = main)
};

// DataLoss when an event names an identity that was never incarnated, or
// follows its tombstone.
Result<FoldedHeads> FoldJournal(const std::vector<ManifestRow>& journal);

struct HeadsReport {
  uint64_t manifest_version = 0;
  int tables_checked = 0;
  std::vector<std::string> problems;    // one line per finding
  std::vector<std::string> changes;     // repair: what it rewrote
  int pending_sidecars = 0;             // writes awaiting recovery (not run by verify)
  int unindexed_journal_fragments = 0;  // the journal index's uncovered tail
  bool ok() const { return problems.empty(); }
};

// A version's stored heads, read leniently (an unreadable partition, a
// malformed, misplaced or duplicate row is a problem, not an error), next
// to the fold of its journal. Reads only: nothing is recovered or published.
struct HeadsInspection {
  ManifestVersion version;
  std::vector<ManifestRow> journal;
  FoldedHeads folded;
  FoldedHeads stored;
  std::vector<ManifestRow> catalog;   // the catalog partition's rows
  std::vector<std::string> problems;  // heads that differ from the fold (repairable)
  // Baselines against their marker: journal rows, which no commit can mend.
  std::vector<std::string> baseline_problems;
};
// At the branch's latest version unless `version` is given. A journal with a
// heads marker also has its baselines checked against the marker's digest.
Result<HeadsInspection> InspectHeads(const Manifest& manifest, const std::string& branch,
                                     std::optional<uint64_t> version = std::nullopt);

// The heads stored at `v` (every head partition, the catalog's aside),
// read leniently: what is unreadable, misplaced or duplicated is a problem.
FoldedHeads ReadStoredHeads(const Manifest& manifest, const ManifestVersion& v,
                            std::vector<std::string>* problems);

// The marker's findings: its baselines against its digest and count.
std::vector<std::string> CheckBaselines(const std::vector<ManifestRow>& journal);

// One line per head (table or graph) that differs between the fold and the
// stored heads; tombstoned heads are compared like live ones.
std::vector<std::string> CompareHeads(const FoldedHeads& folded, const FoldedHeads& stored);

// A plan that rewrites every head partition of `branch` from the fold.
PublishPlan HeadsRepairPlan(const HeadsInspection& inspection, const std::string& branch);

}  // namespace loam
