#include "ingest/stager.h"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string_view>
#include <utility>

#include "common/logging.h"
#include "common/status_macros.h"
#include "format/page.h"
#include "ingest/stager_internal.h"

namespace loam::ingest {
namespace stager_internal {

std::vector<const Column*> Columns(const RecordBatch& b, const std::vector<std::string>& names) {
  std::vector<const Column*> out;
  for (const std::string& n : names) out.push_back(&b.columns[b.schema.IndexOf(n)]);
  return out;
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

Hash128Value RowHash(const std::vector<const Column*>& cols, int64_t row, std::string* buf) {
  buf->clear();
  AppendRowKey(cols, row, buf);
  return Hash128(*buf);
}

size_t AllocatedBytes(const RecordBatch& b) {
  size_t n = 0;
  for (const Column& c : b.columns) {
    n += c.data().capacity() + c.validity().capacity() + c.offsets().capacity() * sizeof(uint64_t);
  }
  return n;
}

void RowErrorLog::Reset(size_t keep) {
  std::lock_guard lock(mu_);
  kept_.clear();
  count_ = 0;
  keep_ = keep;
}

int64_t RowErrorLog::Add(RunError error) {
  std::lock_guard lock(mu_);
  if (kept_.size() < keep_) kept_.push_back(std::move(error));
  return ++count_;
}

std::vector<RunError> RowErrorLog::First(int64_t n) const {
  std::lock_guard lock(mu_);
  const size_t take = std::min(kept_.size(), static_cast<size_t>(std::max<int64_t>(n, 0)));
  return {kept_.begin(), kept_.begin() + static_cast<ptrdiff_t>(take)};
}

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Result<StagedInput> Stager::Run() {
  errors_.Reset(static_cast<size_t>(req_.max_errors));
  const int64_t start = SteadyMicros();
  const int64_t deadline = start + req_.time_budget_ms * 1000;
  // Phase timings for LOAM_LOG_LEVEL=debug (where a slow load spends its time).
  int64_t mark = start;
  auto phase = [&](const char* name) {
    const int64_t now = SteadyMicros();
    LOAM_LOG_DEBUG("load phase '{}': {} ms", name, (now - mark) / 1000);
    mark = now;
  };
  const bool upsert = req_.mode == LoadMode::kUpsert;
  if (upsert) {
    // Pass 1 checks every row and collects the run's keys (keeping the
    // batches while they fit); the table is then read for those keys only;
    // pass 2 classifies and stages.
    RETURN_NOT_OK(Parse(deadline, [&](RecordBatch& b, uint32_t file, const Lines& lines) {
      Status s = CollectKeys(b, file, lines);
      if (s.ok()) Retain(b);
      return s;
    }));
    phase("parse and collect keys");
    RETURN_NOT_OK(spill_ ? JoinSpilledKeys() : Guard(MatchTableRows(), ""));
    phase("match the table");
    if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));  // lease
  }
  if (options_.stage) {
    writer_ = std::make_unique<FragmentWriter>(
        data_, 3, schema_.fields.size() > table_.def.schema.fields.size() ? &schema_ : nullptr);
  }
  if (!upsert) {
    RETURN_NOT_OK(StageInOnePass(deadline));
    phase("parse, check keys and stage");
  } else if (!reparse_) {
    for (size_t i = 0; i < retained_.size(); ++i) {
      RecordBatch& b = retained_[i];
      RETURN_NOT_OK(Guard(Stage(b, i < row_existing_.size() ? &row_existing_[i] : nullptr), ""));
      b = RecordBatch();
      if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));
    }
  } else {
    RETURN_NOT_OK(StageParsingAgain(deadline));
  }
  RETURN_NOT_OK(Guard(CompareCandidates(), ""));
  if (upsert && options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));
  phase("stage");
  RunCounters& c = out_.counters;
  if (req_.mode == LoadMode::kReplace) c.deleted = table_.head.row_count.value_or(0);
  if (writer_) {
    RETURN_NOT_OK(Guard(writer_->Close(), ""));
    out_.staged = writer_->written();
    phase("finish writing staged fragments");
  }
  if (upsert && writer_ && exact_) {
    plan_.basis = data_.state().fragments;
    std::sort(plan_.replaced.begin(), plan_.replaced.end());
    std::sort(plan_.unchanged.begin(), plan_.unchanged.end());
    plan_.updated = c.updated;
    out_.plan = std::move(plan_);
  }
  out_.key_memory_peak = meter_.peak();
  out_.keys_spilled = spill_ != nullptr;
  out_.rejected = errors_.First(counted_errors_);
  return std::move(out_);
}

Status Stager::StageInOnePass(int64_t deadline) {
  const bool unique = !table_.def.keys.empty();
  reparse_ = true;  // no batch is kept
  RETURN_NOT_OK(Parse(deadline, [&](RecordBatch& b, uint32_t file, const Lines& lines) {
    Status keys = unique ? CollectKeys(b, file, lines) : Status::OK();
    return keys.ok() ? Stage(b, nullptr) : keys;
  }));
  if (spill_) return JoinSpilledKeys();
  if (!keyed_append_) return Status::OK();
  RETURN_NOT_OK(Guard(MatchTableRows(), ""));
  std::vector<RowPos> rows;  // of the run's keys found in the table
  for (const Seen* at : matched_) rows.push_back({at->file, at->line});
  std::sort(rows.begin(), rows.end());
  const size_t n = rows.size();
  if (rows.size() > kNamedRows) rows.resize(kNamedRows);
  return Guard(RefuseTableKeys(n, rows), "");
}

Status Stager::StageParsingAgain(int64_t deadline) {
  const int64_t first_rows = out_.counters.rows_read;
  out_.counters = {};
  errors_.Reset(static_cast<size_t>(req_.max_errors));
  counted_errors_ = 0;
  const Hash128Value first_keys = key_sum_;
  key_sum_ = {};
  RETURN_NOT_OK(Parse(deadline, [&](RecordBatch& b, uint32_t file, const Lines& lines) {
    return Stage(b, nullptr, file, &lines);
  }));
  if (spill_ && (!(key_sum_ == first_keys) || !spill_->AllMatchesUsed())) {
    return Guard(Status::InvalidArgument(
                     "the input changed while the run read it a second time (its keys "
                     "differ); keep input files unchanged during a load, and run it again"),
                 "");
  }
  if (out_.counters.rows_read != first_rows) {
    return Guard(Status::InvalidArgument("the input changed while the run read it a second time (" +
                                         std::to_string(first_rows) + " rows, then " +
                                         std::to_string(out_.counters.rows_read) +
                                         "); keep input files unchanged during a load"),
                 "");
  }
  return Status::OK();
}

Status Stager::Guard(Status s, const std::string& file) {
  if (s.ok()) return s;
  failure_->file = file;
  failure_->counters = out_.counters;
  if (list_invalid_) {
    failure_->errors = errors_.First(counted_errors_);
    // Another error after invalid rows (an unclosed quote, a limit) ends
    // the list.
    if (!failure_->errors.empty() && s.detail("invalidRows").empty()) {
      failure_->errors.push_back(RunErrorOf(s, file));
    }
  }
  DiscardStaged();
  return s;
}

void Stager::DiscardStaged() {
  if (!writer_) return;
  static_cast<void>(writer_->Close());
  NoteCleanupFailure("removing a failed load's fragments", data_.DeleteStaged(writer_->written()));
  writer_.reset();
}

Status Stager::Parse(int64_t deadline, const BatchFn& each) {
  RunCounters& c = out_.counters;
  names_.clear();
  for (size_t fi = 0; fi < req_.files.size(); ++fi) {
    const std::string& file = req_.files[fi];
    const std::string name = fi < req_.file_names.size()
                                 ? req_.file_names[fi]
                                 : std::filesystem::path(file).filename().string();
    names_.push_back(name);
    Result<std::unique_ptr<ByteSource>> raw = options_.open_input(file);
    if (!raw.ok()) return Guard(raw.status(), name);
    file_size_ = (*raw)->SizeHint();
    Result<std::unique_ptr<RowSource>> rows = OpenRowSource(
        std::move(*raw), req_.format.value_or(GuessInputFormat(file)), schema_, req_.policy, name,
        req_.limits, [this, name](const Status& error) { return Reject(error, name); });
    if (!rows.ok()) return Guard(rows.status(), name);
    // Parsing runs ahead on its own thread (and calls Reject there).
    *rows = Prefetch(std::move(*rows), options_.batch_rows);
    const uint64_t bytes_before = c.bytes_read;
    const int64_t errors_before = counted_errors_;
    while (true) {
      Result<std::optional<RecordBatch>> next = (*rows)->Next(options_.batch_rows);
      CountRejected(errors_before + (*rows)->rows_rejected());
      if (!next.ok()) {
        const bool at_cap = list_invalid_ && counted_errors_ >= req_.max_errors;
        return Guard(at_cap ? InvalidRows() : next.status(), name);
      }
      c.bytes_read = bytes_before + (*rows)->bytes_read();
      if (!*next) break;
      RecordBatch& b = **next;
      c.rows_read += b.num_rows();
      if (c.rows_read > req_.max_rows) {
        return Guard(Status::ResourceExhausted(
                         name + ": the run has more than " + std::to_string(req_.max_rows) +
                         " rows (the rows-per-run limit); split the input into several runs "
                         "or raise --max-rows"),
                     name);
      }
      if (SteadyMicros() > deadline) {
        return Guard(
            Status::ResourceExhausted(name + ": parsing took longer than the time budget of " +
                                      std::to_string(req_.time_budget_ms) + " ms (at row " +
                                      std::to_string(c.rows_read) +
                                      " of the run); split the input or raise --time-budget-ms"),
            name);
      }
      // After an invalid row (failRun, validationOnly) the rest is only
      // validated: nothing more is staged or checked against the table.
      if (list_invalid_ && counted_errors_ > 0) {
        DiscardStaged();
      } else {
        RETURN_NOT_OK(Guard(each(b, static_cast<uint32_t>(fi), (*rows)->row_lines()), name));
      }
      if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(c), name));
    }
  }
  if (list_invalid_ && counted_errors_ > 0) return Guard(InvalidRows(), "");
  return Status::OK();
}

Status Stager::Reject(const Status& error, const std::string& file) {
  const int64_t n = errors_.Add(RunErrorOf(error, file));
  if (list_invalid_) {
    // At the cap the read ends; Parse then reports what was found.
    return n < req_.max_errors ? Status::OK() : Status::ResourceExhausted("maxErrors reached");
  }
  if (n > req_.max_rejected_rows) {
    return Status::ResourceExhausted(
        "more than " + std::to_string(req_.max_rejected_rows) +
        " rows were rejected (the rejected-rows limit); the last: " + error.message());
  }
  return Status::OK();
}

void Stager::CountRejected(int64_t n) {
  out_.counters.rows_read += n - counted_errors_;  // invalid rows were read too
  if (!list_invalid_) out_.counters.rejected = n;
  counted_errors_ = n;
}

Status Stager::InvalidRows() const {
  const std::vector<RunError> kept = errors_.First(1);
  const int64_t n = counted_errors_;
  std::string message = kept.front().reason;
  if (n > 1) {
    message += " (and " + std::to_string(n - 1) + " more invalid row" + (n > 2 ? "s" : "");
    if (n >= req_.max_errors) {
      message += "; validation stopped at " + std::to_string(req_.max_errors) +
                 " errors, the maxErrors limit";
    }
    message += "; the run's errors list each)";
  }
  return Status::InvalidArgument(std::move(message))
      .WithErrorCode(ErrorCode::kValidationFailed)
      .WithDetail("invalidRows", std::to_string(n));
}

Status Stager::CollectKeys(const RecordBatch& b, uint32_t file, const Lines& lines) {
  if (file_size_ && seen_.size() == 0 && out_.counters.bytes_read > 0 && !spill_) {
    // Room for the file's rows at the first batch's bytes per row: no
    // growing through every power of two (plain input; for compressed
    // input this underestimates, which is harmless). Within a third of
    // the key memory bound, like any growth.
    const double rows = static_cast<double>(*file_size_) * static_cast<double>(b.num_rows()) /
                        static_cast<double>(out_.counters.bytes_read);
    const double cap = std::min<double>(static_cast<double>(req_.max_rows), kMaxReservedKeys);
    size_t n = static_cast<size_t>(std::min(rows * 1.1, cap));
    while (n > 16 && 3 * FlatHashMap<Seen>::MemoryBytesFor(n) > KeyMapBound()) n /= 2;
    const size_t before = seen_.MemoryBytes();  // of the empty map
    meter_.Add(FlatHashMap<Seen>::MemoryBytesFor(n));
    seen_.Reserve(n);
    meter_.Sub(before);
  }
  const auto kc = Columns(b, keys_);
  ProbeChunk hashes;
  for (int64_t r = 0; r < b.num_rows(); ++r) {
    const int64_t line = lines[static_cast<size_t>(r)];
    for (size_t k = 0; k < kc.size(); ++k) {
      if (kc[k]->IsNull(r)) {
        return Status::InvalidArgument(names_[file] + ": line " + std::to_string(line) +
                                       ": key column '" + keys_[k] + "' is null; every " +
                                       (upsert_ ? "upsert row" : "row of a keyed table") +
                                       " needs its key");
      }
    }
    if (!spill_ && seen_.FullForInsert() && 3 * seen_.MemoryBytes() > KeyMapBound()) {
      RETURN_NOT_OK(StartSpill());
    }
    if (spill_) {
      const Hash128Value key = RowHash(kc, r, &buf_);
      AddToKeySum(key, {file, line});
      RETURN_NOT_OK(spill_->AddRunKey(key, {file, line}));
      continue;
    }
    if (r % kProbeChunk == 0) {
      HashAndPrefetch(kc, r, std::min<int64_t>(kProbeChunk, b.num_rows() - r), seen_,
                      /*for_insert=*/true, &hashes, &buf_);
    }
    const Hash128Value& key = hashes[r % kProbeChunk];
    AddToKeySum(key, {file, line});
    bool fresh = false;
    Seen& at = InsertSeen(key, &fresh);
    if (!fresh) return DuplicateKeyError({at.file, at.line}, {file, line});
    at = Seen{file, false, line, static_cast<uint32_t>(retained_.size()), static_cast<uint32_t>(r)};
  }
  return Status::OK();
}

Status Stager::DuplicateKeyError(RowPos first, RowPos again) const {
  return Status::InvalidArgument(
             std::string(upsert_ ? "duplicate upsert key: " : "duplicate key: ") +
             names_[first.file] + " line " + std::to_string(first.line) + " and " +
             names_[again.file] + " line " + std::to_string(again.line) + " have the same key (" +
             JoinNames(keys_) + "); keep one row per key in a run")
      .WithErrorCode(ErrorCode::kDuplicateKey);
}

Seen& Stager::InsertSeen(const Hash128Value& key, bool* fresh) {
  if (!seen_.FullForInsert()) return seen_.FindOrInsert(key, fresh);
  const size_t before = seen_.MemoryBytes();
  meter_.Add(2 * before);
  Seen& at = seen_.FindOrInsert(key, fresh);
  meter_.Sub(3 * before - seen_.MemoryBytes());
  return at;
}

void Stager::AddToKeySum(const Hash128Value& key, RowPos row) {
  const uint64_t at = static_cast<uint64_t>(row.line) * 0x9e3779b97f4a7c15ULL + row.file;
  key_sum_.lo += (key.lo ^ at) * 0xff51afd7ed558ccdULL;
  key_sum_.hi += (key.hi + at) * 0xc4ceb9fe1a85ec53ULL;
}

Status Stager::StartSpill() {
  ASSIGN_OR_RETURN(spill_,
                   KeySpill::Create(options_.scratch_dir, options_.key_memory_bytes, &meter_));
  Status s;
  seen_.ForEach([&](const Hash128Value& key, const Seen& at) {
    if (s.ok()) s = spill_->AddRunKey(key, {at.file, at.line});
  });
  RETURN_NOT_OK(s);
  meter_.Sub(seen_.MemoryBytes());
  seen_ = FlatHashMap<Seen>();
  meter_.Add(seen_.MemoryBytes());
  reparse_ = true;
  retained_ = {};
  LOAM_LOG_DEBUG("keys spill to scratch storage after {} rows (bound {} bytes)",
                 out_.counters.rows_read, options_.key_memory_bytes);
  return Status::OK();
}

void Stager::Retain(RecordBatch& b) {
  if (reparse_) return;
  retained_bytes_ += AllocatedBytes(b);
  if (retained_bytes_ > options_.retain_bytes) {
    reparse_ = true;
    retained_ = {};
    return;
  }
  retained_.push_back(std::move(b));
}

Status Stager::CheckSameKeys(const Hash128Value& key) {
  bool fresh = false;
  Seen& at = seen_.FindOrInsert(key, &fresh);
  if (fresh || at.staged) {
    return Status::InvalidArgument("the input changed while the run read it a second time (a key " +
                                   std::string(fresh ? "not in the first read" : "seen twice") +
                                   "); keep input files unchanged during a load, and run it again");
  }
  at.staged = true;
  return Status::OK();
}

Status Stager::Stage(RecordBatch& b, const std::vector<uint32_t>* existing, uint32_t file,
                     const Lines* lines) {
  RunCounters& c = out_.counters;
  if (req_.mode == LoadMode::kUpsert) {
    const auto kc = Columns(b, keys_), ac = Columns(b, columns_);
    std::vector<int64_t> keep, candidates;
    keep.reserve(b.num_rows());
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      const Existing* e = nullptr;
      bool same_key = true;  // the table row's key bytes are the run row's
      Hash128Value key;
      if (existing != nullptr) {
        buf_.clear();
        AppendRowKey(kc, r, &buf_);  // the key's bytes; its hash is not needed
        if (!existing->empty() && (*existing)[static_cast<size_t>(r)] != Seen::kNoRow) {
          e = &existing_[(*existing)[static_cast<size_t>(r)]];
        }
      } else if (spill_) {
        key = RowHash(kc, r, &buf_);
        const RowPos at{file, (*lines)[static_cast<size_t>(r)]};
        AddToKeySum(key, at);
        RETURN_NOT_OK(spill_->MatchesOf(at, &matches_));
        if (!matches_.empty()) {
          spilled_.rows = static_cast<uint32_t>(matches_.size());
          spilled_.content = matches_.back().content;
          same_key = matches_[0].key_check == KeyCheck(buf_);
          e = &spilled_;
        }
      } else {
        key = RowHash(kc, r, &buf_);  // buf_: the key's bytes
        if (reparse_) RETURN_NOT_OK(CheckSameKeys(key));
        const Seen* at = seen_.Find(key);
        if (at != nullptr && at->existing != Seen::kNoRow) e = &existing_[at->existing];
      }
      if (e == nullptr) {
        c.inserted++;
        keep.push_back(r);
        if (writer_) plan_.inserted_keys.push_back(buf_);
        continue;
      }
      if (!spill_) same_key = std::string_view(table_keys_).substr(e->key_at, e->key_size) == buf_;
      const uint64_t address = spill_ ? matches_[0].address : e->address;
      if (!same_key) {
        exact_ = false;  // a hash collision: the commit plans the merge itself
      } else if (e->rows == 1 && e->same == Sameness::kSame) {
        c.unchanged++;  // the same row is there: nothing to write
        if (writer_) KeepUnchanged(address);
        continue;
      } else if (e->rows == 1 && e->same == Sameness::kByContent &&
                 (options_.collide_content_hashes || e->content == RowHash(ac, r, &buf_))) {
        candidates.push_back(r);  // probably the same row: compared later
        candidate_at_.push_back(address);
        continue;
      }
      c.updated++;
      keep.push_back(r);
      if (spill_) {
        for (const KeyMatch& m : matches_) plan_.replaced.push_back(m.address);
      } else if (e->rows == 1) {
        plan_.replaced.push_back(e->address);
      } else {
        // buf_ still holds the key's bytes (no content hash with duplicates).
        const std::vector<uint64_t>* all = dups_.Find(existing ? Hash128(buf_) : key);
        plan_.replaced.insert(plan_.replaced.end(), all->begin(), all->end());
      }
    }
    if (!candidates.empty()) RETURN_NOT_OK(AddCandidates(b, candidates));
    if (keep.size() != static_cast<size_t>(b.num_rows())) {
      RecordBatch kept(b.schema);
      for (size_t col = 0; col < b.columns.size(); ++col) {
        kept.columns[col].AppendRows(b.columns[col], keep);
      }
      b = std::move(kept);
    }
  } else {
    c.inserted += b.num_rows();
  }
  if (writer_ && b.num_rows() > 0) return writer_->Push(std::move(b));
  return Status::OK();
}

Status Stager::AddCandidates(const RecordBatch& b, const std::vector<int64_t>& rows) {
  if (candidates_.columns.empty()) candidates_ = RecordBatch(b.schema);
  for (size_t col = 0; col < b.columns.size(); ++col) {
    candidates_.columns[col].AppendRows(b.columns[col], rows);
  }
  const size_t budget = std::max(options_.retain_bytes, kMinCandidateBytes);
  return AllocatedBytes(candidates_) < budget ? Status::OK() : CompareCandidates();
}

Status Stager::CompareCandidates() {
  if (candidate_at_.empty()) return Status::OK();
  const RecordBatch rows = std::exchange(candidates_, RecordBatch());
  const std::vector<uint64_t> at = std::exchange(candidate_at_, {});
  std::vector<int64_t> order(at.size());  // candidates by table row address
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return at[x] < at[y]; });
  std::vector<uint64_t> addresses;
  addresses.reserve(order.size());
  for (int64_t i : order) addresses.push_back(at[i]);
  ScanSpec full;
  full.columns = columns_;
  const auto ours = Columns(rows, columns_), our_keys = Columns(rows, keys_);
  std::vector<int64_t> updated;
  std::string mine, theirs;
  RunCounters& c = out_.counters;
  size_t next = 0;
  RETURN_NOT_OK(MatchView().TakeEach(addresses, full, [&](const RecordBatch& t) {
    const auto cols = Columns(t, columns_), keys = Columns(t, keys_);
    for (int64_t r = 0; r < t.num_rows() && next < order.size(); ++r, ++next) {
      mine.clear();
      theirs.clear();
      AppendRowKey(ours, order[next], &mine);
      AppendRowKey(cols, r, &theirs);
      if (mine == theirs) {
        c.unchanged++;
        if (writer_) KeepUnchanged(addresses[next]);
        continue;
      }
      c.updated++;  // equal hashes of different rows
      updated.push_back(order[next]);
      if (writer_) plan_.replaced.push_back(addresses[next]);
      mine.clear();
      theirs.clear();
      AppendRowKey(our_keys, order[next], &mine);
      AppendRowKey(keys, r, &theirs);
      if (mine != theirs) exact_ = false;  // a key hash collided too: the commit plans
    }
    return Status::OK();
  }));
  if (next != order.size()) {
    return Status::DataLoss("a matched table row was gone when it was compared");
  }
  if (updated.empty() || !writer_) return Status::OK();
  std::sort(updated.begin(), updated.end());  // in input order
  RecordBatch staged(rows.schema);
  for (size_t col = 0; col < rows.columns.size(); ++col) {
    staged.columns[col].AppendRows(rows.columns[col], updated);
  }
  return writer_->Push(std::move(staged));
}

}  // namespace stager_internal

Result<StagedInput> StageInput(const RunRequest& req, const TableState& table, const Dataset& data,
                               const StagerOptions& options, StageFailure* failure) {
  return stager_internal::Stager(req, table, data, options, failure).Run();
}

}  // namespace loam::ingest
