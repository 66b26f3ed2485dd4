// One column's values for one row group, as stored in a fragment file.
// Byte layout: docs/format/fragment.md, "Page payload".
#pragma once

#include <string>
#include <string_view>

#include "format/compression.h"
#include "loam/batch.h"

namespace loam {

// Min/max over the non-null, non-NaN values of a page; null when unknown
// (all null, JSON, or a string/binary bound longer than kMaxStatBytes).
struct PageStats {
  static constexpr size_t kMaxStatBytes = 64;
  Value min;
  Value max;
  int64_t null_count = 0;
};

// Statistics of rows [offset, offset + count) of `column`.
PageStats ComputePageStats(const Column& column, int64_t offset, int64_t count);

// Serialises rows [offset, offset + count) of `column` into the raw
// (uncompressed) page payload.
void EncodePagePayload(const Column& column, int64_t offset, int64_t count, std::string* out);
// Parses a raw payload of `rows` values of `type`; malformed bytes are DataLoss.
Result<Column> DecodePagePayload(const DataType& type, int64_t rows, std::string_view payload);

// Statistic values as bytes for the footer.
std::string EncodeStatValue(const DataType& type, const Value& v);
Result<Value> DecodeStatValue(const DataType& type, std::string_view bytes);

// A byte string identifying the values of `cols` at `row` (nulls included):
// equal strings exactly when the values are equal. Key of merges and plans.
std::string EncodeRowKey(const std::vector<const Column*>& cols, int64_t row);
// As EncodeRowKey, appended to `key` (reuse one buffer across rows).
void AppendRowKey(const std::vector<const Column*>& cols, int64_t row, std::string* key);

// Checks the values a column may hold beyond its C++ type: UTF-8 for strings,
// well-formed JSON, decimal precision, bool 0/1.
Status ValidateColumnValues(const Field& field, const Column& column);

}  // namespace loam
