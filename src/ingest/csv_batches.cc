#include "ingest/csv_batches.h"

#include <algorithm>

#include "common/status_macros.h"
#include "format/json_check.h"
#include "ingest/row_source.h"

namespace loam::ingest {
namespace {

std::string ColumnList(const Schema& s) {
  std::string out;
  for (const Field& f : s.fields) out += (out.empty() ? "" : ", ") + f.name;
  return out;
}

Status Prefixed(const std::string& source, const Status& s) {
  return s.WithMessage(source + ": " + s.message());
}

}  // namespace

Result<CsvBatches> CsvBatches::Open(ByteSource& input, const Schema& table, std::string source,
                                    CsvOptions options, const SchemaPolicy& policy) {
  RETURN_NOT_OK(policy.CheckAgainst(table));
  auto reader = std::make_unique<CsvReader>(input, options);
  Result<std::vector<std::string>> header = reader->ReadHeader();
  if (!header.ok()) return Prefixed(source, header.status());
  CsvBatches out(std::move(reader), table, std::move(source));
  out.max_json_depth_ = options.max_json_depth;
  out.batch_bytes_ = options.batch_bytes;
  out.source_of_.assign(table.fields.size(), -1);
  for (const Field& f : table.fields) {
    const Coercion* c = policy.For(f.name);
    out.coercion_of_.push_back(c ? std::optional<Coercion>(*c) : std::nullopt);
  }
  // Without a header the request names the columns: errors say so.
  const int64_t line = out.reader_->header_line();
  const std::string in = line > 0 ? "the file" : "the named columns";
  for (size_t i = 0; i < header->size(); ++i) {
    const std::string& name = (*header)[i];
    const std::string target = policy.TargetOf(name);
    const int at = table.IndexOf(target);
    const std::string where =
        out.source_ + (line > 0 ? ": line " + std::to_string(line) + ", column " : ": column ") +
        std::to_string(i + 1) + ": ";
    if (at < 0) {
      return Status::InvalidArgument(where + "column '" + name + "' is not in the table (" +
                                     ColumnList(table) + "); remove it from " + in +
                                     ", map it to a column, or add it to the table");
    }
    if (const int other = out.source_of_[at]; other >= 0) {
      return Status::InvalidArgument(where + "column '" + name + "' loads column '" + target +
                                     "', as column " + std::to_string(other + 1) + " ('" +
                                     (*header)[static_cast<size_t>(other)] +
                                     "') does; remove one or map it elsewhere");
    }
    out.source_of_[at] = static_cast<int>(i);
  }
  for (size_t c = 0; c < table.fields.size(); ++c) {
    const Field& f = table.fields[c];
    if (out.source_of_[c] < 0 && !f.nullable) {
      return Status::InvalidArgument(
          out.source_ + (line > 0 ? ": line " + std::to_string(line) : "") + ": column '" + f.name +
          "' (" + f.type.ToString() + ", not null) is missing from " +
          (line > 0 ? "the header" : "the named columns") + "; add it to " + in);
    }
  }
  return out;
}

// The first batch has no predecessor to be sized like: once it holds
// kSampleRows rows, room for `max_rows` rows like them.
// At most kMaxSampleReserve bytes per column: wide sample rows in a short
// file must not reserve gigabytes.
void CsvBatches::ReserveLikeSample(RecordBatch* batch, size_t max_rows) {
  for (Column& c : batch->columns) {
    const double per_row = static_cast<double>(c.data().size()) / kSampleRows;
    const double want = per_row * static_cast<double>(max_rows) * 1.1;
    c.Reserve(0, static_cast<int64_t>(std::min(want, kMaxSampleReserve)));
  }
}

Result<std::optional<RecordBatch>> CsvBatches::Next(size_t max_rows) {
  RecordBatch batch(table_);
  // Sized like the previous batch: one allocation per column, no regrowth.
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    batch.columns[c].Reserve(static_cast<int64_t>(max_rows),
                             c < var_bytes_.size() ? var_bytes_[c] : 0);
  }
  CsvRecord rec;
  row_lines_.clear();
  const uint64_t batch_start = reader_->bytes_read();
  while (static_cast<size_t>(batch.num_rows()) < max_rows &&
         reader_->bytes_read() - batch_start < batch_bytes_) {
    Result<bool> more = reader_->Next(&rec);
    if (!more.ok() && reject_ && !more.status().detail("fieldCount").empty()) {
      // A record with another number of fields, read whole: one invalid row.
      ++rejected_;
      RETURN_NOT_OK(reject_(RowError(Prefixed(source_, more.status()), rec.line, rec.offset, "")));
      continue;
    }
    if (!more.ok()) return Prefixed(source_, more.status());
    if (!*more) {
      ended_ = true;
      break;
    }
    const int64_t before = batch.columns.empty() ? 0 : batch.columns[0].length();
    bool rejected = false;
    for (size_t c = 0; c < table_.fields.size(); ++c) {
      const Field& f = table_.fields[c];
      Column& col = batch.columns[c];
      const int at = source_of_[c];
      if (at < 0) {
        col.AppendNull();
        continue;
      }
      const std::optional<Coercion>& coercion = coercion_of_[c];
      if (f.type.id == TypeId::kJson && !coercion && !rec.fields[at].empty() &&
          CheckJsonDocument(rec.fields[at], max_json_depth_).outcome ==
              JsonCheck::Outcome::kTooDeep) {
        // A limit ends the run, whatever the error policy.
        return Status::ResourceExhausted(
            source_ + ": line " + std::to_string(rec.line) + ", column " + std::to_string(at + 1) +
            " ('" + f.name + "', json): nested deeper than " + std::to_string(max_json_depth_) +
            " levels; flatten the value or raise the depth limit");
      }
      Status s =
          AppendValue(f, coercion ? &*coercion : nullptr, rec.fields[at],
                      rec.quoted[at] ? ValueForm::kCsvQuotedField : ValueForm::kCsvField, &col);
      if (!s.ok()) {
        Status positioned =
            RowError(Status::InvalidArgument(source_ + ": line " + std::to_string(rec.line) +
                                             ", column " + std::to_string(at + 1) + " ('" + f.name +
                                             "', " + f.type.ToString() + "): " + s.message()),
                     rec.line, rec.offset, f.name);
        if (!reject_) return positioned;
        for (Column& col_done : batch.columns) col_done.Truncate(before);  // drop the partial row
        ++rejected_;
        RETURN_NOT_OK(reject_(positioned));
        rejected = true;
        break;
      }
    }
    if (rejected) continue;
    row_lines_.push_back(rec.line);
    ++rows_;
    if (var_bytes_.empty() && batch.num_rows() == kSampleRows) ReserveLikeSample(&batch, max_rows);
  }
  // A batch's bytes can all be rows left out: that is no end of input.
  if (batch.num_rows() == 0) {
    return ended_ ? std::optional<RecordBatch>() : std::optional<RecordBatch>(std::move(batch));
  }
  var_bytes_.resize(batch.columns.size());
  for (size_t c = 0; c < batch.columns.size(); ++c) {
    var_bytes_[c] = static_cast<int64_t>(batch.columns[c].data().size() * 9 / 8);
  }
  return std::optional<RecordBatch>(std::move(batch));
}

}  // namespace loam::ingest
