#include "ingest/stager.h"

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <string_view>
#include <thread>

#include "common/flat_hash_map.h"
#include "common/hash.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/thread_annotations.h"
#include "common/thread_pool.h"
#include "format/page.h"

namespace loam::ingest {
namespace {

// Writes batches as fragment files on its own thread; at most `depth`
// batches wait, so parsing and writing overlap with bounded memory.
class FragmentWriter {
 public:
  // `schema`: the fragments' schema when it is not the dataset's (additive).
  FragmentWriter(const Dataset& data, size_t depth, const Schema* schema)
      : data_(data), depth_(depth), schema_(schema) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~FragmentWriter() { static_cast<void>(Close()); }

  // Queues a batch; the writer's error, if it has failed.
  Status Push(RecordBatch batch) LOAM_EXCLUDES(mu_) {
    std::unique_lock<std::mutex> lock(mu_);
    space_.wait(lock, [&] { return queue_.size() < depth_ || !error_.ok(); });
    if (!error_.ok()) return error_;
    queue_.push_back(std::move(batch));
    ready_.notify_one();
    return Status::OK();
  }

  // Waits for every queued batch to be written.
  Status Close() LOAM_EXCLUDES(mu_) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      closed_ = true;
      ready_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  // Fragments written so far (all of them after Close).
  std::vector<Fragment> written() LOAM_EXCLUDES(mu_) {
    std::lock_guard<std::mutex> lock(mu_);
    return written_;
  }

 private:
  void Loop() LOAM_EXCLUDES(mu_) {
    while (true) {
      RecordBatch batch;
      {
        std::unique_lock<std::mutex> lock(mu_);
        ready_.wait(lock, [&] { return !queue_.empty() || closed_; });
        if (queue_.empty() || !error_.ok()) return;
        batch = std::move(queue_.front());
        queue_.pop_front();
        space_.notify_one();
      }
      Result<Fragment> f = data_.WriteFragment(batch, /*allow_inline=*/false, schema_);
      std::lock_guard<std::mutex> lock(mu_);
      if (!f.ok()) {
        error_ = f.status();
        space_.notify_all();
        return;
      }
      written_.push_back(std::move(*f));
    }
  }

  const Dataset& data_;
  const size_t depth_;
  const Schema* schema_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<RecordBatch> queue_ LOAM_GUARDED_BY(mu_);
  std::vector<Fragment> written_ LOAM_GUARDED_BY(mu_);
  Status error_ LOAM_GUARDED_BY(mu_);
  bool closed_ LOAM_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

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

// Keys are hashed and prefetched this many rows at a time, before any of
// them is looked up, so the lookups' cache misses overlap.
constexpr int64_t kProbeChunk = 32;
using ProbeChunk = std::array<Hash128Value, kProbeChunk>;

// Hashes the keys of rows [first, first + n) into `hashes` and prefetches
// where `map` keeps them (their slots too when `for_insert`).
template <typename V>
void HashAndPrefetch(const std::vector<const Column*>& keys, int64_t first, int64_t n,
                     const FlatHashMap<V>& map, bool for_insert, ProbeChunk* hashes,
                     std::string* buf) {
  for (int64_t i = 0; i < n; ++i) {
    (*hashes)[i] = RowHash(keys, first + i, buf);
    map.Prefetch((*hashes)[i], for_insert);
  }
}

// Whether a table row equals the run's row with its key.
enum class Sameness : uint8_t {
  kByContent,  // compare `content` with the run row's hash (the input is parsed again)
  kSame,       // every column compared equal
  kChanged,    // some column differs
};

struct Existing {
  Hash128Value content;  // of the whole row, with Sameness::kByContent
  uint64_t address = 0;  // the first such row ("_rowaddr")
  uint64_t key_at = 0;   // its key's bytes in Stager::table_keys_
  uint32_t key_size = 0;
  uint32_t rows = 0;  // more than one: blind appends left duplicates (see dups_)
  Sameness same = Sameness::kByContent;
};

// Where a key was first seen in the run.
struct Seen {
  static constexpr uint32_t kNoRow = UINT32_MAX;
  uint32_t file = 0;
  bool staged = false;  // a second parse met the key again (see Stage)
  int64_t line = 0;     // where the row starts in its file
  uint32_t batch = 0;   // the row in Stager::retained_, while it is kept
  uint32_t row = 0;
  uint32_t existing = kNoRow;  // the table's row(s) with the key, in Stager::existing_
};

// The memory a batch holds (capacity, not size: a short last batch keeps
// its full reservation).
size_t AllocatedBytes(const RecordBatch& b) {
  size_t n = 0;
  for (const Column& c : b.columns) {
    n += c.data().capacity() + c.validity().capacity() + c.offsets().capacity() * sizeof(uint64_t);
  }
  return n;
}

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One run's input, parsed once (upserts: twice when it outgrows the
// retention budget).
class Stager {
 public:
  Stager(const RunRequest& req, const TableState& table, const Dataset& data,
         const StagerOptions& options, std::string* failed_file)
      : req_(req),
        // Additive: the table's columns and then the declared ones it lacks.
        schema_(req.policy.additive ? req.policy.Extend(table.def.schema) : table.def.schema),
        table_(table),
        data_(data),
        options_(options),
        failed_file_(failed_file),
        // An upsert on an unkeyed table matches on the load's own keys; on a
        // keyed table (the loader checked UpsertKeys) on the declared ones.
        keys_(req.mode == LoadMode::kUpsert && table.def.keys.empty() ? req.keys : table.def.keys),
        upsert_(req.mode == LoadMode::kUpsert),
        keyed_append_(req.mode == LoadMode::kAppend && !table.def.keys.empty()) {
    for (const Field& f : schema_.fields) columns_.push_back(f.name);
    // Non-key columns, fixed-width ones (cheap to decode) first.
    for (int pass = 0; pass < 2; ++pass) {
      for (size_t c = 0; c < schema_.fields.size(); ++c) {
        const bool key = std::find(keys_.begin(), keys_.end(), columns_[c]) != keys_.end();
        if (!key && schema_.fields[c].type.IsVariableWidth() == (pass == 1)) {
          compare_order_.push_back(static_cast<int>(c));
        }
      }
    }
  }

  Result<StagedInput> Run() {
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
      RETURN_NOT_OK(Guard(MatchTableRows(), ""));
      phase("match the table");
      if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));  // lease
    }
    if (options_.stage) {
      writer_ = std::make_unique<FragmentWriter>(
          data_, 3, schema_.fields.size() > table_.def.schema.fields.size() ? &schema_ : nullptr);
    }
    if (!upsert) {
      // One pass. A table with declared keys holds one row per key: the
      // run's keys are collected as its rows stream to storage (nothing is
      // kept, so keys compare by their 128-bit hash), and an append then
      // checks the table for them. A refused run's staged files are deleted.
      const bool unique = !table_.def.keys.empty();
      reparse_ = true;  // no batch is kept
      RETURN_NOT_OK(Parse(deadline, [&](RecordBatch& b, uint32_t file, const Lines& lines) {
        Status keys = unique ? CollectKeys(b, file, lines) : Status::OK();
        return keys.ok() ? Stage(b, nullptr) : keys;
      }));
      phase("parse, check keys and stage");
      if (keyed_append_) {
        RETURN_NOT_OK(Guard(MatchTableRows(), ""));
        RETURN_NOT_OK(Guard(RefuseTableKeys(), ""));
        phase("match the table");
      }
    } else if (!reparse_) {
      for (size_t i = 0; i < retained_.size(); ++i) {
        RecordBatch& b = retained_[i];
        RETURN_NOT_OK(Guard(Stage(b, i < row_existing_.size() ? &row_existing_[i] : nullptr), ""));
        b = RecordBatch();
        if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(out_.counters), ""));
      }
    } else {
      const int64_t first_rows = out_.counters.rows_read;
      out_.counters = {};
      out_.rejected.clear();
      RETURN_NOT_OK(Parse(
          deadline, [&](RecordBatch& b, uint32_t, const Lines&) { return Stage(b, nullptr); }));
      if (out_.counters.rows_read != first_rows) {
        return Guard(
            Status::InvalidArgument("the input changed while the run read it a second time (" +
                                    std::to_string(first_rows) + " rows, then " +
                                    std::to_string(out_.counters.rows_read) +
                                    "); keep input files unchanged during a load"),
            "");
      }
    }
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
      plan_.updated = c.updated;
      out_.plan = std::move(plan_);
    }
    return std::move(out_);
  }

 private:
  using Lines = std::vector<int64_t>;
  // `lines`: where each row of the batch starts in its file.
  using BatchFn = std::function<Status(RecordBatch& batch, uint32_t file, const Lines& lines)>;

  // Cleans up after a failure: staged files are deleted (best effort; gc
  // removes what is left).
  Status Guard(Status s, const std::string& file) {
    if (s.ok()) return s;
    *failed_file_ = file;
    if (writer_) {
      static_cast<void>(writer_->Close());
      static_cast<void>(data_.DeleteStaged(writer_->written()));
      writer_.reset();
    }
    return s;
  }

  // Every file in order: typed, checked batches to `each`, with limits.
  Status Parse(int64_t deadline, const BatchFn& each) {
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
      RejectFn reject;
      if (req_.error_policy == ErrorPolicy::kSkipRows) {
        reject = [&, name](const Status& error) { return Reject(error, name); };
      }
      Result<std::unique_ptr<RowSource>> rows =
          OpenRowSource(std::move(*raw), req_.format.value_or(GuessInputFormat(file)), schema_,
                        req_.policy, name, req_.limits, std::move(reject));
      if (!rows.ok()) return Guard(rows.status(), name);
      // Parsing runs ahead on its own thread (not with skipRows, whose
      // rejections are counted here as they happen).
      if (!reject) *rows = Prefetch(std::move(*rows), options_.batch_rows);
      const uint64_t bytes_before = c.bytes_read;
      while (true) {
        Result<std::optional<RecordBatch>> next = (*rows)->Next(options_.batch_rows);
        if (!next.ok()) return Guard(next.status(), name);
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
        RETURN_NOT_OK(Guard(each(b, static_cast<uint32_t>(fi), (*rows)->row_lines()), name));
        if (options_.on_batch) RETURN_NOT_OK(Guard(options_.on_batch(c), name));
      }
    }
    return Status::OK();
  }

  // skipRows: counts the row left out, keeps its position and reason.
  Status Reject(const Status& error, const std::string& file) {
    RunCounters& c = out_.counters;
    c.rejected++;
    c.rows_read++;
    if (out_.rejected.size() < 10) out_.rejected.push_back({file, error.message()});
    if (c.rejected > req_.max_rejected_rows) {
      return Status::ResourceExhausted(
          "more than " + std::to_string(req_.max_rejected_rows) +
          " rows were rejected (the rejected-rows limit); the last: " + error.message());
    }
    return Status::OK();
  }

  // Footers and pages read while matching the table (pages are large and
  // pass through; footers stay).
  static constexpr uint64_t kMatchCacheBytes = 8 << 20;

  // Up to this many keys are reserved up front (64 MiB of slots); a larger
  // run grows the map as it goes.
  static constexpr double kMaxReservedKeys = 1 << 20;

  // Pass 1 of an upsert: keys present and distinct within the run.
  Status CollectKeys(const RecordBatch& b, uint32_t file, const Lines& lines) {
    if (file_size_ && seen_.size() == 0 && out_.counters.bytes_read > 0) {
      // Room for the file's rows at the first batch's bytes per row: no
      // growing through every power of two (plain input; for compressed
      // input this underestimates, which is harmless).
      const double rows = static_cast<double>(*file_size_) * static_cast<double>(b.num_rows()) /
                          static_cast<double>(out_.counters.bytes_read);
      const double cap = std::min<double>(static_cast<double>(req_.max_rows), kMaxReservedKeys);
      seen_.Reserve(static_cast<size_t>(std::min(rows * 1.1, cap)));
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
      if (r % kProbeChunk == 0) {
        HashAndPrefetch(kc, r, std::min<int64_t>(kProbeChunk, b.num_rows() - r), seen_,
                        /*for_insert=*/true, &hashes, &buf_);
      }
      bool fresh = false;
      Seen& at = seen_.FindOrInsert(hashes[r % kProbeChunk], &fresh);
      if (!fresh) {
        return Status::InvalidArgument(
                   std::string(upsert_ ? "duplicate upsert key: " : "duplicate key: ") +
                   names_[at.file] + " line " + std::to_string(at.line) + " and " + names_[file] +
                   " line " + std::to_string(line) + " have the same key (" + JoinNames(keys_) +
                   "); keep one row per key in a run")
            .WithErrorCode(ErrorCode::kDuplicateKey);
      }
      at = Seen{file, false, line, static_cast<uint32_t>(retained_.size()),
                static_cast<uint32_t>(r)};
    }
    return Status::OK();
  }

  // Pass 1 of an upsert: keeps the batch for pass 2 while the kept ones fit
  // the budget; past it, pass 2 parses again.
  void Retain(RecordBatch& b) {
    if (reparse_) return;
    retained_bytes_ += AllocatedBytes(b);
    if (retained_bytes_ > options_.retain_bytes) {
      reparse_ = true;
      retained_ = {};
      return;
    }
    retained_.push_back(std::move(b));
  }

  // A table row whose key is one of the run's, as a shard found it.
  struct TableMatch {
    Hash128Value key, content;
    uint64_t address = 0;
    uint64_t key_at = 0;  // its key's bytes in the shard's `keys`
    uint32_t key_size = 0;
    Sameness same = Sameness::kByContent;
  };
  struct ShardMatches {
    std::vector<TableMatch> rows;  // in row address order
    std::string keys;
    Status status;
  };

  // The table's live rows with a key of the run, into existing_. The table
  // is split into contiguous runs of fragments read in parallel.
  Status MatchTableRows() {
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
    // Each fragment is read once per column pass: its footer is decoded once.
    const Dataset table = data_.WithCache(std::make_shared<LruCache>(kMatchCacheBytes));
    std::vector<ShardMatches> found(ranges.size());
    ThreadPool::Default().ParallelFor(ranges.size(), [&](size_t i) {
      found[i].status = MatchShard(table, ranges[i], &found[i]);
    });
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
    return Status::OK();
  }

  // One shard: its keys are scanned (one column per key), then only the
  // rows whose key the run has are read further. Reads seen_ and retained_.
  Status MatchShard(const Dataset& table, std::pair<size_t, size_t> range,
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

  // An append into a keyed table: the table must hold none of the run's
  // keys (compared by their 128-bit hash: the run's rows are not kept). The
  // error names the run's rows, never keys.
  Status RefuseTableKeys() {
    constexpr int kNamed = 5;
    std::vector<std::pair<uint32_t, int64_t>> rows;  // (file, line) of each refused row
    for (const Seen* at : matched_) rows.push_back({at->file, at->line});
    if (rows.empty()) return Status::OK();
    std::sort(rows.begin(), rows.end());
    std::string named;
    for (size_t i = 0; i < rows.size() && i < kNamed; ++i) {
      named += (i ? ", " : "") + names_[rows[i].first] + " line " + std::to_string(rows[i].second);
    }
    if (rows.size() > kNamed) named += " and " + std::to_string(rows.size() - kNamed) + " more";
    return Status::InvalidArgument(
               "duplicate key: " + std::to_string(rows.size()) + " row(s) of the run have a key (" +
               JoinNames(keys_) + ") that table '" + table_.def.name + "' already holds: " + named +
               "; append only new keys, or upsert")
        .WithErrorCode(ErrorCode::kDuplicateKey);
  }

  // The run's rows are kept: compare each matched row with its run row one
  // column at a time, cheapest to decode first, reading a column only for
  // the rows still equal so far (an update usually differs early).
  Status CompareMatchedRows(const Dataset& table, ShardMatches* out) const {
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

  // The input is parsed again later: keep a hash of each matched row whole.
  Status HashMatchedRows(const Dataset& table, ShardMatches* out) const {
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

  // A second parse must meet exactly the keys of the first, each once: the
  // plan was made for those (a file changed in between fails the run).
  Status CheckSameKeys(const Hash128Value& key) {
    bool fresh = false;
    Seen& at = seen_.FindOrInsert(key, &fresh);
    if (fresh || at.staged) {
      return Status::InvalidArgument(
          "the input changed while the run read it a second time (a key " +
          std::string(fresh ? "not in the first read" : "seen twice") +
          "); keep input files unchanged during a load, and run it again");
    }
    at.staged = true;
    return Status::OK();
  }

  // Counts the batch's rows and queues those to write: for upserts, rows
  // identical to the table's one row with their key are left out, and the
  // merge plan gains the rows replaced and the keys inserted.
  // `existing`: for a kept batch, its rows' entries in existing_ (empty: none
  // matched); nullptr: look each key up.
  Status Stage(RecordBatch& b, const std::vector<uint32_t>* existing) {
    RunCounters& c = out_.counters;
    if (req_.mode == LoadMode::kUpsert) {
      const auto kc = Columns(b, keys_), ac = Columns(b, columns_);
      std::vector<int64_t> keep;
      keep.reserve(b.num_rows());
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        uint32_t row = Seen::kNoRow;
        Hash128Value key;
        if (existing != nullptr) {
          buf_.clear();
          AppendRowKey(kc, r, &buf_);  // the key's bytes; its hash is not needed
          if (!existing->empty()) row = (*existing)[static_cast<size_t>(r)];
        } else {
          key = RowHash(kc, r, &buf_);  // buf_: the key's bytes
          if (reparse_) RETURN_NOT_OK(CheckSameKeys(key));
          const Seen* at = seen_.Find(key);
          if (at != nullptr) row = at->existing;
        }
        const Existing* e = row == Seen::kNoRow ? nullptr : &existing_[row];
        if (e == nullptr) {
          c.inserted++;
          keep.push_back(r);
          if (writer_) plan_.inserted_keys.push_back(buf_);
          continue;
        }
        if (std::string_view(table_keys_).substr(e->key_at, e->key_size) != buf_) {
          exact_ = false;  // a hash collision: the commit plans the merge itself
        } else if (e->rows == 1 &&
                   (e->same == Sameness::kSame ||
                    (e->same == Sameness::kByContent && e->content == RowHash(ac, r, &buf_)))) {
          c.unchanged++;  // the same row is there: nothing to write
          continue;
        }
        c.updated++;
        keep.push_back(r);
        if (e->rows == 1) {
          plan_.replaced.push_back(e->address);
        } else {
          // buf_ still holds the key's bytes (no content hash with duplicates).
          const std::vector<uint64_t>* all = dups_.Find(existing ? Hash128(buf_) : key);
          plan_.replaced.insert(plan_.replaced.end(), all->begin(), all->end());
        }
      }
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

  const RunRequest& req_;
  const Schema schema_;  // what the input is read as (the table's, or extended)
  const TableState& table_;
  const Dataset& data_;
  const StagerOptions& options_;
  std::string* failed_file_;
  const std::vector<std::string> keys_;
  const bool upsert_;
  const bool keyed_append_;  // an append into a table with declared keys
  std::vector<std::string> columns_;
  std::vector<int> compare_order_;  // non-key columns, in the order rows are compared
  std::vector<std::string> names_;
  // Upserts. Keys are told apart by a 128-bit hash of their bytes; a match
  // in the table is confirmed byte for byte (table_keys_), so a collision
  // there costs speed (the commit re-plans), never a wrong row. Within the
  // run, a collision would fail the run as a duplicate key.
  FlatHashMap<Seen> seen_;            // the run's keys
  std::vector<Existing> existing_;    // the table's rows with those keys (Seen::existing)
  std::vector<const Seen*> matched_;  // keyed appends: the run's keys found in the table
  std::vector<std::vector<uint32_t>> row_existing_;  // per kept batch and row: its existing_
  FlatHashMap<std::vector<uint64_t>> dups_;          // keys on several table rows: all of them
  std::string table_keys_;                           // key bytes of existing_ entries
  std::vector<RecordBatch> retained_;                // pass 1's batches, for pass 2
  size_t retained_bytes_ = 0;
  bool reparse_ = false;  // retained_ outgrew its budget: pass 2 parses again
  MergePlan plan_;
  bool exact_ = true;                  // plan_ is exact (no key hash collided)
  std::optional<uint64_t> file_size_;  // of the file being parsed, when known
  std::unique_ptr<FragmentWriter> writer_;
  std::string buf_;
  StagedInput out_;
};

}  // namespace

Result<StagedInput> StageInput(const RunRequest& req, const TableState& table, const Dataset& data,
                               const StagerOptions& options, std::string* failed_file) {
  return Stager(req, table, data, options, failed_file).Run();
}

}  // namespace loam::ingest
