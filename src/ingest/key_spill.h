// The stager's key checks once a run's keys outgrow the key map (about
// 32,000 keys; StagerOptions::key_map_bytes): the run's keys and the
// table's are sorted on scratch storage within the memory bound
// (key_memory_bytes) and merge-joined instead of held in a hash map. The
// outcome is the same as in memory: the same duplicate named, the same rows
// refused, the same upsert classification.
//
//   pass 1     AddRunKey for every row (key hash, file, line)
//   table      TableSink per shard: every table row's key hash and address
//   Join       duplicates within the run; run rows whose key the table holds
//   upserts    FillMatches: each matched table row's content hash, read in
//              address order; then MatchesOf, row by row in input order
//              while the input is parsed a second time
//
// Memory: at most the bound, split between the phases' sorters and merge
// blocks (MemoryMeter counts them). Keys compare by a 128-bit hash; an
// upsert's match is confirmed by a second, independent 64-bit hash of the
// key's bytes (a mismatch makes the commit plan the merge itself).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/hash.h"
#include "ingest/external_sorter.h"

namespace loam::ingest {

// A row of the run: its file (index) and the line it starts on. Input order.
struct RowPos {
  uint32_t file = 0;
  int64_t line = 0;
  friend auto operator<=>(const RowPos&, const RowPos&) = default;
};

// A table row whose key is a run row's.
struct KeyMatch {
  RowPos row;              // the run's row
  uint64_t address = 0;    // the table row ("_rowaddr")
  Hash128Value content;    // of the whole table row (FillMatches)
  uint64_t key_check = 0;  // KeyCheck of the table row's key bytes (FillMatches)
};

// The second hash of a key's bytes that confirms an upsert's match.
uint64_t KeyCheck(std::string_view key_bytes);

class KeySpill {
 public:
  // `scratch_dir`: where the scratch directory goes (empty: the system's
  // temporary directory).
  static Result<std::unique_ptr<KeySpill>> Create(const std::string& scratch_dir, size_t budget,
                                                  MemoryMeter* meter);
  ~KeySpill();

  Status AddRunKey(const Hash128Value& key, RowPos row);

  // One sorter per shard of the table's scan, each used by one thread.
  class TableSink {
   public:
    virtual ~TableSink() = default;
    virtual Status Add(const Hash128Value& key, uint64_t address) = 0;
  };
  std::vector<TableSink*> TableSinks(size_t shards);

  struct Joined {
    // The run's earliest row whose key an earlier row has, and that row.
    std::optional<std::pair<RowPos, RowPos>> duplicate;
    uint64_t matched = 0;           // run rows whose key the table holds
    std::vector<RowPos> first_few;  // the first of them in input order
  };
  // Joins the run's keys with the table's. `keep_matches` (upserts) keeps
  // every matched table row for FillMatches.
  Result<Joined> Join(bool keep_matches, size_t first_few);

  // Upserts: the matched table rows in address order, `chunk` at a time;
  // `fill` sets each one's content and key_check.
  Status FillMatches(size_t chunk, const std::function<Status(std::vector<KeyMatch>&)>& fill);
  // Then, in input order: the matched table rows of `row` (none: a new key).
  // Rows must be asked for in input order, each once.
  Status MatchesOf(RowPos row, std::vector<KeyMatch>* out);
  // Every match was asked for (false: the input changed between the passes).
  bool AllMatchesUsed() const;

 private:
  struct Impl;
  explicit KeySpill(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace loam::ingest
