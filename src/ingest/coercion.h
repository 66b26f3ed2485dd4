// The strict schema policy's declared coercions, and the one function that
// turns a source value (CSV text or a JSON value) into a typed column value.
//
// Without a coercion a value must be in its type's canonical form
// (text_value.h for CSV, docs/ingest.md for JSON). A coercion widens what one
// column accepts, exactly: a conversion that would lose information or that
// is ambiguous always fails.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "loam/batch.h"
#include "loam/result.h"
#include "loam/types.h"

namespace loam::ingest {
class TimePattern;
}

namespace loam::ingest {

enum class CoercionKind {
  kIntToFloat,              // integer -> float64, only when exactly representable
  kIso8601ToTimestamp,      // RFC 3339 with an explicit offset -> UTC timestamp
  kStringToInt,             // text such as " +007 " -> int32/int64
  kStringToDecimal,         // text or JSON string -> decimal, exact
  kEpochMillisToTimestamp,  // integer milliseconds since the epoch -> timestamp
  kPatternToDate,           // text in a declared layout ("%b %e %Y") -> date
  kPatternToTimestamp,      // text in a declared layout and zone -> timestamp
};
std::string_view CoercionKindName(CoercionKind kind);
Result<CoercionKind> ParseCoercionKind(std::string_view name);

struct Coercion {
  std::string source_column;
  std::string target_column;
  CoercionKind kind = CoercionKind::kIntToFloat;
  // The pattern kinds only: the layout (time_pattern.h), the zone of texts
  // without %z, and the layout compiled once (ToJson keeps the two strings).
  std::string pattern;
  std::string time_zone;
  std::shared_ptr<const TimePattern> compiled;
  friend bool operator==(const Coercion& a, const Coercion& b) {
    return a.source_column == b.source_column && a.target_column == b.target_column &&
           a.kind == b.kind && a.pattern == b.pattern && a.time_zone == b.time_zone;
  }
  // A pattern coercion with its layout compiled (refused when ambiguous).
  static Result<Coercion> WithPattern(std::string column, CoercionKind kind, std::string pattern,
                                      std::string time_zone);
};

// An input column loaded into a table column of another name.
struct ColumnRename {
  std::string source_column;
  std::string target_column;
  friend bool operator==(const ColumnRename&, const ColumnRename&) = default;
};

// {"mode":"strict","coercions":[{"sourceColumn":..,"targetColumn":..,"kind":..}],
//  "columnMap":[{"sourceColumn":..,"targetColumn":..}]}
struct SchemaPolicy {
  // A coercion converts what loads into its target column; one whose
  // source names another input column maps that column there too.
  std::vector<Coercion> coercions;
  // Input columns loaded into table columns of other names ("columnMap",
  // written only when not empty).
  std::vector<ColumnRename> renames;
  // Mode "additive" (service pipelines, where an admin allowed it on the
  // table): the declared nullable `add_columns` are accepted in the input,
  // and those the table lacks are added by the run's own commit. Nothing
  // else changes: no type changes, drops or renames.
  bool additive = false;
  std::vector<Field> add_columns;

  static Result<SchemaPolicy> FromJson(std::string_view text);
  std::string ToJson() const;
  // Adds "COLUMN:KIND", or "COLUMN:patternToDate:PATTERN",
  // "COLUMN:patternToTimestamp:PATTERN[@ZONE]" (the --coerce flag).
  Status AddFlag(std::string_view flag);
  // Targets exist, each kind fits its column's type, one coercion per column;
  // declared added columns are new or already there with their type.
  Status CheckAgainst(const Schema& table) const;
  // The table's schema and then the declared columns it lacks (additive).
  Schema Extend(const Schema& table) const;
  // The declared columns `table` lacks.
  std::vector<Field> NewColumns(const Schema& table) const;
  // The coercion declared for `column`, or nullptr.
  const Coercion* For(std::string_view column) const;

  // Every mapping: the renames, then the coercions whose source differs
  // from their target (column_map.cc).
  std::vector<ColumnRename> Mappings() const;
  // The table column an input column loads into: its mapping's target,
  // else its own name.
  std::string TargetOf(std::string_view input_column) const;
  // Each source mapped once, each target in `table` and reached from one
  // source only.
  Status CheckMappings(const Schema& table) const;
  // "SOURCE=TARGET" (the --map flag).
  Status AddRenameFlag(std::string_view flag);
};

// How a value arrived. CSV fields are text (quoted or not: an empty unquoted
// field is missing); JSON values carry their JSON kind, and kJsonRaw is the
// JSON text of any value bound for a json column.
enum class ValueForm {
  kCsvField,
  kCsvQuotedField,
  kJsonString,
  kJsonNumber,
  kJsonBool,
  kJsonNull,
  kJsonRaw
};

// Appends the value to `out` (a column of `field`), through `coercion` when
// not null. On error nothing is appended and the message says what was
// expected, never repeating the value.
Status AppendValue(const Field& field, const Coercion* coercion, std::string_view text,
                   ValueForm form, Column* out);

}  // namespace loam::ingest
