// The commit loop: build a transaction, put-if-absent the next version file,
// and on a lost race rebase, re-run or abort per the conflict matrix.
#include <algorithm>
#include <set>

#include "common/backoff.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/conflict.h"
#include "dataset/dataset.h"

namespace loam {
namespace {

// Between commit attempts: full jitter up to 1 ms * 2^attempt, at most 50 ms.
constexpr Backoff kCommitBackoff{1'000, 50'000, 0.0};

// Removes the fragments with these ids; false when one is missing.
bool RemoveFragments(const std::vector<uint64_t>& ids, DatasetVersion* v) {
  for (uint64_t id : ids) {
    auto it = std::find_if(v->fragments.begin(), v->fragments.end(),
                           [&](const Fragment& f) { return f.id == id; });
    if (it == v->fragments.end()) return false;
    v->fragments.erase(it);
  }
  return true;
}

// Adds `m`, or replaces the index of its name.
void PutIndex(const IndexMeta& m, std::vector<IndexMeta>* indices) {
  auto it = std::find_if(indices->begin(), indices->end(),
                         [&](const IndexMeta& x) { return x.name == m.name; });
  if (it == indices->end()) {
    indices->push_back(m);
  } else {
    *it = m;
  }
}

}  // namespace

Result<bool> Dataset::ApplyDeletions(const Transaction& txn, DatasetVersion* next) const {
  // Inline deletion files share the version's budget with its inline fragments.
  uint64_t budget = MayInline() ? options_->max_inline_bytes_per_version : 0;
  for (const Fragment& f : txn.added) {
    if (f.inline_bytes) budget -= std::min<uint64_t>(budget, f.inline_bytes->size());
  }
  for (const FragmentDeletion& fd : txn.deleted) {
    auto it = std::find_if(next->fragments.begin(), next->fragments.end(),
                           [&](const Fragment& f) { return f.id == fd.fragment_id; });
    if (it == next->fragments.end()) return false;
    ASSIGN_OR_RETURN(DeletionVector existing, ReadDeletions(*it));
    const DeletionVector merged = existing.Union(fd.rows);
    if (merged.size() >= it->physical_rows) {
      next->fragments.erase(it);  // every row deleted
      continue;
    }
    std::string encoded = merged.Encode();
    it->deleted_rows = merged.size();
    it->deletion_offset = 0;
    it->deletion_size = 0;
    if (encoded.size() <= options_->max_inline_deletion_bytes && encoded.size() <= budget) {
      // Placed in the version file by PlaceInlineFragments.
      budget -= encoded.size();
      it->deletion_path.clear();
      it->inline_deletion = std::make_shared<const std::string>(std::move(encoded));
      continue;
    }
    const std::string rel = BranchDir(branch_) + "_deletions/" + std::to_string(it->id) + "-" +
                            NewUlidString() + ".ldel";
    RETURN_NOT_OK(store_->PutIfAbsent(Key(rel), std::move(encoded)).status());
    it->deletion_path = rel;
    it->inline_deletion = nullptr;
  }
  return true;
}

Result<std::optional<DatasetVersion>> Dataset::Apply(const DatasetVersion& base,
                                                     const Transaction& txn) const {
  DatasetVersion next = base;
  next.txn = txn;
  auto add_fragments = [&](const std::vector<Fragment>& added) {
    for (Fragment f : added) {
      f.id = next.next_fragment_id++;
      next.fragments.push_back(std::move(f));
    }
  };
  switch (txn.op) {
    case OpType::kCreate:
      return Status::Internal("create is not applied through the commit loop");
    case OpType::kAppend:
      if (txn.schema) {  // nullable columns added with the rows
        for (const Field& f : txn.schema->fields) {
          if (next.schema.IndexOf(f.name) >= 0) {
            return Status::AlreadyExists("column '" + f.name + "' already exists");
          }
          next.schema.fields.push_back(f);
        }
      }
      add_fragments(txn.added);
      break;
    case OpType::kDelete:
    case OpType::kMergeInsert: {
      ASSIGN_OR_RETURN(bool applied, ApplyDeletions(txn, &next));
      if (!applied) return std::optional<DatasetVersion>();
      add_fragments(txn.added);
      break;
    }
    case OpType::kOverwrite:
      next.fragments.clear();
      add_fragments(txn.added);
      if (txn.schema) next.schema = *txn.schema;
      break;
    case OpType::kRestore: {
      ASSIGN_OR_RETURN(DatasetVersion old, LoadVersion(branch_, txn.restore_version));
      next.fragments = old.fragments;
      next.schema = old.schema;
      next.next_fragment_id = std::max(next.next_fragment_id, old.next_fragment_id);
      break;
    }
    case OpType::kAddColumn: {
      const Field& f = txn.schema->fields.at(0);
      if (next.schema.IndexOf(f.name) >= 0) {
        return Status::AlreadyExists("column '" + f.name + "' already exists");
      }
      next.schema.fields.push_back(f);
      break;
    }
    case OpType::kCreateIndex:
      break;
    case OpType::kRewrite:
      if (!RemoveFragments(txn.removed, &next)) return std::optional<DatasetVersion>();
      // Indices stay: entries naming removed fragments are never used (ids
      // are not reused), and the added fragments are their uncovered tail.
      add_fragments(txn.added);
      if (txn.schema) next.schema = *txn.schema;  // an adopted version's
      break;
    case OpType::kCompact:
      if (!RemoveFragments(txn.removed, &next)) return std::optional<DatasetVersion>();
      add_fragments(txn.added);
      // Indices follow the moved rows rather than losing them to the tail.
      for (IndexMeta& index : next.indices) {
        const bool touched = std::any_of(txn.removed.begin(), txn.removed.end(),
                                         [&](uint64_t id) { return index.Covers(id); });
        if (touched) {
          ASSIGN_OR_RETURN(index, RemapIndex(base, next, index));
        }
      }
      break;
  }
  for (const IndexMeta& m : txn.indices) PutIndex(m, &next.indices);
  return std::optional<DatasetVersion>(std::move(next));
}

Result<Dataset> Dataset::CommitRewrite(std::vector<Fragment> added, std::vector<uint64_t> removed,
                                       const AppSectionBuilder& app_section,
                                       std::string txn_id) const {
  Transaction txn;
  txn.op = OpType::kRewrite;
  txn.read_version = state_->version;
  txn.id = txn_id.empty() ? NewUlidString() : std::move(txn_id);
  txn.added = std::move(added);
  txn.removed = std::move(removed);
  ASSIGN_OR_RETURN(std::optional<DatasetVersion> next, Apply(*state_, txn));
  if (!next) return Status::InvalidArgument("rewrite removes a fragment the version does not have");
  next->version = state_->version + 1;
  next->timestamp_micros = options_->clock->NowMicros();
  next->branch = state_->branch;
  const std::string rel = BranchDir(branch_) + "_versions/" + VersionFileName(next->version);
  // Inline fragments are placed as if after a non-empty section (the builder
  // must return one), so the builder can name their final places.
  next->app_section = " ";
  PlaceInlineFragments(&*next, rel);
  std::vector<Fragment> committed_added;
  for (const Fragment& f : next->fragments) {
    if (f.id >= state_->next_fragment_id) committed_added.push_back(f);
  }
  ASSIGN_OR_RETURN(next->app_section, app_section(committed_added));
  if (next->app_section.empty() || next->app_section.size() > kMaxAppSection) {
    return Status::InvalidArgument("application section of " +
                                   std::to_string(next->app_section.size()) +
                                   " bytes: it must be 1 to " + std::to_string(kMaxAppSection));
  }
  const std::string key = Key(rel);
  Result<ObjectMeta> put = store_->PutIfAbsent(key, EncodeVersionFile(*next));
  if (put.ok()) {
    ForgetInlineBytes(&*next);
    NoteCommitted(next->version);
    return WithState(*std::move(next));
  }
  if (put.status().IsAlreadyExists()) {
    return Status::Aborted("version " + std::to_string(next->version) +
                           " was committed concurrently");
  }
  ASSIGN_OR_RETURN(std::optional<DatasetVersion> landed,
                   ReadBackUnanswered(key, txn.id, put.status(), next->version));
  if (landed) return WithState(*std::move(landed));
  return Status::Aborted("version " + std::to_string(next->version) +
                         " was committed concurrently");
}

Result<std::optional<DatasetVersion>> Dataset::ReadBackUnanswered(const std::string& key,
                                                                  const std::string& txn_id,
                                                                  const Status& put,
                                                                  uint64_t version) const {
  Result<std::string> landed = store_->Get(key);
  if (landed.ok()) {
    Result<DatasetVersion> v = DecodeVersionFile(*landed, key);
    if (v.ok() && v->txn.id == txn_id) {
      NoteCommitted(version);
      return std::optional<DatasetVersion>(*std::move(v));
    }
    if (v.ok()) return std::optional<DatasetVersion>();
  }
  return put.WithContext("committing version " + std::to_string(version))
      .WithDetail(std::string(kCommitOutcomeDetail), "unknown");
}

void Dataset::DiscardDeletionFiles(const Transaction& txn, const DatasetVersion& base,
                                   const DatasetVersion& unpublished) const {
  // Only a delete or merge-insert writes deletion files, one per fragment it
  // deletes from whose vector does not go inline. Anything else `unpublished`
  // carries (a restore's old vectors) belongs to committed versions.
  if (txn.op != OpType::kDelete && txn.op != OpType::kMergeInsert) return;
  std::set<uint64_t> deleted_from;
  for (const FragmentDeletion& fd : txn.deleted) deleted_from.insert(fd.fragment_id);
  std::set<std::string> kept;
  for (const Fragment& f : base.fragments) kept.insert(f.deletion_path);
  for (const Fragment& f : unpublished.fragments) {
    // An inline vector lives in the version file the attempt failed to put,
    // whose name another writer now holds.
    if (!deleted_from.count(f.id) || f.deletion_offset != 0 ||
        !f.deletion_path.ends_with(".ldel") || kept.count(f.deletion_path)) {
      continue;
    }
    NoteCleanupFailure("removing an unpublished deletion file",
                       store_->DeleteRelaxed(Key(f.deletion_path)));
  }
}

Result<bool> Dataset::MustPlanAgain(const Transaction& txn, const DatasetVersion& current,
                                    const DatasetVersion& latest) const {
  for (uint64_t v = current.version + 1; v <= latest.version; ++v) {
    DatasetVersion other;
    if (v == latest.version) {
      other = latest;
    } else {
      Result<DatasetVersion> between = LoadVersion(branch_, v);
      // Retention removed it (a base older than the time-travel window):
      // what it did is unknown, so plan again on the latest.
      if (between.status().IsNotFound()) return true;
      ASSIGN_OR_RETURN(other, std::move(between));
    }
    switch (CheckConflict(txn, other.txn)) {
      case ConflictVerdict::kCompatible:
        break;
      case ConflictVerdict::kRetry:
        return true;
      case ConflictVerdict::kAbort:
        return Status::Aborted(std::string(OpTypeName(txn.op)) + " read version " +
                               std::to_string(txn.read_version) + " but a concurrent " +
                               std::string(OpTypeName(other.txn.op)) + " committed version " +
                               std::to_string(v));
    }
  }
  return false;
}

Result<Dataset> Dataset::RunOperation(const TxnBuilder& build, const CommitOptions& opts) const {
  if (opts.app_section && opts.app_section->size() > kMaxAppSection) {
    return Status::InvalidArgument("application section of " +
                                   std::to_string(opts.app_section->size()) +
                                   " bytes exceeds the limit of " + std::to_string(kMaxAppSection));
  }
  const int max_attempts = options_->max_commit_attempts;
  for (int run = 0; run < max_attempts; ++run) {
    // A trusted snapshot at the expected version is its own base: if it is
    // no longer the latest, the put-if-absent below fails (Aborted).
    DatasetVersion base;
    if (run == 0 && opts.trust_snapshot && opts.expected_version && state_ &&
        state_->version == *opts.expected_version) {
      base = *state_;
    } else {
      ASSIGN_OR_RETURN(base, LoadLatest(branch_));
    }
    if (opts.expected_version && base.version != *opts.expected_version) {
      return Status::Conflict("expected version " + std::to_string(*opts.expected_version) +
                              " but the latest is " + std::to_string(base.version));
    }
    ASSIGN_OR_RETURN(std::optional<Transaction> txn, build(base));
    if (!txn) return WithState(std::move(base));  // nothing to commit
    txn->read_version = base.version;
    txn->id = opts.txn_id.empty() ? NewUlidString() : opts.txn_id;

    DatasetVersion current = std::move(base);
    bool rerun = false;
    for (int attempt = 0; attempt < max_attempts && !rerun; ++attempt) {
      ASSIGN_OR_RETURN(std::optional<DatasetVersion> next, Apply(current, *txn));
      if (!next) {
        rerun = true;
        break;
      }
      next->version = current.version + 1;
      next->timestamp_micros = options_->clock->NowMicros();
      next->app_section = opts.app_section.value_or(current.app_section);
      next->branch = current.branch;
      const std::string rel = BranchDir(branch_) + "_versions/" + VersionFileName(next->version);
      PlaceInlineFragments(&*next, rel);
      const std::string key = Key(rel);
      Result<ObjectMeta> put = store_->PutIfAbsent(key, EncodeVersionFile(*next));
      if (put.ok()) {
        ForgetInlineBytes(&*next);
        NoteCommitted(next->version);
        return WithState(*std::move(next));
      }
      if (!put.status().IsAlreadyExists()) {
        // Outcome unknown (e.g. a timeout): our transaction id decides; a
        // version of another's is a race lost like an AlreadyExists.
        ASSIGN_OR_RETURN(std::optional<DatasetVersion> landed,
                         ReadBackUnanswered(key, txn->id, put.status(), next->version));
        if (landed) return WithState(*std::move(landed));
      }
      DiscardDeletionFiles(*txn, current, *next);  // each attempt writes its own
      if (opts.expected_version) {
        return Status::Aborted("version " + std::to_string(next->version) +
                               " was committed concurrently");
      }
      // Lost the race: judge every version committed since `current`.
      ASSIGN_OR_RETURN(DatasetVersion latest, LoadLatest(branch_));
      ASSIGN_OR_RETURN(rerun, MustPlanAgain(*txn, current, latest));
      if (!rerun) current = std::move(latest);
      kCommitBackoff.Sleep(attempt);
    }
    if (!rerun) break;
    LOAM_LOG_DEBUG("re-running {} after a conflicting commit", OpTypeName(txn->op));
    kCommitBackoff.Sleep(run);
  }
  return Status::Aborted("gave up after " + std::to_string(max_attempts) +
                         " attempts to commit against concurrent writers");
}

}  // namespace loam
