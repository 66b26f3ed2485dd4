// How Loam values look in SQL (docs/sql.md, "Types"), and which Loam
// predicates an SQL comparison of a column with a value may be pushed down
// as.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "loam/batch.h"
#include "loam/predicate.h"
#include "loam/types.h"

namespace loam::sql {

// The type a column is declared with in SQL: INTEGER (bool, int32, int64),
// REAL (float64), BLOB (binary) or TEXT (the rest, as canonical text).
const char* SqlTypeOf(const DataType& type);

// Row `row` of `column` as an SQL value.
void ResultValue(sqlite3_context* ctx, const Column& column, int64_t row);

// A timestamp's canonical text (µs since the epoch; docs/ingest.md).
std::string TimestampText(int64_t micros);

enum class SqlOp { kEq, kLt, kLe, kGt, kGe, kIsNull, kIn };

// Loam predicates on `field` that every row for which SQLite finds
// `field OP values` true also meets: the scan they narrow never drops a row
// the SQL answer holds. `exact`: they hold for those rows alone, so SQLite
// need not check again. Empty `where`: nothing to push down.
struct Pushdown {
  std::vector<Predicate> where;
  bool exact = false;
};
Pushdown PushdownOf(const Field& field, SqlOp op, const std::vector<sqlite3_value*>& values);

// Date and timestamp columns compare as text in SQL; their text sorts as
// their values only for years 0000 to 9999. A pushdown on such a column
// holds within [kFirstDay, kEndDay) (days since 1970-01-01); the rows
// outside are read by scans of their own.
inline constexpr int64_t kFirstDay = -719528;  // 0000-01-01
inline constexpr int64_t kEndDay = 2932897;    // 10000-01-01
inline constexpr int64_t kMicrosPerDay = 86'400'000'000LL;
bool IsDateLike(const DataType& type);
// The first instant (day or µs) of `day` in `type`'s unit.
int64_t DayStart(const DataType& type, int64_t day);

}  // namespace loam::sql
