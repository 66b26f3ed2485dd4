// Matching a run's keys with the table's: in memory (the run's keys in a
// hash map, the table's key columns scanned against it) or, past the key
// memory bound, spilled (both sides sorted on scratch storage and joined).
#include <algorithm>

#include "common/status_macros.h"
#include "common/thread_pool.h"
#include "format/page.h"
#include "ingest/stager_internal.h"

namespace loam::ingest::stager_internal {

std::vector<std::pair<size_t, size_t>> Stager::ShardRanges() const {
  const std::vector<Fragment>& frags = data_.state().fragments;
  const size_t shards = std::min<size_t>(frags.size(), ThreadPool::Default().workers() + 1);
  std::vector<std::pair<size_t, size_t>> ranges;
  uint64_t rows = 0;
  for (const Fragment& f : frags) rows += f.live_rows();
  for (size_t i = 0, first = 0; i < shards; ++i) {
    size_t last = first;
    for (uint64_t took = 0; last < frags.size() && (i + 1 == shards || took * shards < rows);
         ++last) {
      took += frags[last].live_rows();
    }
    ranges.push_back({first, last});
    first = last;
  }
  return ranges;
}

Status Stager::MatchTableRows() {
  const std::vector<std::pair<size_t, size_t>> ranges = ShardRanges();
  const Dataset table = MatchView();
  std::vector<ShardMatches> found(ranges.size());
  ThreadPool::Default().ParallelFor(
      ranges.size(), [&](size_t i) { found[i].status = MatchShard(table, ranges[i], &found[i]); });
  size_t matched = 0;
  for (const ShardMatches& f : found) {
    RETURN_NOT_OK(f.status);
    matched += f.rows.size();
  }
  existing_.reserve(matched);
  for (const ShardMatches& f : found) {
    const uint64_t base = table_keys_.size();
    table_keys_ += f.keys;
    for (const TableMatch& m : f.rows) {
      // The run's entry for the key points at the table row: no second
      // map, whose fresh pages cost more than the lookups.
      Seen* at = seen_.Find(m.key);
      if (at == nullptr) return Status::Internal("a matched key is not the run's");
      const bool fresh = at->existing == Seen::kNoRow;
      if (fresh) {
        at->existing = static_cast<uint32_t>(existing_.size());
        existing_.emplace_back();
        if (keyed_append_) matched_.push_back(at);
        if (!reparse_) {  // and so does the kept row, for Stage to read directly
          if (row_existing_.size() <= at->batch) row_existing_.resize(at->batch + 1);
          std::vector<uint32_t>& kept = row_existing_[at->batch];
          if (kept.empty()) kept.assign(retained_[at->batch].num_rows(), Seen::kNoRow);
          kept[at->row] = at->existing;
        }
      }
      Existing& e = existing_[at->existing];
      if (fresh) {
        e.address = m.address;
        e.key_at = base + m.key_at;
        e.key_size = m.key_size;
        e.same = m.same;
      } else {
        std::vector<uint64_t>& all = dups_.FindOrInsert(m.key);
        if (all.empty()) all.push_back(e.address);
        all.push_back(m.address);
      }
      e.rows++;
      e.content = m.content;
    }
  }
  meter_.Add(existing_.capacity() * sizeof(Existing) + table_keys_.capacity() +
             matched_.capacity() * sizeof(Seen*));
  return Status::OK();
}

Status Stager::JoinSpilledKeys() {
  const Dataset table = MatchView();
  const bool with_table = upsert_ || keyed_append_;  // a replace checks the run only
  const std::vector<std::pair<size_t, size_t>> ranges =
      with_table ? ShardRanges() : std::vector<std::pair<size_t, size_t>>();
  std::vector<KeySpill::TableSink*> sinks = spill_->TableSinks(ranges.size());
  std::vector<Status> scanned(ranges.size());
  ThreadPool::Default().ParallelFor(ranges.size(), [&](size_t i) {
    ScanSpec keys_only;
    keys_only.columns = keys_;
    keys_only.with_row_address = true;
    keys_only.fragment_range = ranges[i];
    std::string buf;
    scanned[i] = table.ScanEach(keys_only, [&](const RecordBatch& b) {
      const auto kc = Columns(b, keys_);
      const Column& address = b.columns.back();
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        RETURN_NOT_OK(sinks[i]->Add(RowHash(kc, r, &buf), address.GetInt64(r)));
      }
      return Status::OK();
    });
  });
  for (const Status& s : scanned) RETURN_NOT_OK(Guard(s, ""));
  Result<KeySpill::Joined> joined = spill_->Join(upsert_, kNamedRows);
  RETURN_NOT_OK(Guard(joined.status(), ""));
  if (joined->duplicate) {
    const auto [first, again] = *joined->duplicate;
    return Guard(DuplicateKeyError(first, again), names_[again.file]);
  }
  if (keyed_append_) return Guard(RefuseTableKeys(joined->matched, joined->first_few), "");
  if (!upsert_) return Status::OK();
  return Guard(
      spill_->FillMatches(
          kFillChunk, [&](std::vector<KeyMatch>& part) { return HashSpilledMatches(table, part); }),
      "");
}

Status Stager::HashSpilledMatches(const Dataset& table, std::vector<KeyMatch>& part) const {
  std::vector<uint64_t> addresses;
  addresses.reserve(part.size());
  for (const KeyMatch& m : part) addresses.push_back(m.address);
  ScanSpec full;
  full.columns = columns_;
  std::string buf;
  size_t next = 0;
  RETURN_NOT_OK(table.TakeEach(addresses, full, [&](const RecordBatch& b) {
    const auto ac = Columns(b, columns_), kc = Columns(b, keys_);
    for (int64_t r = 0; r < b.num_rows() && next < part.size(); ++r, ++next) {
      part[next].content = RowHash(ac, r, &buf);
      buf.clear();
      AppendRowKey(kc, r, &buf);
      part[next].key_check = KeyCheck(buf);
    }
    return Status::OK();
  }));
  if (next != part.size()) {
    return Status::DataLoss("a matched table row was gone when it was read");
  }
  return Status::OK();
}

Status Stager::MatchShard(const Dataset& table, std::pair<size_t, size_t> range,
                          ShardMatches* out) const {
  std::string buf;
  ScanSpec keys_only;
  keys_only.columns = keys_;
  keys_only.with_row_address = true;
  keys_only.fragment_range = range;
  RETURN_NOT_OK(table.ScanEach(keys_only, [&](const RecordBatch& b) {
    const auto kc = Columns(b, keys_);
    const Column& address = b.columns.back();
    // Most table rows miss: a chunk's probes are prefetched, then tested
    // on control bytes, and only candidates are compared.
    ProbeChunk hashes;
    std::array<int64_t, kProbeChunk> candidates;
    for (int64_t first = 0; first < b.num_rows(); first += kProbeChunk) {
      const int64_t n = std::min<int64_t>(kProbeChunk, b.num_rows() - first);
      HashAndPrefetch(kc, first, n, seen_, /*for_insert=*/false, &hashes, &buf);
      size_t maybe = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (seen_.MayContain(hashes[i])) candidates[maybe++] = i;
      }
      for (size_t j = 0; j < maybe; ++j) {
        const int64_t i = candidates[j], r = first + i;
        if (seen_.Find(hashes[i]) == nullptr) continue;
        buf.clear();
        AppendRowKey(kc, r, &buf);
        TableMatch m;
        m.key = hashes[i];
        m.address = static_cast<uint64_t>(address.GetInt64(r));
        m.key_at = out->keys.size();
        m.key_size = static_cast<uint32_t>(buf.size());
        out->keys += buf;
        out->rows.push_back(m);
      }
    }
    return Status::OK();
  }));
  if (keyed_append_) return Status::OK();  // the key alone refuses the run
  return reparse_ ? HashMatchedRows(table, out) : CompareMatchedRows(table, out);
}

Status Stager::RefuseTableKeys(size_t refused, const std::vector<RowPos>& first) const {
  if (refused == 0) return Status::OK();
  std::string named;
  for (size_t i = 0; i < first.size(); ++i) {
    named += (i ? ", " : "") + names_[first[i].file] + " line " + std::to_string(first[i].line);
  }
  if (refused > first.size()) named += " and " + std::to_string(refused - first.size()) + " more";
  return Status::InvalidArgument("duplicate key: " + std::to_string(refused) +
                                 " row(s) of the run have a key (" + JoinNames(keys_) +
                                 ") that table '" + table_.def.name + "' already holds: " + named +
                                 "; append only new keys, or upsert")
      .WithErrorCode(ErrorCode::kDuplicateKey);
}

Status Stager::CompareMatchedRows(const Dataset& table, ShardMatches* out) const {
  std::vector<size_t> open(out->rows.size());
  for (size_t i = 0; i < open.size(); ++i) open[i] = i;
  std::string mine, theirs;
  for (int c : compare_order_) {
    if (open.empty()) break;
    std::vector<uint64_t> addresses;
    for (size_t i : open) addresses.push_back(out->rows[i].address);
    ScanSpec one;
    one.columns = {columns_[c]};
    std::vector<size_t> still;
    size_t next = 0;
    RETURN_NOT_OK(table.TakeEach(addresses, one, [&](const RecordBatch& b) {
      const std::vector<const Column*> table_col = {&b.columns[0]};
      for (int64_t r = 0; r < b.num_rows() && next < open.size(); ++r, ++next) {
        TableMatch& m = out->rows[open[next]];
        const Seen* at = seen_.Find(m.key);
        const std::vector<const Column*> run_col = {&retained_[at->batch].columns[c]};
        mine.clear();
        theirs.clear();
        AppendRowKey(table_col, r, &mine);
        AppendRowKey(run_col, at->row, &theirs);
        if (mine == theirs) {
          still.push_back(open[next]);
        } else {
          m.same = Sameness::kChanged;
        }
      }
      return Status::OK();
    }));
    if (next != open.size()) {
      return Status::DataLoss("a matched table row was gone when its columns were read");
    }
    open.swap(still);
  }
  for (size_t i : open) out->rows[i].same = Sameness::kSame;
  return Status::OK();
}

Status Stager::HashMatchedRows(const Dataset& table, ShardMatches* out) const {
  std::vector<uint64_t> addresses;
  for (const TableMatch& m : out->rows) addresses.push_back(m.address);
  ScanSpec full;
  full.columns = columns_;
  std::string buf;
  size_t next = 0;
  RETURN_NOT_OK(table.TakeEach(addresses, full, [&](const RecordBatch& b) {
    const auto ac = Columns(b, columns_);
    for (int64_t r = 0; r < b.num_rows() && next < out->rows.size(); ++r, ++next) {
      out->rows[next].content = RowHash(ac, r, &buf);
    }
    return Status::OK();
  }));
  if (next != out->rows.size()) {
    return Status::DataLoss("a matched table row was gone when it was read");
  }
  return Status::OK();
}

}  // namespace loam::ingest::stager_internal
