// The validation half of a run, streamed: every input file is parsed,
// typed and checked (limits, duplicate upsert keys), upsert rows are
// classified against the table (insert / update / unchanged), and the rows
// to write are staged as fragment files by a second thread while the first
// parses on. Nothing becomes visible: the run's commit references the staged
// fragments in one atomic write, and a failed run deletes them. Memory holds
// a few batches, plus for keyed runs their key checks: up to about 32,000
// keys in a hash map, beyond that sorted runs on scratch storage within
// `key_memory_bytes`; and for upserts the parsed input while it fits
// `retain_bytes` and the keys stay in the map (otherwise it is parsed twice).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset/dataset.h"
#include "engine/workspace.h"
#include "ingest/run_record.h"

namespace loam::ingest {

struct StagerOptions {
  size_t batch_rows = 1 << 16;
  bool stage = true;  // false: validate and classify only (validationOnly)
  std::function<Result<std::unique_ptr<ByteSource>>(const std::string& file)> open_input;
  // After each batch, with the counters so far; non-OK stops the run (a lost lease).
  std::function<Status(const RunCounters&)> on_batch;
  // Upserts: parsed batches kept between the two passes, up to this many
  // bytes; beyond it the input is parsed a second time instead.
  size_t retain_bytes = size_t{64} << 20;
  // Keyed runs (upserts, and appends or replaces into a table with declared
  // keys): the key checks hold at most this many bytes. Past it they spill:
  // the run's and the table's keys are sorted on local scratch storage under
  // `scratch_dir` (empty: the system's temporary directory) and merged.
  size_t key_memory_bytes = kDefaultKeyMemoryBytes;
  std::string scratch_dir;
  static constexpr size_t kDefaultKeyMemoryBytes = size_t{512} << 20;
  // The run's keys stay in a hash map (with its copy while it grows) up to
  // this many bytes of the bound, about 32,000 keys; larger runs sort them
  // even below the bound: the map's random access to hundreds of MiB costs
  // more than sorting (docs/benchmarks.md, "Key checks"). Not for an upsert
  // whose input is kept for its second pass (sorting would parse it again).
  size_t key_map_bytes = size_t{16} << 20;
  // Tests only: every run row's content hash equals its table row's, as if
  // they all collided (a row is unchanged only if its bytes are).
  bool collide_content_hashes = false;
};

struct StagedInput {
  RunCounters counters;  // rows and bytes read; inserted / updated / unchanged / deleted planned
  std::vector<Fragment> staged;
  // skipRows: the rows left out, up to the request's max_errors (never
  // their values).
  std::vector<RunError> rejected;
  // Upserts that staged rows: the merge as classified, for the commit (see
  // MergePlan). Unset when the commit must plan it (a 128-bit key hash
  // matched a different key).
  std::optional<MergePlan> plan;
  // Delete runs (PlanDeletes): the rows they remove, by filter or by address.
  std::vector<Predicate> delete_where;
  std::optional<std::vector<int64_t>> delete_rows;
  // The key checks' memory at its highest, and whether they spilled.
  size_t key_memory_peak = 0;
  bool keys_spilled = false;
};

// What a failed StageInput found.
struct StageFailure {
  std::string file;      // the input its error names
  RunCounters counters;  // what was read up to the failure
  // failRun and validationOnly: after an invalid row the input is validated
  // on (nothing more is staged) and every invalid row is listed, up to the
  // request's max_errors; the error then names the first and counts them.
  std::vector<RunError> errors;
};

// Streams `request`'s files into staged fragments of `data` (the table at
// `table`'s head). On failure the error names the file, line and column,
// *failure says what else was found, and staged files are deleted.
Result<StagedInput> StageInput(const RunRequest& request, const TableState& table,
                               const Dataset& data, const StagerOptions& options,
                               StageFailure* failure);

}  // namespace loam::ingest
