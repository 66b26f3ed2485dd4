// Row filters and row text shared by the readers of a table (the `loam scan`
// family and the server's rows route): "COL OP VALUE" filters whose value is
// the column's canonical text, and rows as JSON objects.
#pragma once

#include <string>

#include "loam/batch.h"
#include "loam/predicate.h"
#include "loam/status.h"
#include "loam/types.h"

namespace loam::ingest {

// The typed value of `field` that `text` (its canonical text) denotes.
Result<Value> ParseFieldValue(const Field& field, const std::string& text);

// "COL OP VALUE" with OP one of = < <= > >=, or "COL is null". The value may
// be quoted with ' or ".
Result<Predicate> ParseWhere(const Schema& schema, const std::string& text);

// Appends row `row` of `batch` (of `schema`) as one JSON object and "\n".
void AppendJsonLine(const Schema& schema, const RecordBatch& batch, int64_t row, std::string* out);

}  // namespace loam::ingest
