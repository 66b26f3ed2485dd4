// The stager's internals, shared by stager.cc (parsing, key collection,
// staging) and stager_match.cc (matching the run's keys with the table's,
// in memory or spilled). Not part of the ingest interface (stager.h).
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/flat_hash_map.h"
#include "common/hash.h"
#include "ingest/external_sorter.h"
#include "ingest/fragment_writer.h"
#include "ingest/key_spill.h"
#include "ingest/stager.h"

namespace loam::ingest::stager_internal {

std::vector<const Column*> Columns(const RecordBatch& b, const std::vector<std::string>& names);
std::string JoinNames(const std::vector<std::string>& names);
// The 128-bit hash of a row's key (or whole row) bytes, left in *buf.
Hash128Value RowHash(const std::vector<const Column*>& cols, int64_t row, std::string* buf);

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
  kByContent,  // the input is parsed again: equal hashes make a candidate (AddCandidates)
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

// A run's row errors, as the parsing thread (Prefetch) meets them, which
// can be batches ahead of the run's thread: all counted, the first `keep`
// kept.
class RowErrorLog {
 public:
  void Reset(size_t keep);
  // Records one; returns how many there are now.
  int64_t Add(RunError error);
  // The first `n` (those of the batches taken), as far as kept.
  std::vector<RunError> First(int64_t n) const;

 private:
  mutable std::mutex mu_;
  std::vector<RunError> kept_;
  int64_t count_ = 0;
  size_t keep_ = 0;
};

// The memory a batch holds (capacity, not size: a short last batch keeps
// its full reservation).
size_t AllocatedBytes(const RecordBatch& b);
int64_t SteadyMicros();

// One run's input, parsed once (upserts: twice when it outgrows the
// retention budget).
class Stager {
 public:
  Stager(const RunRequest& req, const TableState& table, const Dataset& data,
         const StagerOptions& options, StageFailure* failure)
      : req_(req),
        // Additive: the table's columns and then the declared ones it lacks.
        schema_(req.policy.additive ? req.policy.Extend(table.def.schema) : table.def.schema),
        table_(table),
        data_(data),
        options_(options),
        failure_(failure),
        // An upsert on an unkeyed table matches on the load's own keys; on a
        // keyed table (the loader checked UpsertKeys) on the declared ones.
        keys_(req.mode == LoadMode::kUpsert && table.def.keys.empty() ? req.keys : table.def.keys),
        upsert_(req.mode == LoadMode::kUpsert),
        keyed_append_(req.mode == LoadMode::kAppend && !table.def.keys.empty()) {
    for (const Field& f : schema_.fields) columns_.push_back(f.name);
    meter_.Add(seen_.MemoryBytes());
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

  Result<StagedInput> Run();

 private:
  using Lines = std::vector<int64_t>;
  // `lines`: where each row of the batch starts in its file.
  using BatchFn = std::function<Status(RecordBatch& batch, uint32_t file, const Lines& lines)>;

  // Appends and replaces: one pass. A table with declared keys holds one
  // row per key: the run's keys are collected as its rows stream to
  // storage (nothing is kept, so keys compare by their 128-bit hash), and
  // an append then checks the table for them. A refused run's staged files
  // are deleted.
  Status StageInOnePass(int64_t deadline);
  // Pass 2 of an upsert whose input was not kept: it must meet the rows,
  // and the keys, of pass 1 (a file changed in between fails the run).
  Status StageParsingAgain(int64_t deadline);

  // Cleans up after a failure: staged files are deleted (best effort; gc
  // removes what is left).
  Status Guard(Status s, const std::string& file);

  // Every file in order: typed, checked batches to `each`, with limits.
  Status Parse(int64_t deadline, const BatchFn& each);

  // A row left out of its batch (skipRows) or found invalid (failRun,
  // validationOnly): logged. Runs on the parsing thread.
  Status Reject(const Status& error, const std::string& file);
  // Takes the rows rejected in the batches taken so far (`n` in all) into
  // the counters.
  void CountRejected(int64_t n);
  // failRun and validationOnly, after an invalid row: the run's error.
  Status InvalidRows() const;
  // Deletes what was staged (best effort; gc removes what is left).
  void DiscardStaged();

  // Footers and pages read while matching the table (pages are large and
  // pass through; footers stay).
  static constexpr uint64_t kMatchCacheBytes = 8 << 20;
  // Rows a refusal names; matched rows read per TakeEach when spilled.
  static constexpr size_t kNamedRows = 5;
  static constexpr size_t kFillChunk = 1 << 16;
  // Candidates (AddCandidates) are compared in groups of at least this many
  // bytes.
  static constexpr size_t kMinCandidateBytes = size_t{64} << 10;

  // Up to this many keys are reserved up front (64 MiB of slots); a larger
  // run grows the map as it goes.
  static constexpr double kMaxReservedKeys = 1 << 20;

  // Keyed runs (pass 1 of an upsert): keys present and distinct within the
  // run, in seen_ or, past the key map (KeyMapBound), spilled.
  Status CollectKeys(const RecordBatch& b, uint32_t file, const Lines& lines);

  // `again` repeats the key of the earlier row `first`.
  Status DuplicateKeyError(RowPos first, RowPos again) const;

  // seen_.FindOrInsert, metered: a growing map holds its old and new slots
  // while it rehashes.
  Seen& InsertSeen(const Hash128Value& key, bool* fresh);

  // An order-independent sum over the run's keys and their rows: a second
  // parse of spilled keys must meet the same ones.
  void AddToKeySum(const Hash128Value& key, RowPos row);

  // What the key map may hold, with its copy while it grows (three times
  // its size): past it the keys spill. An upsert whose input is kept for
  // its second pass may use the whole bound (spilling would parse again).
  size_t KeyMapBound() const {
    const bool keeps_input =
        upsert_ && !reparse_ && !(file_size_ && *file_size_ > options_.retain_bytes);
    return keeps_input ? options_.key_memory_bytes
                       : std::min(options_.key_memory_bytes, options_.key_map_bytes);
  }

  // The run's keys outgrew the key map: from here on they go to sorted runs
  // on scratch storage (those seen so far too), and an upsert parses its
  // input again instead of keeping it.
  Status StartSpill();

  // Pass 1 of an upsert: keeps the batch for pass 2 while the kept ones fit
  // the budget; past it, pass 2 parses again.
  void Retain(RecordBatch& b);

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

  // The table's fragments as contiguous ranges of about equal live rows,
  // one per thread that reads them.
  std::vector<std::pair<size_t, size_t>> ShardRanges() const;

  // The table read for matching: each fragment is read once per column
  // pass, so its footer is decoded once.
  Dataset MatchView() const {
    return data_.WithCache(std::make_shared<LruCache>(kMatchCacheBytes));
  }

  // The table's live rows with a key of the run, into existing_. The table
  // is split into contiguous runs of fragments read in parallel.
  Status MatchTableRows();

  // Spilled keys, after pass 1: the table's keys are sorted too (each shard
  // on its thread), then joined with the run's. Refuses a repeated key of
  // the run and (keyed appends) keys the table holds; an upsert then reads
  // each matched table row for pass 2.
  Status JoinSpilledKeys();

  // Each matched table row of `part` (in address order): a hash of the
  // whole row, and the check of its key's bytes.
  Status HashSpilledMatches(const Dataset& table, std::vector<KeyMatch>& part) const;

  // One shard: its keys are scanned (one column per key), then only the
  // rows whose key the run has are read further. Reads seen_ and retained_.
  Status MatchShard(const Dataset& table, std::pair<size_t, size_t> range, ShardMatches* out) const;

  // An append into a keyed table: the table must hold none of the run's
  // keys (compared by their 128-bit hash: the run's rows are not kept). The
  // error names the first rows of the run (`first`, in input order) of the
  // `refused` that have one, never keys.
  Status RefuseTableKeys(size_t refused, const std::vector<RowPos>& first) const;

  // The run's rows are kept: compare each matched row with its run row one
  // column at a time, cheapest to decode first, reading a column only for
  // the rows still equal so far (an update usually differs early).
  Status CompareMatchedRows(const Dataset& table, ShardMatches* out) const;

  // The input is parsed again later: keep a hash of each matched row whole.
  Status HashMatchedRows(const Dataset& table, ShardMatches* out) const;

  // A run row whose content hash equals its table row's (the input is
  // parsed again, or the keys spilled) is only a candidate: it is unchanged
  // once compared byte for byte with the table row, never by hash alone.
  // Rows `rows` of `b` join the candidates (their table rows were added to
  // candidate_at_), compared once they fill the retained-input budget
  // (unused in these modes) and at the end of the pass.
  Status AddCandidates(const RecordBatch& b, const std::vector<int64_t>& rows);
  // Counts each candidate unchanged or updated, and stages the updated ones.
  Status CompareCandidates();

  // A second parse must meet exactly the keys of the first, each once: the
  // plan was made for those (a file changed in between fails the run).
  Status CheckSameKeys(const Hash128Value& key);

  // Counts the batch's rows and queues those to write: for upserts, rows
  // identical to the table's one row with their key are left out, and the
  // merge plan gains the rows replaced and the keys inserted.
  // `existing`: for a kept batch, its rows' entries in existing_ (empty: none
  // matched); nullptr: look each key up (in seen_, or when spilled in
  // spill_, which needs the rows' `file` and `lines`).
  Status Stage(RecordBatch& b, const std::vector<uint32_t>* existing, uint32_t file = 0,
               const Lines* lines = nullptr);
  // Notes a table row the run leaves alone in the merge plan (up to
  // MergePlan::kMaxUnchanged), so the plan can be carried to a later version.
  void KeepUnchanged(uint64_t address) {
    if (plan_.unchanged.size() < MergePlan::kMaxUnchanged) {
      plan_.unchanged.push_back(address);
    } else {
      plan_.all_unchanged = false;
    }
  }

  const RunRequest& req_;
  const Schema schema_;  // what the input is read as (the table's, or extended)
  const TableState& table_;
  const Dataset& data_;
  const StagerOptions& options_;
  StageFailure* failure_;
  // failRun and validationOnly list every invalid row; skipRows leaves them out.
  const bool list_invalid_ = req_.error_policy != ErrorPolicy::kSkipRows;
  RowErrorLog errors_;
  int64_t counted_errors_ = 0;  // of errors_: those of the batches taken
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
  bool reparse_ = false;                // retained_ outgrew its budget: pass 2 parses again
  MemoryMeter meter_;                   // the key checks' memory
  std::unique_ptr<KeySpill> spill_;     // set once the keys outgrew the map (KeyMapBound)
  Hash128Value key_sum_;                // AddToKeySum over the pass's rows
  std::vector<KeyMatch> matches_;       // pass 2 of a spilled upsert: the row's matches
  Existing spilled_;                    // and what they say, as existing_ would
  RecordBatch candidates_;              // AddCandidates rows, in input order
  std::vector<uint64_t> candidate_at_;  // each candidate's table row
  MergePlan plan_;
  bool exact_ = true;                  // plan_ is exact (no key hash collided)
  std::optional<uint64_t> file_size_;  // of the file being parsed, when known
  std::unique_ptr<FragmentWriter> writer_;
  std::string buf_;
  StagedInput out_;
};

}  // namespace loam::ingest::stager_internal
