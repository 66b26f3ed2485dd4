// Where rows went: Dataset::MovedRows (one compaction) and
// Dataset::FollowRows (every compaction since a version).
//
// A compaction writes the live rows of the fragments it removes, in the
// order `txn.removed` lists them, as the rows of the fragments it adds, in
// order; a compaction that a concurrent delete of one of its fragments
// would change runs again (the conflict matrix), so the deletion vectors of
// the version it committed on are those it read. The move is therefore
// derived from the two version files, and nothing more is stored.
//
// A fragment id is never reused, and a fragment leaves a branch's versions
// when a commit removes it; a restore can bring it back. FollowRows finds a
// version where the fragment left by bisection between one that has it and
// this snapshot (which does not). When a restore made its presence
// non-monotone, the removal found may not be the last one: the rows are
// then followed through a later removal that is not a compaction and are
// reported lost, never placed wrongly.
#include <algorithm>
#include <map>

#include "common/status_macros.h"
#include "dataset/dataset.h"

namespace loam {

Result<std::vector<RowsMoved>> Dataset::MovedRows(const DatasetVersion& before,
                                                  const DatasetVersion& after) const {
  const Transaction& txn = after.txn;
  if (txn.op != OpType::kCompact || after.fragments.size() < txn.added.size()) {
    return Status::InvalidArgument("version " + std::to_string(after.version) +
                                   " is not a compaction");
  }
  std::vector<RowsMoved> out;
  size_t slot = after.fragments.size() - txn.added.size();  // the added fragments, in order
  uint64_t slot_row = 0;
  // Places `rows` rows starting at `from_row` of `from`, across slots.
  auto place = [&](uint64_t from, uint64_t from_row, uint64_t rows) -> Status {
    while (rows > 0) {
      while (slot < after.fragments.size() && slot_row == after.fragments[slot].physical_rows) {
        ++slot;
        slot_row = 0;
      }
      if (slot == after.fragments.size()) return Status::Internal("compaction row counts disagree");
      const Fragment& to = after.fragments[slot];
      const uint64_t take = std::min(rows, to.physical_rows - slot_row);
      out.push_back({from, from_row, take, to.id, slot_row});
      slot_row += take;
      from_row += take;
      rows -= take;
    }
    return Status::OK();
  };
  for (uint64_t id : txn.removed) {
    const Fragment* f = before.FindFragment(id);
    if (f == nullptr) return Status::Internal("compaction removed an unknown fragment");
    ASSIGN_OR_RETURN(DeletionVector dv, ReadDeletions(*f));
    uint64_t run_start = 0;
    for (uint64_t r = 0; r <= f->physical_rows; ++r) {
      const bool live = r < f->physical_rows && !dv.Contains(static_cast<uint32_t>(r));
      if (live) continue;
      if (r > run_start) RETURN_NOT_OK(place(id, run_start, r - run_start));
      run_start = r + 1;
    }
  }
  return out;
}

namespace {

// The version after `has` (which holds `fragment`) and at most `last` (which
// does not) where `fragment` is gone, the one before it holding it.
template <typename Load>
Result<uint64_t> FirstWithout(uint64_t fragment, uint64_t has, uint64_t last, Load&& load) {
  uint64_t lo = has, hi = last;
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(const DatasetVersion* v, load(mid));
    if (v->FindFragment(fragment) != nullptr) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return hi;
}

}  // namespace

Result<FollowedRows> Dataset::FollowRows(const std::vector<RowRange>& ranges,
                                         uint64_t since) const {
  std::map<uint64_t, DatasetVersion> versions;
  auto load = [&](uint64_t v) -> Result<const DatasetVersion*> {
    auto it = versions.find(v);
    if (it == versions.end()) {
      ASSIGN_OR_RETURN(DatasetVersion loaded, LoadVersion(branch_, v));
      it = versions.emplace(v, std::move(loaded)).first;
    }
    return &it->second;
  };
  std::map<uint64_t, std::vector<RowsMoved>> moves;  // by compaction version
  FollowedRows out;
  std::vector<std::pair<RowRange, uint64_t>> work;  // a range, and a version holding it
  for (const RowRange& r : ranges) work.push_back({r, since});
  while (!work.empty()) {
    auto [r, has] = work.back();
    work.pop_back();
    if (const Fragment* f = state_->FindFragment(r.fragment); f != nullptr) {
      if (r.first < f->physical_rows) {
        out.here.push_back({r.fragment, r.first, std::min(r.count, f->physical_rows - r.first)});
      }
      continue;
    }
    // Where it went; a version cleaned up since (NotFound) ends the trail,
    // and any other failure to read one fails the call.
    const auto failed = [](const Status& s) { return !s.ok() && !s.IsNotFound(); };
    Result<const DatasetVersion*> start = load(has);
    if (failed(start.status())) return start.status();
    const Fragment* then = start.ok() ? (*start)->FindFragment(r.fragment) : nullptr;
    const uint64_t rows = then == nullptr || r.first >= then->physical_rows
                              ? 0
                              : std::min(r.count, then->physical_rows - r.first);
    Result<uint64_t> gone = then == nullptr || has >= version()
                                ? Result<uint64_t>(Status::NotFound("no trail"))
                                : FirstWithout(r.fragment, has, version(), load);
    Result<const DatasetVersion*> after = gone.ok() ? load(*gone) : gone.status();
    Result<const DatasetVersion*> before = gone.ok() ? load(*gone - 1) : gone.status();
    for (const Status& s : {gone.status(), after.status(), before.status()}) {
      if (failed(s)) return s;
    }
    const OpType op = after.ok() ? (*after)->txn.op : OpType::kCreate;
    if (op == OpType::kDelete || op == OpType::kMergeInsert) continue;  // every row deleted
    const bool compacted =
        before.ok() && op == OpType::kCompact &&
        std::count((*after)->txn.removed.begin(), (*after)->txn.removed.end(), r.fragment) > 0;
    if (!compacted) {
      out.lost += rows;
      continue;
    }
    auto m = moves.find(*gone);
    if (m == moves.end()) {
      // A version cleanup kept only as a file (it holds inline parts still in
      // use) may name deletion files that are gone: its history ends there.
      Result<std::vector<RowsMoved>> moved = MovedRows(**before, **after);
      if (moved.status().IsNotFound()) {
        out.lost += rows;
        continue;
      }
      RETURN_NOT_OK(moved.status());
      m = moves.emplace(*gone, std::move(*moved)).first;
    }
    const uint64_t end = r.first + rows;
    for (const RowsMoved& mv : m->second) {
      if (mv.from != r.fragment) continue;
      const uint64_t lo = std::max(r.first, mv.from_row);
      const uint64_t hi = std::min(end, mv.from_row + mv.rows);
      if (lo < hi) work.push_back({{mv.to, mv.to_row + (lo - mv.from_row), hi - lo}, *gone});
    }
  }
  std::sort(out.here.begin(), out.here.end(), [](const RowRange& a, const RowRange& b) {
    return a.fragment != b.fragment ? a.fragment < b.fragment : a.first < b.first;
  });
  return out;
}

}  // namespace loam
