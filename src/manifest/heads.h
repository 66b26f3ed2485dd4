// Head rows: the durable answer to "what is current" for one table identity
// (`table_head:<sid>`) or one branch's graph (`graph_head:<branch>`).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

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

struct GraphHead {
  std::string branch;         // "" = main
  std::string head_commit;    // graph commit id
  std::string parent_commit;  // "" for the first commit
  int64_t manifest_version = 0;

  friend bool operator==(const GraphHead&, const GraphHead&) = default;
};

ManifestRow GraphHeadRow(const GraphHead& g);
Result<GraphHead> ParseGraphHead(const ManifestRow& row);

// An incarnation baseline (`head_baseline:<sid>:<inc>`, a journal row): one
// identity's head as `loam migrate` built it from the journal. The fold
// starts an identity from its baseline; the columns and payload are a head's.
ManifestRow HeadBaselineRow(const TableHead& h);
Result<TableHead> ParseHeadBaseline(const ManifestRow& row);

// xxh3-128 (hex) of the heads' rows in stable-id order, then the graph heads'
// rows in branch order: the digests a heads marker records.
std::string HeadSetDigest(const std::map<int64_t, TableHead>& tables,
                          const std::map<std::string, GraphHead>& graphs = {});

}  // namespace loam
