// What xBestIndex chose for one scan of a Loam table, carried to xFilter as
// text (SQLite's idxStr): the columns used, the constraints and where their
// values sit in xFilter's argv.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sql/sql_value.h"

namespace loam::sql {

struct TablePlan {
  struct Term {
    int column = 0;
    SqlOp op = SqlOp::kEq;
    int argv = -1;  // -1: no value (IS NULL)
  };
  uint64_t columns_used = 0;  // SQLite's colUsed: bit 63 stands for 63 and above
  std::vector<Term> terms;
  int limit_argv = -1;      // LIMIT's value, when every constraint is exact
  int offset_argv = -1;     // OFFSET's (read with LIMIT: the scan stops after both)
  bool key_lookup = false;  // every key column has an equality term

  std::string Encode() const;
  static std::optional<TablePlan> Decode(const std::string& text);
};

}  // namespace loam::sql
