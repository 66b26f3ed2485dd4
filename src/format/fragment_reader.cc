#include "format/fragment_reader.h"

#include <algorithm>
#include <cstring>

#include "common/hash.h"
#include "common/status_macros.h"
#include "common/thread_pool.h"

namespace loam {

Result<std::unique_ptr<FragmentReader>> FragmentReader::Open(ObjectStore* store, std::string key,
                                                             std::optional<uint64_t> file_size) {
  if (!file_size) {
    ASSIGN_OR_RETURN(ObjectMeta meta, store->Head(key));
    file_size = meta.size;
  }
  return Load(store, FragmentLocation{std::move(key), 0, *file_size});
}

Result<std::unique_ptr<FragmentReader>> FragmentReader::OpenAt(ObjectStore* store,
                                                               FragmentLocation where,
                                                               LruCache* cache) {
  if (cache == nullptr) return Load(store, std::move(where));
  const std::string cache_key =
      "footer:" + where.key + "@" + std::to_string(where.offset) + "#" + std::to_string(where.size);
  if (auto footer = cache->Get<FragmentFooter>(cache_key)) {
    return std::unique_ptr<FragmentReader>(
        new FragmentReader(store, std::move(where), std::move(footer)));
  }
  ASSIGN_OR_RETURN(auto reader, Load(store, std::move(where)));
  cache->Put<FragmentFooter>(cache_key, reader->footer_,
                             4096 + 256 * reader->footer_->groups.size());
  return reader;
}

Result<std::unique_ptr<FragmentReader>> FragmentReader::OpenBytes(
    std::shared_ptr<const std::string> bytes, std::string name) {
  const uint64_t size = bytes->size();
  return Load(nullptr, FragmentLocation{std::move(name), 0, size}, std::move(bytes));
}

Result<std::unique_ptr<FragmentReader>> FragmentReader::Load(
    ObjectStore* store, FragmentLocation where, std::shared_ptr<const std::string> whole) {
  auto reader =
      std::unique_ptr<FragmentReader>(new FragmentReader(store, std::move(where), nullptr));
  reader->whole_ = std::move(whole);
  const uint64_t size = reader->where_.size;
  const std::string what = reader->Describe();
  if (size < kFragmentTrailerSize) {
    return Status::DataLoss(what + " is too short to be a fragment file (" + std::to_string(size) +
                            " bytes)");
  }
  const uint64_t tail_len = std::min<uint64_t>(size, kSpeculativeTailBytes);
  ASSIGN_OR_RETURN(std::string tail, reader->ReadRange(size - tail_len, tail_len));
  if (tail.size() != tail_len) {
    return Status::DataLoss(what + " is shorter than its recorded size " + std::to_string(size));
  }
  const std::string_view trailer_bytes =
      std::string_view(tail).substr(tail_len - kFragmentTrailerSize);
  ASSIGN_OR_RETURN(Trailer t, DecodeTrailer(trailer_bytes, reader->where_.key));
  if (t.footer_offset > size || t.footer_size > size - kFragmentTrailerSize) {
    return Status::DataLoss("fragment footer of " + what + " points outside the file");
  }
  std::string footer_bytes;
  const uint64_t footer_end = size - kFragmentTrailerSize;
  if (t.footer_size <= tail_len - kFragmentTrailerSize) {
    footer_bytes = tail.substr(tail_len - kFragmentTrailerSize - t.footer_size, t.footer_size);
  } else {
    ASSIGN_OR_RETURN(footer_bytes, reader->ReadRange(footer_end - t.footer_size, t.footer_size));
  }
  ASSIGN_OR_RETURN(FragmentFooter footer,
                   DecodeFooter(footer_bytes, trailer_bytes, t, size, reader->where_.key));
  reader->footer_ = std::make_shared<const FragmentFooter>(std::move(footer));
  // A fragment no larger than the speculative read is now in memory whole:
  // its pages are served from it, so a small fragment costs one request.
  if (tail_len == size && !reader->whole_) {
    reader->whole_ = std::make_shared<const std::string>(std::move(tail));
  }
  return reader;
}

Result<std::string> FragmentReader::ReadRange(uint64_t offset, uint64_t n) const {
  if (whole_) {
    if (offset > whole_->size() || n > whole_->size() - offset) {
      return Status::DataLoss("fragment " + Describe() + ": bytes " + std::to_string(offset) + "+" +
                              std::to_string(n) + " are outside its " +
                              std::to_string(whole_->size()));
    }
    return whole_->substr(offset, n);
  }
  return store_->GetRecordedRange(where_.key, where_.offset + offset, n, "fragment " + Describe());
}

std::string FragmentReader::Describe() const {
  if (where_.offset == 0) return "'" + where_.key + "'";
  return "'" + where_.key + "' at byte " + std::to_string(where_.offset);
}

Result<Column> FragmentReader::DecodePage(const PageEntry& page, const Field& field, uint32_t rows,
                                          std::string_view stored) const {
  const std::string where = "page of column '" + field.name + "' in " + Describe();
  if (VerifyChecksums() && Hash64(stored) != page.checksum)
    return Status::DataLoss(where + ": checksum mismatch");
  std::string raw;
  RETURN_NOT_OK_CTX(Decompress(page.codec, stored, page.raw_size, &raw), where);
  auto col = DecodePagePayload(field.type, rows, raw);
  if (!col.ok()) return col.status().WithContext(where);
  if (col->null_count() != page.stats.null_count || (!field.nullable && col->null_count() > 0)) {
    return Status::DataLoss(where + ": null count disagrees with the footer");
  }
  return col;
}

Result<std::vector<Column>> FragmentReader::ReadGroupColumns(int g, const std::vector<int>& cols,
                                                             FragmentScanStats* stats) const {
  const RowGroupEntry& group = footer_->groups[g];
  // Sort requested pages by offset and coalesce runs that are adjacent on disk.
  std::vector<size_t> order(cols.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return group.pages[cols[a]].offset < group.pages[cols[b]].offset;
  });
  // `stored` views point into `runs`: reserved for the most runs there can
  // be, so no reallocation moves a short (inline-stored) string under a view.
  std::vector<std::string> runs;
  runs.reserve(cols.size());
  std::vector<std::string_view> stored(cols.size());
  uint64_t raw_bytes = 0;
  for (size_t i = 0; i < order.size();) {
    size_t j = i + 1;
    const uint64_t begin = group.pages[cols[order[i]]].offset;
    uint64_t end = begin + group.pages[cols[order[i]]].stored_size;
    while (j < order.size() && group.pages[cols[order[j]]].offset == end) {
      end += group.pages[cols[order[j]]].stored_size;
      ++j;
    }
    std::string bytes;
    if (whole_) {
      bytes = whole_->substr(begin, end - begin);
    } else {
      ASSIGN_OR_RETURN(bytes, ReadRange(begin, end - begin));
    }
    if (bytes.size() != end - begin) return Status::DataLoss(Describe() + " is truncated");
    runs.push_back(std::move(bytes));
    for (size_t k = i; k < j; ++k) {
      const PageEntry& page = group.pages[cols[order[k]]];
      stored[order[k]] =
          std::string_view(runs.back()).substr(page.offset - begin, page.stored_size);
      raw_bytes += page.raw_size;
    }
    i = j;
  }
  // Decode; pages are independent, so large groups use every core.
  std::vector<Column> out(cols.size());
  std::vector<Status> results(cols.size());
  ThreadPool::Default().ParallelFor(
      cols.size(),
      [&](size_t k) {
        Result<Column> c = DecodePage(group.pages[cols[k]], footer_->schema.fields[cols[k]],
                                      group.rows, stored[k]);
        if (c.ok()) {
          out[k] = *std::move(c);
        } else {
          results[k] = c.status();
        }
      },
      raw_bytes < (512u << 10) ? 1 : 0);  // small groups are not worth a hand-off
  for (const Status& st : results) RETURN_NOT_OK(st);
  if (stats) stats->pages_read += static_cast<int>(cols.size());
  return out;
}

Result<std::vector<std::shared_ptr<const Column>>> FragmentReader::ReadGroupColumnsCached(
    int g, const std::vector<int>& cols, FragmentScanStats* stats, LruCache* cache) const {
  std::vector<std::shared_ptr<const Column>> out(cols.size());
  std::vector<int> missing;
  std::vector<size_t> missing_at;
  auto cache_key = [&](int c) {
    return "page:" + where_.key + "@" + std::to_string(where_.offset) + "#" + std::to_string(g) +
           "#" + std::to_string(c);
  };
  for (size_t k = 0; k < cols.size(); ++k) {
    if (cache) out[k] = cache->Get<Column>(cache_key(cols[k]));
    if (!out[k]) {
      missing.push_back(cols[k]);
      missing_at.push_back(k);
    }
  }
  if (missing.empty()) return out;
  ASSIGN_OR_RETURN(std::vector<Column> decoded, ReadGroupColumns(g, missing, stats));
  for (size_t m = 0; m < missing.size(); ++m) {
    auto col = std::make_shared<const Column>(std::move(decoded[m]));
    if (cache)
      cache->Put<Column>(cache_key(missing[m]), col, static_cast<uint64_t>(col->ByteSize()) + 64);
    out[missing_at[m]] = std::move(col);
  }
  return out;
}

namespace {

template <typename T>
void FilterFixed(const Column& col, CompareOp op, int64_t x, std::vector<uint8_t>* pass) {
  const auto* data = reinterpret_cast<const T*>(col.data().data());
  std::vector<uint8_t>& keep = *pass;
  for (size_t r = 0; r < keep.size(); ++r) {
    if (!keep[r]) continue;
    if (col.IsNull(static_cast<int64_t>(r))) {
      keep[r] = 0;
      continue;
    }
    T v;
    std::memcpy(&v, data + r, sizeof(T));
    const int64_t y = static_cast<int64_t>(v);
    switch (op) {
      case CompareOp::kEq:
        keep[r] = y == x;
        break;
      case CompareOp::kLt:
        keep[r] = y < x;
        break;
      case CompareOp::kLe:
        keep[r] = y <= x;
        break;
      case CompareOp::kGt:
        keep[r] = y > x;
        break;
      default:
        keep[r] = y >= x;
        break;
    }
  }
}

// Clears the rows of `col` that fail `p`. An integer-like column compared
// with one integer (int32, int64, date, timestamp: the common filters) is
// read in place; anything else goes value by value (ValueMatches).
void FilterRows(const Predicate& p, const Column& col, std::vector<uint8_t>* pass) {
  const TypeId t = col.type().id;
  const bool integral =
      t == TypeId::kInt32 || t == TypeId::kInt64 || t == TypeId::kDate || t == TypeId::kTimestamp;
  if (integral && p.op != CompareOp::kIn && p.op != CompareOp::kIsNull && p.values.size() == 1 &&
      std::holds_alternative<int64_t>(p.values[0])) {
    const int64_t x = std::get<int64_t>(p.values[0]);
    if (col.type().FixedWidth() == 8) {
      FilterFixed<int64_t>(col, p.op, x, pass);
    } else {
      FilterFixed<int32_t>(col, p.op, x, pass);
    }
    return;
  }
  std::vector<uint8_t>& keep = *pass;
  for (size_t r = 0; r < keep.size(); ++r) {
    if (keep[r] && !ValueMatches(p, col.GetValue(static_cast<int64_t>(r)))) keep[r] = 0;
  }
}

}  // namespace

Result<std::vector<RecordBatch>> FragmentReader::Scan(const FragmentScanOptions& options,
                                                      FragmentScanStats* stats) const {
  const Schema& schema = footer_->schema;
  ASSIGN_OR_RETURN(std::vector<int> projected, ResolveColumns(options.columns));
  // Columns to fetch: projected ones, then predicate-only ones.
  std::vector<int> fetch = projected;
  std::vector<int> pred_cols;
  for (const Predicate& p : options.predicates) {
    RETURN_NOT_OK(p.Validate(schema));
    const int i = schema.IndexOf(p.column);
    auto it = std::find(fetch.begin(), fetch.end(), i);
    pred_cols.push_back(static_cast<int>(it - fetch.begin()));
    if (it == fetch.end()) fetch.push_back(i);
  }
  Schema out_schema;
  for (int i : projected) out_schema.fields.push_back(schema.fields[i]);
  if (options.with_row_offsets)
    out_schema.fields.push_back({kRowOffsetColumn, DataType::Int64(), false});

  FragmentScanStats local;
  FragmentScanStats* st = stats ? stats : &local;
  std::vector<RecordBatch> result;
  uint64_t group_start = 0;
  for (size_t g = 0; g < footer_->groups.size(); ++g) {
    const RowGroupEntry& group = footer_->groups[g];
    ++st->groups_total;
    bool may_match = true;
    for (const Predicate& p : options.predicates) {
      const PageStats& ps = group.pages[schema.IndexOf(p.column)].stats;
      if (!RangeMayMatch(p, ps.min, ps.max, ps.null_count, group.rows)) {
        may_match = false;
        break;
      }
    }
    if (!may_match) {
      ++st->groups_pruned;
      group_start += group.rows;
      continue;
    }
    ASSIGN_OR_RETURN(std::vector<Column> cols, ReadGroupColumns(static_cast<int>(g), fetch, st));
    // Exact row filter.
    std::vector<uint8_t> pass(group.rows, 1);
    for (size_t k = 0; k < options.predicates.size(); ++k) {
      FilterRows(options.predicates[k], cols[pred_cols[k]], &pass);
    }
    std::vector<int64_t> keep;
    keep.reserve(group.rows);
    for (int64_t r = 0; r < group.rows; ++r) {
      if (pass[r]) keep.push_back(r);
    }
    if (keep.empty()) {
      group_start += group.rows;
      continue;
    }
    RecordBatch batch;
    batch.schema = out_schema;
    const bool all = static_cast<int64_t>(keep.size()) == group.rows;
    for (size_t k = 0; k < projected.size(); ++k) {
      if (all) {
        batch.columns.push_back(std::move(cols[k]));
        continue;
      }
      Column c(cols[k].type());
      c.AppendRows(cols[k], keep);
      batch.columns.push_back(std::move(c));
    }
    if (options.with_row_offsets) {
      Column offsets(DataType::Int64());
      offsets.Reserve(static_cast<int64_t>(keep.size()));
      for (int64_t r : keep) offsets.AppendInt64(static_cast<int64_t>(group_start) + r);
      batch.columns.push_back(std::move(offsets));
    }
    result.push_back(std::move(batch));
    group_start += group.rows;
  }
  return result;
}

Result<std::vector<int>> FragmentReader::ResolveColumns(
    const std::vector<std::string>& names) const {
  std::vector<int> out;
  if (names.empty()) {
    for (size_t i = 0; i < footer_->schema.fields.size(); ++i) out.push_back(static_cast<int>(i));
    return out;
  }
  for (const std::string& name : names) {
    const int i = footer_->schema.IndexOf(name);
    if (i < 0) return Status::InvalidArgument("no column '" + name + "' in " + Describe());
    out.push_back(i);
  }
  return out;
}

Result<RecordBatch> FragmentReader::Take(const std::vector<uint64_t>& offsets,
                                         const std::vector<std::string>& columns,
                                         FragmentScanStats* stats, LruCache* cache) const {
  ASSIGN_OR_RETURN(std::vector<int> cols, ResolveColumns(columns));
  RecordBatch out;
  for (int c : cols) {
    out.schema.fields.push_back(footer_->schema.fields[c]);
    out.columns.emplace_back(footer_->schema.fields[c].type);
  }
  out.schema.fields.push_back({kRowOffsetColumn, DataType::Int64(), false});
  out.columns.emplace_back(DataType::Int64());
  size_t next = 0;
  uint64_t group_start = 0;
  for (size_t g = 0; g < footer_->groups.size() && next < offsets.size(); ++g) {
    const uint64_t group_end = group_start + footer_->groups[g].rows;
    if (offsets[next] >= group_end) {
      group_start = group_end;
      continue;
    }
    ASSIGN_OR_RETURN(auto data, ReadGroupColumnsCached(static_cast<int>(g), cols, stats, cache));
    for (; next < offsets.size() && offsets[next] < group_end; ++next) {
      const int64_t r = static_cast<int64_t>(offsets[next] - group_start);
      for (size_t k = 0; k < cols.size(); ++k) out.columns[k].AppendFrom(*data[k], r, 1);
      out.columns.back().AppendInt64(static_cast<int64_t>(offsets[next]));
    }
    group_start = group_end;
  }
  if (next < offsets.size()) {
    return Status::InvalidArgument("row offset " + std::to_string(offsets[next]) +
                                   " is beyond the end of " + Describe());
  }
  return out;
}

Result<RecordBatch> FragmentReader::ReadAll(const std::vector<std::string>& columns) const {
  FragmentScanOptions options;
  options.columns = columns;
  ASSIGN_OR_RETURN(std::vector<RecordBatch> parts, Scan(options));
  Schema schema;
  if (columns.empty()) {
    schema = footer_->schema;
  } else {
    for (const auto& n : columns)
      schema.fields.push_back(footer_->schema.fields[footer_->schema.IndexOf(n)]);
  }
  return ConcatenateBatches(schema, parts);
}

Status FragmentReader::Verify() const {
  std::vector<int> all;
  for (size_t i = 0; i < footer_->schema.fields.size(); ++i) all.push_back(static_cast<int>(i));
  for (size_t g = 0; g < footer_->groups.size(); ++g) {
    RETURN_NOT_OK(ReadGroupColumns(static_cast<int>(g), all, nullptr));
  }
  return Status::OK();
}

}  // namespace loam
