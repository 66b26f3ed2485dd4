#include "dataset/conflict.h"

#include <algorithm>
#include <set>

namespace loam {
namespace {

bool Replaces(OpType op) {
  return op == OpType::kOverwrite || op == OpType::kRestore || op == OpType::kRewrite;
}
bool Deletes(OpType op) { return op == OpType::kDelete || op == OpType::kMergeInsert; }

bool Contains(const std::vector<uint64_t>& ids, uint64_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// Both delete some of the same rows.
bool DeletionsOverlap(const Transaction& a, const Transaction& b) {
  for (const FragmentDeletion& x : a.deleted) {
    for (const FragmentDeletion& y : b.deleted) {
      if (x.fragment_id == y.fragment_id && x.rows.Intersects(y.rows)) return true;
    }
  }
  return false;
}

bool TouchesRemoved(const Transaction& deleter, const Transaction& compaction) {
  for (const FragmentDeletion& x : deleter.deleted) {
    if (Contains(compaction.removed, x.fragment_id)) return true;
  }
  return false;
}

bool KeysOverlap(const Transaction& a, const Transaction& b) {
  if (a.inserted_keys.empty() || b.inserted_keys.empty()) return false;
  const std::set<std::string> keys(a.inserted_keys.begin(), a.inserted_keys.end());
  for (const std::string& k : b.inserted_keys) {
    if (keys.count(k)) return true;
  }
  return false;
}

}  // namespace

ConflictVerdict CheckConflict(const Transaction& mine, const Transaction& theirs) {
  switch (mine.op) {
    case OpType::kCreate:
    case OpType::kRewrite:  // committed only against an expected version
      return ConflictVerdict::kAbort;
    case OpType::kCreateIndex:
      // Entries name fragment ids, which are never reused: an index stays
      // correct whatever committed meanwhile (coverage only shrinks).
      return ConflictVerdict::kCompatible;
    case OpType::kOverwrite:
    case OpType::kRestore:
      return ConflictVerdict::kCompatible;  // replaces whatever is there
    case OpType::kAppend:
      if (Replaces(theirs.op)) return ConflictVerdict::kAbort;
      // An append that adds columns loses to any schema change that landed.
      if (mine.schema && theirs.schema) return ConflictVerdict::kAbort;
      return ConflictVerdict::kCompatible;
    case OpType::kDelete:
    case OpType::kMergeInsert:
      if (Replaces(theirs.op)) return ConflictVerdict::kAbort;
      if (theirs.op == OpType::kCompact && TouchesRemoved(mine, theirs))
        return ConflictVerdict::kRetry;
      if (Deletes(theirs.op) && DeletionsOverlap(mine, theirs)) return ConflictVerdict::kRetry;
      // Two upserts that both inserted a key would leave two live rows.
      if (theirs.op == OpType::kMergeInsert && KeysOverlap(mine, theirs))
        return ConflictVerdict::kRetry;
      return ConflictVerdict::kCompatible;
    case OpType::kAddColumn:
      if (Replaces(theirs.op)) return ConflictVerdict::kAbort;
      if ((theirs.op == OpType::kAddColumn || theirs.op == OpType::kAppend) && mine.schema &&
          theirs.schema && theirs.schema->IndexOf(mine.schema->fields[0].name) >= 0) {
        return ConflictVerdict::kAbort;
      }
      return ConflictVerdict::kCompatible;
    case OpType::kCompact:
      if (Replaces(theirs.op)) return ConflictVerdict::kAbort;
      if (Deletes(theirs.op) && TouchesRemoved(theirs, mine)) return ConflictVerdict::kRetry;
      if (theirs.op == OpType::kCompact) {
        for (uint64_t id : mine.removed) {
          if (Contains(theirs.removed, id)) return ConflictVerdict::kRetry;
        }
      }
      return ConflictVerdict::kCompatible;
  }
  return ConflictVerdict::kAbort;
}

}  // namespace loam
