// Head rows: the durable answer to "what is current" for one table identity
// (`table_head:<sid>`) or one branch's graph (`graph_head:<branch>`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "manifest/rows.h"

namespace loam {

enum class HeadState { kLive, kTombstoned };

struct TableHead {
  HeadState state = HeadState::kLive;
  int64_t sid = 0;
  int64_t inc = 0;
  std::string schema_hash;
  std::string head_commit;  // graph commit that last wrote this head
  std::string table_key;    // current name (last name when tombstoned)
  std::string location;     // table dataset directory
  int64_t table_version = 0;
  std::string owner_branch;          // branch whose fork holds table_version ("" = main)
  std::string owner_ref;             // that branch's id (its fork's name; "" = main)
  std::optional<int64_t> row_count;  // null when tombstoned

  friend bool operator==(const TableHead&, const TableHead&) = default;
};

ManifestRow TableHeadRow(const TableHead& h);
// DataLoss naming the row when any field is missing, mistyped or inconsistent.
Result<TableHead> ParseTableHead(const ManifestRow& row);

// The pairing rule of one commit (`journal` rows it adds, `upserts` of
// mutable rows): every journal row about a table carries the table's stable
// id and incarnation and comes with that table's head; a table version or
// tombstone agrees with the head on incarnation, version and state, and any
// other table row on incarnation (a migration's baselines may name an
// earlier incarnation). InvalidArgument naming the row otherwise.
Status CheckHeadPairing(const std::vector<ManifestRow>& journal,
                        const std::vector<ManifestRow>& upserts);

struct GraphHead {
  std::string branch;         // "" = main
  std::string head_commit;    // graph commit id
  std::string parent_commit;  // "" for the first commit
  int64_t manifest_version = 0;
  // Only merges (and maintenance) change the branch's tables: loads, deletes,
  // reverts, creates, renames and drops are refused (docs/branches.md).
  bool protected_branch = false;

  friend bool operator==(const GraphHead&, const GraphHead&) = default;
};

ManifestRow GraphHeadRow(const GraphHead& g);
Result<GraphHead> ParseGraphHead(const ManifestRow& row);

// An incarnation baseline (`head_baseline:<sid>:<inc>`, a journal row): one
// identity's head as `loam migrate` built it from the journal. The fold
// starts an identity from its baseline; the columns and payload are a head's.
ManifestRow HeadBaselineRow(const TableHead& h);
Result<TableHead> ParseHeadBaseline(const ManifestRow& row);

// A branch's heads marker (`heads_marker:<format>`, a journal row written by
// `loam migrate`; docs/format/manifest.md): content-scoped (no branch, no
// ref incarnation), so a branch forked later inherits it unchanged.
struct HeadsMarker {
  int workspace_format = 0;
  uint32_t heads_format = 0;      // the head directory format published
  uint64_t source_version = 0;    // the pinned tip the fold was taken at
  uint64_t produced_version = 0;  // the migration commit (from the row's commit metadata)
  int64_t head_count = 0;         // baselines: one per identity
  std::string baseline_digest;    // HeadSetDigest of the baselines
  std::string head_digest;        // HeadSetDigest of the heads and graph heads published
  std::string migration;          // the migration's token
};

ManifestRow HeadsMarkerRow(const HeadsMarker& m);
// DataLoss unless every field is there and consistent: a known format, a
// source version before the produced one, a count of zero or more, digests of
// 32 hex digits.
Result<HeadsMarker> ParseHeadsMarker(const ManifestRow& row);

// xxh3-128 (hex) of the heads' rows in stable-id order, then the graph heads'
// rows in branch order: the digests a heads marker records.
std::string HeadSetDigest(const std::map<int64_t, TableHead>& tables,
                          const std::map<std::string, GraphHead>& graphs = {});

}  // namespace loam
