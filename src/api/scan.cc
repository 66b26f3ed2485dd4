#include "loam/scan.h"

#include <deque>

#include "api/workspace_access.h"
#include "common/status_macros.h"
#include "dataset/dataset.h"
#include "ingest/text_value.h"
#include "ingest/where_clause.h"

namespace loam {
namespace {

struct OpenedTable {
  Dataset data;
  const TableState* state = nullptr;
  Snapshot snap;
};

Result<OpenedTable> OpenAt(const Workspace& ws, const std::string& table, const ReadOptions& at) {
  const WorkspaceEngine& engine = internal::WorkspaceAccess::Engine(ws);
  ASSIGN_OR_RETURN(Snapshot snap, internal::SnapshotFor(engine, at));
  ASSIGN_OR_RETURN(Dataset data, engine.OpenTable(snap, table));  // NotFound naming the branch
  if (const std::shared_ptr<LruCache>& cache = internal::WorkspaceAccess::ReadCache(ws)) {
    data = data.WithCache(cache);
  }
  OpenedTable out{std::move(data), nullptr, std::move(snap)};
  out.state = out.snap.Find(table);  // the moved snapshot's own entry
  return out;
}

Result<ScanSpec> SpecOf(const Schema& schema, const std::string& table, const ScanOptions& o) {
  for (const std::string& c : o.columns) {
    if (schema.IndexOf(c) < 0) {
      return Status::InvalidArgument("ScanOptions::columns: no column '" + c + "' in '" + table +
                                     "'");
    }
  }
  if (o.limit.has_value() && *o.limit < 0) {
    return Status::InvalidArgument("ScanOptions::limit must not be negative");
  }
  ScanSpec spec;
  spec.columns = o.columns;
  spec.where = o.where;
  spec.limit = o.limit;
  return spec;
}

}  // namespace

Result<std::vector<RecordBatch>> Scan(const Workspace& ws, const std::string& table,
                                      const ScanOptions& options) {
  ASSIGN_OR_RETURN(OpenedTable t, OpenAt(ws, table, options));
  ASSIGN_OR_RETURN(ScanSpec spec, SpecOf(t.state->def.schema, table, options));
  return t.data.Scan(spec);
}

Status ScanEach(const Workspace& ws, const std::string& table, const ScanOptions& options,
                const std::function<Status(const RecordBatch&)>& each) {
  ASSIGN_OR_RETURN(OpenedTable t, OpenAt(ws, table, options));
  ASSIGN_OR_RETURN(ScanSpec spec, SpecOf(t.state->def.schema, table, options));
  return t.data.ScanEach(spec, each);
}

namespace {

// ScanEach one file at a time: each step scans the fragment at the next
// position of the version's list.
class FileByFileScan final : public ScanReader {
 public:
  FileByFileScan(OpenedTable table, ScanSpec spec)
      : table_(std::move(table)), spec_(std::move(spec)) {}

  Result<std::optional<RecordBatch>> Next() override {
    const size_t fragments = table_.data.state().fragments.size();
    if (ready_.empty() && next_ < fragments) {
      if (spec_.limit.has_value() && *spec_.limit <= 0) return std::optional<RecordBatch>();
      spec_.fragment_range = std::make_pair(next_, next_ + 1);
      ++next_;
      RETURN_NOT_OK(table_.data.ScanEach(spec_, [&](const RecordBatch& b) {
        if (b.num_rows() > 0) ready_.push_back(b);
        return Status::OK();
      }));
      if (spec_.limit.has_value()) {
        for (const RecordBatch& b : ready_) *spec_.limit -= b.num_rows();
      }
      // A file without a matching row: an empty batch, so that the caller
      // regains control between files.
      if (ready_.empty()) return std::optional<RecordBatch>(RecordBatch());
    }
    if (ready_.empty()) return std::optional<RecordBatch>();
    std::optional<RecordBatch> out(std::move(ready_.front()));
    ready_.pop_front();
    return out;
  }

 private:
  OpenedTable table_;
  ScanSpec spec_;
  size_t next_ = 0;  // the next fragment's position
  std::deque<RecordBatch> ready_;
};

}  // namespace

Result<std::unique_ptr<ScanReader>> OpenScan(const Workspace& ws, const std::string& table,
                                             const ScanOptions& options) {
  ASSIGN_OR_RETURN(OpenedTable t, OpenAt(ws, table, options));
  ASSIGN_OR_RETURN(ScanSpec spec, SpecOf(t.state->def.schema, table, options));
  for (const Predicate& p : spec.where) RETURN_NOT_OK(p.Validate(t.state->def.schema));
  return std::unique_ptr<ScanReader>(new FileByFileScan(std::move(t), std::move(spec)));
}

Result<std::optional<RecordBatch>> Lookup(const Workspace& ws, const std::string& table,
                                          const std::vector<Value>& key, const ReadOptions& at) {
  ASSIGN_OR_RETURN(OpenedTable t, OpenAt(ws, table, at));
  const std::vector<std::string>& keys = t.state->def.keys;
  if (keys.empty()) {
    return Status::InvalidArgument("table '" + table + "' declares no key; use Scan with where");
  }
  if (key.size() != keys.size()) {
    return Status::InvalidArgument("Lookup takes " + std::to_string(keys.size()) +
                                   " key value(s) for '" + table + "', not " +
                                   std::to_string(key.size()));
  }
  // The row's address from the key columns alone, then the row itself by
  // address: a point read, whose pages the read cache keeps.
  ScanSpec find;
  find.columns = keys;
  for (size_t i = 0; i < keys.size(); ++i) find.where.push_back(Predicate::Eq(keys[i], key[i]));
  find.limit = 1;
  find.with_row_address = true;
  ASSIGN_OR_RETURN(std::vector<RecordBatch> found, t.data.Scan(find));
  for (const RecordBatch& b : found) {
    if (b.num_rows() == 0) continue;
    const uint64_t address = static_cast<uint64_t>(b.columns.back().GetInt64(0));
    std::optional<RecordBatch> row;
    RETURN_NOT_OK(t.data.TakeEach({address}, ScanSpec{}, [&](const RecordBatch& r) {
      if (r.num_rows() > 0 && !row) row = r.Slice(0, 1);
      return Status::OK();
    }));
    return row;
  }
  return std::optional<RecordBatch>();
}

Result<Predicate> ParsePredicate(const Schema& schema, const std::string& text) {
  return ingest::ParseWhere(schema, text);
}

Result<Value> ParseValue(const Field& field, const std::string& text) {
  return ingest::ParseFieldValue(field, text);
}

void AppendJsonLine(const RecordBatch& batch, int64_t row, std::string* out) {
  ingest::AppendJsonLine(batch.schema, batch, row, out);
}

void AppendCanonicalText(const Column& column, int64_t row, std::string* out) {
  ingest::FormatCanonical(column, row, out);
}

}  // namespace loam
