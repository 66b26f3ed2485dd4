// Reading a table: projected, filtered scans that return record batches, and
// point look-ups by the declared key, at a branch's current state or at any
// version still inside the workspace's time-travel window.
//
//   loam::ScanOptions scan;
//   scan.columns = {"id", "amount"};
//   scan.where = {loam::Predicate::Gt("amount", int64_t{100})};
//   auto batches = loam::Scan(*ws, "events", scan);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loam/batch.h"
#include "loam/predicate.h"
#include "loam/result.h"
#include "loam/status.h"
#include "loam/workspace.h"

namespace loam {

struct ScanOptions : ReadOptions {
  std::vector<std::string> columns;  // in this order; empty: every column
  std::vector<Predicate> where;      // all must hold
  std::optional<int64_t> limit;      // at most this many rows
};

// The matching rows, in the table's order; an index on a filtered column
// narrows the files read. InvalidArgument names an unknown column or a
// predicate whose values do not fit its column.
Result<std::vector<RecordBatch>> Scan(const Workspace& ws, const std::string& table,
                                      const ScanOptions& options = {});

// The same rows streamed to `each` one file at a time, so memory holds one
// file's rows; a non-OK status from `each` ends the scan with it.
Status ScanEach(const Workspace& ws, const std::string& table, const ScanOptions& options,
                const std::function<Status(const RecordBatch&)>& each);

// The same rows pulled one file at a time: Next gives the next batch (one
// with no rows when a file held no matching row, so the caller regains
// control after each file), or nullopt once the scan is over. The reader
// holds the state it opened (later commits do not change what it returns)
// and reads a file only when asked, so a caller that stops early reads no
// further.
class ScanReader {
 public:
  virtual ~ScanReader() = default;
  virtual Result<std::optional<RecordBatch>> Next() = 0;
};
Result<std::unique_ptr<ScanReader>> OpenScan(const Workspace& ws, const std::string& table,
                                             const ScanOptions& options = {});

// The row whose declared key equals `key` (one value per key column, in the
// declared order), or nullopt. InvalidArgument when the table declares no key.
Result<std::optional<RecordBatch>> Lookup(const Workspace& ws, const std::string& table,
                                          const std::vector<Value>& key,
                                          const ReadOptions& at = {});

// Filters and values as text, the way `loam scan --where` and `loam get` take
// them (docs/cli.md): "COLUMN OP VALUE" with OP one of = < <= > >=, or
// "COLUMN is null"; the value may be quoted with ' or ".
Result<Predicate> ParsePredicate(const Schema& schema, const std::string& text);
// The value of `field` its canonical text (docs/ingest.md) denotes.
Result<Value> ParseValue(const Field& field, const std::string& text);

// Rows as text: row `row` as one JSON object and "\n" (JSON Lines, as
// `loam export` writes them), and one value's canonical text (nothing for
// null; parsing it back gives the same value), each appended to `out`.
void AppendJsonLine(const RecordBatch& batch, int64_t row, std::string* out);
void AppendCanonicalText(const Column& column, int64_t row, std::string* out);

}  // namespace loam
