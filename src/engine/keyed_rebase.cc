// A keyed append's key check and an upsert's merge plan, carried from the
// table version they were made on to the table's head
// (WorkspaceEngine::KeysStillAbsent, WorkspaceEngine::CarryMergePlan).
//
// A keyed append is checked against version V: none of its keys is live
// there. At a later version W the only rows that can hold one of its keys
// are those live at W but not at V, which Dataset::RowsChangedSince lists
// (fragments added since, rows a restore brought back). If none does, the
// append may commit on W exactly as if it had been checked there. Without
// this, a keyed append on a busy table checked all of its fragments again
// after every commit that beat it, and could starve.
//
// An upsert's plan made at V names the live rows it replaces and leaves
// alone (by address) and the keys it inserts. On a table with declared keys
// (one live row per key), the plan still holds at W when every row it names
// is still live there (so no commit since updated or deleted one of its
// keys) and no row that became live since holds a key it inserts.
#include <unordered_set>

#include "common/sorted.h"
#include "common/status_macros.h"
#include "engine/workspace.h"
#include "format/page.h"

namespace loam {
namespace {

// Rows a carried check reads at most; beyond it the run checks again.
constexpr size_t kMaxRowsToCarry = size_t{1} << 16;

// The encoded keys of `b`'s rows (`keys` columns, in that order).
Result<std::vector<std::string>> KeysOf(const RecordBatch& b,
                                        const std::vector<std::string>& keys) {
  std::vector<const Column*> cols;
  for (const std::string& k : keys) {
    const int i = b.schema.IndexOf(k);
    if (i < 0) return Status::Internal("key column '" + k + "' was not read");
    cols.push_back(&b.columns[static_cast<size_t>(i)]);
  }
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(b.num_rows()));
  for (int64_t r = 0; r < b.num_rows(); ++r) out.push_back(EncodeRowKey(cols, r));
  return out;
}

// The encoded keys of the rows at `addresses` (live in `now`); nullopt when
// there are too many to read cheaply or the read failed.
std::optional<std::unordered_set<std::string>> KeysAt(const Dataset& now,
                                                      const std::vector<uint64_t>& addresses,
                                                      const std::vector<std::string>& keys) {
  if (addresses.size() > kMaxRowsToCarry) return std::nullopt;
  std::unordered_set<std::string> held;
  if (addresses.empty()) return held;
  ScanSpec spec;
  spec.columns = keys;
  Status read = now.TakeEach(addresses, spec, [&](const RecordBatch& b) -> Status {
    ASSIGN_OR_RETURN(std::vector<std::string> encoded, KeysOf(b, keys));
    for (std::string& k : encoded) held.insert(std::move(k));
    return Status::OK();
  });
  if (!read.ok()) return std::nullopt;
  return held;
}

// Whether a row live in `now` but not in `then` holds one of `staged`'s
// keys; nullopt when that cannot be told cheaply or at all.
std::optional<bool> AddedRowHoldsAKey(const Dataset& now, const Dataset& then,
                                      const std::vector<Fragment>& staged,
                                      const std::vector<std::string>& keys) {
  Result<Dataset::RowChanges> changes = now.RowsChangedSince(then);
  if (!changes.ok()) return std::nullopt;
  const std::optional<std::unordered_set<std::string>> live = KeysAt(now, changes->added, keys);
  if (!live) return std::nullopt;
  if (live->empty()) return false;
  Result<std::vector<RecordBatch>> mine = now.ReadStaged(staged, keys);
  if (!mine.ok()) return std::nullopt;
  for (const RecordBatch& b : *mine) {
    Result<std::vector<std::string>> own = KeysOf(b, keys);
    if (!own.ok()) return std::nullopt;
    for (const std::string& k : *own) {
      if (live->count(k) > 0) return true;
    }
  }
  return false;
}

}  // namespace

Status WorkspaceEngine::CarryMergePlan(const Snapshot& snap, const TableState& t,
                                       const WriteRequest& req, MergePlan* carried) const {
  const int64_t planned = req.expected_version.value_or(-1);
  const Status moved = Status::Conflict("table '" + t.def.name + "' is at version " +
                                        std::to_string(t.head.table_version) +
                                        ", not the expected " + std::to_string(planned));
  const MergePlan* plan = req.merge_plan;
  if (!req.expected_for_keys || t.def.keys.empty() || plan == nullptr || !plan->all_unchanged ||
      planned < 1 || planned > t.head.table_version) {
    return moved;
  }
  // A plan that cannot be carried (a version cleaned up since, a read that
  // failed, too many rows to look at) is made again by the run.
  Result<Dataset> now = OpenTable(snap, t.def.name);
  if (!now.ok()) return moved;
  Result<Dataset> then = now->CheckoutVersion(static_cast<uint64_t>(planned));
  if (!then.ok() || then->state().fragments != plan->basis) return moved;
  Result<Dataset::RowChanges> changes = now->RowsChangedSince(*then);
  if (!changes.ok()) return moved;
  if (SortedIntersect(plan->replaced, changes->removed) ||
      SortedIntersect(plan->unchanged, changes->removed)) {
    return Status::Conflict("a commit to table '" + t.def.name + "' since version " +
                            std::to_string(planned) + " changed one of run " + req.run_id +
                            "'s keys");
  }
  const std::optional<std::unordered_set<std::string>> added =
      KeysAt(*now, changes->added, t.def.keys);
  if (!added) return moved;
  for (const std::string& k : plan->inserted_keys) {
    if (added->count(k) > 0) {
      return Status::Conflict("table '" + t.def.name + "' gained one of run " + req.run_id +
                              "'s keys since version " + std::to_string(planned));
    }
  }
  *carried = *plan;
  carried->basis = now->state().fragments;
  return Status::OK();
}

Status WorkspaceEngine::KeysStillAbsent(const Snapshot& snap, const TableState& t,
                                        const WriteRequest& req) const {
  const int64_t checked = req.expected_version.value_or(-1);
  const Status moved = Status::Conflict("table '" + t.def.name + "' is at version " +
                                        std::to_string(t.head.table_version) +
                                        ", not the expected " + std::to_string(checked));
  // Only a keyed append's own check is carried (a caller's expected version
  // is a compare-and-swap), and only a small one: its keys are read back.
  if (!req.expected_for_keys || t.def.keys.empty() || !req.staged_rows || checked < 1 ||
      checked > t.head.table_version) {
    return moved;
  }
  uint64_t staged_bytes = 0;
  for (const Fragment& f : req.staged) staged_bytes += f.data_size;
  if (staged_bytes > kMaxGroupedKeyedBytes) return moved;
  // A check that cannot be carried (a version cleaned up since, a read that
  // failed) is made again by the run, as when nothing is carried.
  Result<Dataset> now = OpenTable(snap, t.def.name);
  if (!now.ok()) return moved;
  Result<Dataset> then = now->CheckoutVersion(static_cast<uint64_t>(checked));
  if (!then.ok()) return moved;
  const std::optional<bool> holds = AddedRowHoldsAKey(*now, *then, req.staged, t.def.keys);
  if (!holds) return moved;
  if (*holds) {
    return Status::Conflict("table '" + t.def.name + "' gained one of run " + req.run_id +
                            "'s keys since version " + std::to_string(checked));
  }
  return Status::OK();
}

}  // namespace loam
