// Finding a delete run's rows: its filters, or its keys files parsed and
// matched against the table's key columns (docs/service.md, "Deleting rows").
#include "ingest/row_deletes.h"

#include <algorithm>
#include <filesystem>
#include <unordered_set>

#include "common/status_macros.h"
#include "format/page.h"
#include "ingest/stager_internal.h"
#include "ingest/where_clause.h"

namespace loam::ingest {

namespace {

using stager_internal::RowErrorLog;

// The key rows of a delete run's files, as AppendRowKey bytes.
class KeyReader {
 public:
  KeyReader(const RunRequest& req, Schema key_schema, const StagerOptions& options,
            StagedInput* out, StageFailure* failure)
      : req_(req),
        schema_(std::move(key_schema)),
        options_(options),
        out_(*out),
        failure_(*failure) {
    errors_.Reset(static_cast<size_t>(req_.max_errors));
  }

  Result<std::unordered_set<std::string>> ReadAll() {
    for (size_t fi = 0; fi < req_.files.size(); ++fi) {
      const std::string& file = req_.files[fi];
      const std::string name = fi < req_.file_names.size()
                                   ? req_.file_names[fi]
                                   : std::filesystem::path(file).filename().string();
      RETURN_NOT_OK(Guard(ReadFile(file, name), name));
    }
    if (invalid_ > 0) return Guard(InvalidRows(), "");
    return std::move(keys_);
  }

 private:
  Status ReadFile(const std::string& file, const std::string& name) {
    ASSIGN_OR_RETURN(std::unique_ptr<ByteSource> raw, options_.open_input(file));
    ASSIGN_OR_RETURN(std::unique_ptr<RowSource> rows,
                     OpenRowSource(std::move(raw), req_.format.value_or(GuessInputFormat(file)),
                                   schema_, req_.policy, name, req_.limits,
                                   [this, name](const Status& e) { return Reject(e, name); }));
    RunCounters& c = out_.counters;
    const uint64_t bytes_before = c.bytes_read;
    const int64_t rows_before = c.rows_read;
    const int64_t invalid_before = invalid_;
    const int64_t cap = std::min(req_.max_rows, kMaxDeleteKeys);
    int64_t valid = 0;
    std::string buf;
    while (true) {
      Result<std::optional<RecordBatch>> next = rows->Next(options_.batch_rows);
      invalid_ = invalid_before + rows->rows_rejected();
      if (!next.ok()) return invalid_ >= req_.max_errors ? InvalidRows() : next.status();
      if (*next) valid += (**next).num_rows();
      c.rows_read = rows_before + valid + (invalid_ - invalid_before);
      c.bytes_read = bytes_before + rows->bytes_read();
      if (!*next) return Status::OK();
      const RecordBatch& b = **next;
      if (c.rows_read > cap) {
        return Status::ResourceExhausted(name + ": the delete names more than " +
                                         std::to_string(cap) +
                                         " keys (the keys-per-delete limit: the run's maxRows, "
                                         "at most 1,000,000); split the keys over several deletes");
      }
      std::vector<const Column*> cols;
      for (const Column& col : b.columns) cols.push_back(&col);
      for (int64_t r = 0; invalid_ == 0 && r < b.num_rows(); ++r) {
        buf.clear();
        AppendRowKey(cols, r, &buf);
        keys_.insert(buf);
      }
      if (options_.on_batch) RETURN_NOT_OK(options_.on_batch(c));
    }
  }

  Status Reject(const Status& error, const std::string& file) {
    const int64_t n = errors_.Add(RunErrorOf(error, file));
    return n < req_.max_errors ? Status::OK() : Status::ResourceExhausted("maxErrors reached");
  }

  Status InvalidRows() const {
    const std::vector<RunError> first = errors_.First(1);
    std::string message = first.front().reason;
    if (invalid_ > 1) {
      message += " (and " + std::to_string(invalid_ - 1) + " more invalid key row" +
                 (invalid_ > 2 ? "s" : "") + "; the run's errors list each)";
    }
    return Status::InvalidArgument(std::move(message))
        .WithErrorCode(ErrorCode::kValidationFailed)
        .WithDetail("invalidRows", std::to_string(invalid_));
  }

  Status Guard(Status s, const std::string& file) {
    if (s.ok()) return s;
    failure_.file = file;
    failure_.counters = out_.counters;
    failure_.errors = errors_.First(invalid_);
    if (!failure_.errors.empty() && s.detail("invalidRows").empty()) {
      failure_.errors.push_back(RunErrorOf(s, file));
    }
    return s;
  }

  const RunRequest& req_;
  const Schema schema_;
  const StagerOptions& options_;
  StagedInput& out_;
  StageFailure& failure_;
  RowErrorLog errors_;
  int64_t invalid_ = 0;
  std::unordered_set<std::string> keys_;
};

// The addresses of the live rows of `data` whose `columns` hold one of `keys`.
Result<std::vector<int64_t>> RowsHolding(const Dataset& data,
                                         const std::vector<std::string>& columns,
                                         const std::unordered_set<std::string>& keys,
                                         const StagerOptions& options, RunCounters* counters) {
  std::vector<int64_t> found;
  ScanSpec spec;
  spec.columns = columns;
  spec.with_row_address = true;
  std::string buf;
  RETURN_NOT_OK(data.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    const std::vector<const Column*> cols = stager_internal::Columns(b, columns);
    const Column& address = b.columns[b.schema.IndexOf(Dataset::kRowAddressColumn)];
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      buf.clear();
      AppendRowKey(cols, r, &buf);
      if (keys.count(buf) != 0) found.push_back(address.GetInt64(r));
    }
    counters->deleted = static_cast<int64_t>(found.size());
    return options.on_batch ? options.on_batch(*counters) : Status::OK();
  }));
  std::sort(found.begin(), found.end());
  return found;
}

// The rows matching every filter, counted (the commit deletes them by filter
// at the same table version).
Result<int64_t> CountMatching(const Dataset& data, const std::vector<Predicate>& where,
                              const StagerOptions& options, RunCounters* counters) {
  ScanSpec spec;
  spec.columns = {where.front().column};
  spec.where = where;
  RETURN_NOT_OK(data.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    counters->rows_read += b.num_rows();
    counters->deleted = counters->rows_read;
    return options.on_batch ? options.on_batch(*counters) : Status::OK();
  }));
  return counters->deleted;
}

}  // namespace

Result<std::vector<std::string>> DeleteKeyColumns(const RunRequest& request, const TableDef& def) {
  const std::vector<std::string>& keys = request.keys.empty() ? def.keys : request.keys;
  if (keys.empty()) {
    return Status::InvalidArgument("table '" + def.name +
                                   "' declares no key columns: name the columns the keys file "
                                   "holds (--key-columns, \"keyColumns\")");
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    const int at = def.schema.IndexOf(keys[i]);
    if (at < 0) {
      return Status::InvalidArgument("key column '" + keys[i] + "' is not a column of table '" +
                                     def.name + "'");
    }
    if (std::find(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(i), keys[i]) !=
        keys.begin() + static_cast<std::ptrdiff_t>(i)) {
      return Status::InvalidArgument("key column '" + keys[i] + "' is named twice");
    }
    if (def.schema.fields[at].type.id == TypeId::kJson) {
      return Status::InvalidArgument("key column '" + keys[i] +
                                     "' is json, which cannot name rows: JSON text has many "
                                     "spellings of one value");
    }
  }
  return keys;
}

Result<std::vector<Predicate>> DeleteFilters(const RunRequest& request, const Schema& schema) {
  std::vector<Predicate> out;
  for (const std::string& text : request.where) {
    Result<Predicate> p = ParseWhere(schema, text);
    if (!p.ok()) {
      return Status::InvalidArgument("delete filter '" + text + "': " + p.status().message());
    }
    out.push_back(std::move(*p));
  }
  return out;
}

Result<StagedInput> PlanDeletes(const RunRequest& request, const TableState& table,
                                const Dataset& data, const StagerOptions& options,
                                StageFailure* failure) {
  StagedInput out;
  const auto fail = [&](Status s) {
    failure->counters = out.counters;
    return s;
  };
  if (!request.where.empty()) {
    Result<std::vector<Predicate>> where = DeleteFilters(request, table.def.schema);
    if (!where.ok()) return fail(where.status());
    Status counted = CountMatching(data, *where, options, &out.counters).status();
    if (!counted.ok()) return fail(counted);
    out.delete_where = std::move(*where);
    return out;
  }
  Result<std::vector<std::string>> columns = DeleteKeyColumns(request, table.def);
  if (!columns.ok()) return fail(columns.status());
  Schema key_schema;
  for (const std::string& k : *columns) {
    key_schema.fields.push_back(table.def.schema.fields[table.def.schema.IndexOf(k)]);
    key_schema.fields.back().nullable = false;  // a missing key names no row: an invalid key row
  }
  KeyReader reader(request, std::move(key_schema), options, &out, failure);
  ASSIGN_OR_RETURN(std::unordered_set<std::string> keys, reader.ReadAll());
  Result<std::vector<int64_t>> rows = RowsHolding(data, *columns, keys, options, &out.counters);
  if (!rows.ok()) return fail(rows.status());
  out.delete_rows = std::move(*rows);
  return out;
}

}  // namespace loam::ingest
