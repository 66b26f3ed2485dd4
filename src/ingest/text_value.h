// The one canonical text form of each type, as CSV carries it
// (docs/ingest.md, "Canonical text forms"). Anything else is an error that
// says what the column expects; nothing is guessed.
#pragma once

#include <string>
#include <string_view>

#include "loam/batch.h"
#include "loam/status.h"
#include "loam/types.h"

namespace loam::ingest {

// Appends the value `text` denotes to `out` (a column of `type`). An empty
// unquoted field is a missing value: null, or an error for a non-nullable
// field. On error nothing is appended and the message says what was
// expected, without repeating the offending value (runs never keep it).
Status AppendCanonical(const Field& field, std::string_view text, bool quoted, Column* out);

// The inverse: appends the canonical text of row `row` of `column` to `out`
// (nothing for null). Parsing the text back yields the same value.
void FormatCanonical(const Column& column, int64_t row, std::string* out);
// The value's JSON representation (docs/ingest.md): numbers for integers,
// floats and decimals, strings for text-like types, the document for json.
void FormatJsonValue(const Column& column, int64_t row, std::string* out);

// Exposed for tests and coercions.
Result<int64_t> ParseCanonicalInt(std::string_view text, int64_t min, int64_t max);
Result<int32_t> ParseCanonicalDate(std::string_view text);       // days since 1970-01-01
Result<int64_t> ParseCanonicalTimestamp(std::string_view text);  // µs since the epoch, UTC
Result<Int128> ParseCanonicalDecimal(std::string_view text, int precision, int scale);

}  // namespace loam::ingest
