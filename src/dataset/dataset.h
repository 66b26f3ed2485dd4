// Dataset: a versioned table of fragments in an object store.
//
// A Dataset value is an immutable snapshot of one version on one branch.
// Reads use the snapshot; writes build a Transaction against the latest
// version of the branch, commit it with put-if-absent of the next version
// file, and on a lost race rebase per the conflict matrix (conflict.h) or
// re-run the operation. Every write returns the snapshot it committed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/lru_cache.h"
#include "dataset/version_file.h"
#include "format/fragment_reader.h"
#include "format/fragment_writer.h"
#include "loam/batch.h"
#include "loam/object_store.h"
#include "loam/predicate.h"

namespace loam {

struct DatasetOptions {
  FragmentWriteOptions write;
  uint64_t max_rows_per_fragment = 1 << 20;
  // A fragment that encodes to at most this many bytes is embedded in the
  // version file that adds it instead of getting a file of its own: one
  // durable object per small commit instead of two. 0 turns this off.
  uint64_t max_inline_fragment_bytes = 32 << 10;
  // The same for a deletion file (4 bytes per deleted row of a fragment).
  uint64_t max_inline_deletion_bytes = 64 << 10;
  // All inline parts of one version file together; past it, files. Every
  // open of the version reads them.
  uint64_t max_inline_bytes_per_version = 1 << 20;
  int max_commit_attempts = 20;
  const Clock* clock = Clock::System();
  // Decoded fragment footers, pages, deletion vectors and index pages of
  // immutable files, shared by every snapshot opened with these options.
  // nullptr: every read goes to the store (what cost tests measure).
  std::shared_ptr<LruCache> cache;
};

// Which snapshot to open. At most one of version / as_of / tag.
struct OpenSpec {
  std::string branch;                   // "" = main
  std::optional<uint64_t> version;      // exact version
  std::optional<int64_t> as_of_micros;  // newest version committed at or before
  std::string tag;                      // a tag (names its own branch)
};

// A commit whose version-file put did not answer and whose read-back could
// not tell whose file is there fails with a status carrying this detail
// ("unknown"): the version may or may not hold the commit's transaction.
inline constexpr std::string_view kCommitOutcomeDetail = "commitOutcome";
inline bool CommitOutcomeUnknown(const Status& s) {
  return !s.ok() && s.detail(kCommitOutcomeDetail) == "unknown";
}

struct CommitOptions {
  // Commit only if the branch's latest version is exactly this one (no
  // rebase): FailedPrecondition when it is not, Aborted when another writer
  // takes the next version first.
  std::optional<uint64_t> expected_version;
  // Opaque bytes stored in the version file's fixed-size section. nullopt
  // carries forward the section of the version committed on top of, so a
  // dataset operation never drops what the application keeps there.
  std::optional<std::string> app_section;
  // The transaction id to commit under (a ULID), when the caller must know it
  // before the commit lands (write sidecars name their planned effect).
  std::string txn_id;
  // With expected_version equal to this snapshot's version: commit on top of
  // the snapshot without re-reading the latest version (one LIST and GET
  // fewer). A stale snapshot then fails with Aborted, not FailedPrecondition.
  bool trust_snapshot = false;
};

struct ScanStats {
  int fragments_scanned = 0;  // read in full (minus pruned row groups)
  int fragments_taken = 0;    // read only at rows an index named
  int index_pages_read = 0;
};

struct ScanSpec {
  std::vector<std::string> columns;  // empty = all
  std::vector<Predicate> where;      // ANDed
  bool with_row_address = false;     // adds int64 "_rowaddr" = fragment id << 32 | row offset
  // When an index serves the predicate: read only the fragments it covers
  // (the caller reads the uncovered tail its own way).
  bool indexed_fragments_only = false;
  std::optional<int64_t> limit;
  bool use_index = true;  // an index on a predicate column narrows covered fragments
  ScanStats* stats = nullptr;
  // Only the fragments at positions [first, last) of the version's list
  // (clamped): splits a scan across threads. nullopt = every fragment.
  std::optional<std::pair<size_t, size_t>> fragment_range;
  // Only fragments whose id is at least this (ids grow with every commit:
  // a row first written after a version whose next_fragment_id was F lies
  // in fragments >= F, rewrites included). An index covering none of them
  // is not read.
  uint64_t min_fragment_id = 0;
};

struct CompactionOptions {
  uint64_t target_rows = 1 << 20;
  double max_deleted_fraction = 0.1;  // rewrite fragments with more deleted rows than this
};

// Whether Compact may rewrite `f`: it is small (under half of target_rows
// live rows) or more than max_deleted_fraction of its rows are deleted.
inline bool Compactable(const Fragment& f, const CompactionOptions& o) {
  return f.live_rows() < o.target_rows / 2 ||
         static_cast<double>(f.deleted_rows) >
             o.max_deleted_fraction * static_cast<double>(f.physical_rows);
}

// A compaction worked out on one version, its new fragments written but not
// committed: CommitCompaction commits it on a later version as long as every
// fragment it removes is still there with the same rows deleted, so a
// compaction next to a stream of appends does not have to win a race it
// spends its whole rewrite in.
struct CompactionPlan {
  std::vector<Fragment> removed;  // as the planned version had them
  std::vector<Fragment> added;    // written, ids not yet assigned
  uint64_t planned_on = 0;
  bool empty() const { return removed.empty(); }
};

struct CompactionStats {
  int fragments_removed = 0;
  int fragments_added = 0;
  uint64_t bytes_written = 0;  // of the added fragments
};

struct CleanupOptions {
  // Versions committed before this time may be removed ...
  int64_t older_than_micros = 0;
  // ... but the newest `keep_versions` of each branch always stay.
  uint64_t keep_versions = 1;
  // Unreferenced files modified after this time are kept.
  int64_t grace_cutoff_micros = 0;
  // When set, decides instead of older_than/keep_versions whether `version`
  // of `branch` may go, given when its successor on the branch was committed.
  // It must be monotone along a branch (true for a version, true for every
  // older one). A branch's newest version, tags and fork points always stay.
  std::function<bool(const std::string& branch, uint64_t version, int64_t successor_micros)>
      expired;
  // A removable version whose file holds inline parts a kept version uses
  // stays. By default it stays loadable, with everything it references;
  // false keeps only the file, for a caller that never loads such a version
  // again (the manifest, whose reads past the window the workspace refuses):
  // otherwise every holder keeps the holders before it.
  bool keep_holders_loadable = true;
};

struct CleanupStats {
  int versions_removed = 0;
  int data_files_removed = 0;
  int deletion_files_removed = 0;
  int index_files_removed = 0;
  uint64_t bytes_removed = 0;
};

struct MergeStats {
  int64_t inserted = 0;
  int64_t updated = 0;
};

// A merge-insert worked out by the caller (a loader, while it stages the
// rows) against one snapshot: the live rows the staged rows replace and the
// keys they insert. MergeInsertStaged uses it when the commit's base has
// exactly the fragments (and deletion files) of `basis`, so row addresses
// mean the same rows; otherwise it plans the merge again from the staged
// files. The caller vouches that it is the exact plan for the staged rows.
// `unchanged` lets a later snapshot take the plan (WorkspaceEngine::CarryMergePlan):
// the run's other keys are those rows' keys.
struct MergePlan {
  // A plan names at most this many unchanged rows; beyond, it is not carried.
  static constexpr size_t kMaxUnchanged = size_t{1} << 16;

  std::vector<Fragment> basis;             // the snapshot's fragments
  std::vector<uint64_t> replaced;          // row addresses of matched live rows
  std::vector<std::string> inserted_keys;  // AppendRowKey bytes of the new keys
  int64_t updated = 0;                     // staged rows that replace live rows
  // Row addresses of live rows equal to the run's row with their key (left
  // alone, not staged), ascending; complete only when `all_unchanged`.
  std::vector<uint64_t> unchanged;
  bool all_unchanged = true;
};

// Rows [first, first + count) of fragment `fragment`.
struct RowRange {
  uint64_t fragment = 0;
  uint64_t first = 0;
  uint64_t count = 0;
  friend bool operator==(const RowRange&, const RowRange&) = default;
};

// Where one compaction put rows: rows [from_row, from_row + rows) of
// fragment `from` became rows [to_row, to_row + rows) of fragment `to`.
struct RowsMoved {
  uint64_t from = 0;
  uint64_t from_row = 0;
  uint64_t rows = 0;
  uint64_t to = 0;
  uint64_t to_row = 0;
};

// What FollowRows found: the ranges this snapshot holds (live or deleted
// rows), and how many rows left with a fragment removed otherwise than by a
// compaction or a delete of every row (a replace, a restore), or whose
// history was cleaned up.
struct FollowedRows {
  std::vector<RowRange> here;
  uint64_t lost = 0;
};

struct VersionSummary {
  uint64_t version = 0;
  int64_t timestamp_micros = 0;
  OpType op = OpType::kCreate;
  uint64_t live_rows = 0;
};

class Dataset {
 public:
  static constexpr const char* kRowAddressColumn = "_rowaddr";

  // Creates version 1 (empty) at `root`; AlreadyExists when a dataset is there.
  static Result<Dataset> Create(std::shared_ptr<ObjectStore> store, std::string root, Schema schema,
                                DatasetOptions options = {});
  static Result<Dataset> Open(std::shared_ptr<ObjectStore> store, std::string root,
                              const OpenSpec& spec = {}, DatasetOptions options = {});
  // The latest version of `branch` when `known` probably is it: a GET of
  // `known` and a HEAD of the next version's file, so the cost does not grow
  // with the number of versions (a LIST reads the whole directory on local
  // disk); a full open when the next version exists. Relies on version files
  // having no gaps above a kept version (Cleanup removes only the oldest).
  static Result<Dataset> OpenLatestFrom(std::shared_ptr<ObjectStore> store, std::string root,
                                        const std::string& branch, uint64_t known,
                                        DatasetOptions options = {});

  uint64_t version() const { return state_->version; }
  const Schema& schema() const { return state_->schema; }
  const DatasetVersion& state() const { return *state_; }
  const std::string& branch() const { return branch_; }
  uint64_t CountRows() const { return state_->live_rows(); }

  Result<std::vector<RecordBatch>> Scan(const ScanSpec& spec) const;
  Result<RecordBatch> ReadAll(const ScanSpec& spec = {}) const;
  // Streams the rows one fragment at a time, so memory holds one fragment's
  // batches; `spec.where` applies per fragment (no index is used).
  Status ScanEach(const ScanSpec& spec,
                  const std::function<Status(const RecordBatch&)>& each) const;
  // The live rows at `row_addresses` (ascending, as returned in "_rowaddr"),
  // one fragment at a time; a fragment file is read only if an address
  // names it. Addresses of deleted rows yield nothing; an address outside
  // the snapshot is InvalidArgument. `spec.where` and `spec.limit` are
  // not allowed.
  Status TakeEach(const std::vector<uint64_t>& row_addresses, const ScanSpec& spec,
                  const std::function<Status(const RecordBatch&)>& each) const;
  // This snapshot reading through `cache` (decoded footers, deletion vectors
  // and taken pages), e.g. for one operation that reads the same fragments
  // several times.
  Dataset WithCache(std::shared_ptr<LruCache> cache) const;
  // The latest snapshot of this snapshot's branch.
  Result<Dataset> Latest() const;
  Result<Dataset> CheckoutVersion(uint64_t version) const;
  Result<std::vector<VersionSummary>> ListVersions() const;

  // --- writes -------------------------------------------------------------
  Result<Dataset> Append(const std::vector<RecordBatch>& batches,
                         const CommitOptions& opts = {}) const;
  // Deletes rows matching every predicate. No match: returns the latest
  // snapshot without committing.
  Result<Dataset> Delete(const std::vector<Predicate>& where, const CommitOptions& opts = {}) const;
  // Deletes the rows at these row addresses (as returned in "_rowaddr").
  // An address outside the snapshot's fragments is InvalidArgument; rows
  // already deleted are ignored.
  Result<Dataset> DeleteRows(const std::vector<int64_t>& row_addresses,
                             const CommitOptions& opts = {}) const;
  // Upsert on `keys`: source rows whose key matches a live row replace it;
  // the others are inserted. Duplicate keys in the source are InvalidArgument.
  Result<Dataset> MergeInsert(const std::vector<std::string>& keys,
                              const std::vector<RecordBatch>& source, MergeStats* stats = nullptr,
                              const CommitOptions& opts = {}) const;
  // Replaces all rows. The schema changes only when `new_schema` is given.
  Result<Dataset> Overwrite(const std::vector<RecordBatch>& batches,
                            std::optional<Schema> new_schema = std::nullopt,
                            const CommitOptions& opts = {}) const;
  // The same three writes with rows already written as fragment files by
  // WriteFragment (no version references them yet), so a caller can stream
  // rows to storage and commit them at once. The fragments must hold rows of
  // this dataset's schema (with `add_columns`: that schema and then these
  // nullable columns, which the same commit adds to the dataset).
  Result<Dataset> AppendStaged(std::vector<Fragment> staged, const CommitOptions& opts = {},
                               std::vector<Field> add_columns = {}) const;
  // The `columns` of fragments written by WriteFragment and not committed.
  Result<std::vector<RecordBatch>> ReadStaged(const std::vector<Fragment>& staged,
                                              const std::vector<std::string>& columns) const;
  // The rows of `runs` (each one's fragments, kept in memory by
  // WriteFragment, none committed) as fewer fragments, in order (staged.cc):
  // runs that commit together share one while their bytes add up to at most
  // max_inline_fragment_bytes and their rows to max_rows_per_fragment, and
  // no run is split. A joined fragment that encodes larger, passes the
  // version's inline budget, or is off main is written as a file.
  // InvalidArgument when a fragment of `runs` is a file.
  Result<std::vector<Fragment>> JoinStaged(const std::vector<std::vector<Fragment>>& runs) const;
  Result<Dataset> MergeInsertStaged(const std::vector<std::string>& keys,
                                    std::vector<Fragment> staged, MergeStats* stats = nullptr,
                                    const CommitOptions& opts = {},
                                    const MergePlan* plan = nullptr) const;
  Result<Dataset> OverwriteStaged(std::vector<Fragment> staged,
                                  const CommitOptions& opts = {}) const;
  // Deletes the rows at `row_addresses` and adds `staged` (written by
  // WriteFragment) in one commit: a revert that puts back the rows a commit
  // replaced. Every address must name a live row of the commit's base
  // (FailedPrecondition otherwise: a later commit deleted or rewrote it), so
  // exactly these rows leave. Conflicts as a merge-insert does.
  Result<Dataset> ReplaceRowsStaged(const std::vector<int64_t>& row_addresses,
                                    std::vector<Fragment> staged,
                                    const CommitOptions& opts = {}) const;
  // How the live rows changed since `earlier` (an older snapshot of this
  // branch), by address, ascending. `removed`: rows live in `earlier` that
  // this snapshot no longer holds live (rows deleted since, and every live row
  // of a fragment removed since). `added`: rows live here that were not live
  // in `earlier` (the rows of fragments added since, and rows a restore
  // brought back). Each deletion file is read once.
  struct RowChanges {
    std::vector<uint64_t> added;
    std::vector<uint64_t> removed;
  };
  Result<RowChanges> RowsChangedSince(const Dataset& earlier) const;
  Result<std::vector<uint64_t>> RowsRemovedSince(const Dataset& earlier) const;  // .removed
  // Where rows that were in this branch at version `since` (whose fragments
  // that version has) are in this snapshot, following every compaction since
  // that moved them (row_lineage.cc). A count past a fragment's end means
  // the rest of it. Rows deleted before a compaction moved their fragment are
  // neither here nor lost.
  Result<FollowedRows> FollowRows(const std::vector<RowRange>& ranges, uint64_t since) const;
  // The rows compaction `after.txn` moved from `before` (the version it
  // committed on): the live rows of its removed fragments, in order, are the
  // rows of its added ones.
  Result<std::vector<RowsMoved>> MovedRows(const DatasetVersion& before,
                                           const DatasetVersion& after) const;
  // Makes an older version's content the new latest version.
  Result<Dataset> Restore(uint64_t version, const CommitOptions& opts = {}) const;
  // Makes `source`'s content (a version of another branch of this dataset)
  // this branch's next version (adopt.cc): fragments this snapshot holds
  // unchanged keep their ids, the others leave or join (with new ids), and
  // the schema becomes the source's. A file of a branch outside this one's
  // chain of parents (the source's own data and deletion files) is copied
  // into this branch's directory first, so removing the source's branch
  // later takes nothing this branch reads. `copied_bytes`, when given,
  // receives the bytes copied.
  Result<Dataset> Adopt(const Dataset& source, const CommitOptions& opts = {},
                        uint64_t* copied_bytes = nullptr) const;
  // Adds a nullable column; existing rows read as null.
  Result<Dataset> AddColumn(const Field& field, const CommitOptions& opts = {}) const;

  // --- indices (index_ops.cc) ------------------------------------------------
  // Builds a B+tree index on `column` covering every current fragment.
  Result<Dataset> CreateIndex(const std::string& name, const std::string& column,
                              const CommitOptions& opts = {}) const;
  // Folds fragments appended since each index was built (its uncovered tail)
  // into a new index file. Nothing to fold: no commit.
  Result<Dataset> OptimizeIndices(const CommitOptions& opts = {}) const;
  // Several indices on one column, each covering its own fragments (a
  // scan consults them all): one commit builds each of `outputs` from the
  // entries of its `from` indices (of fragments still there) and, with
  // `tail`, of the fragments no index on the column covers. An output named
  // like an existing index replaces it; one with nothing to hold is empty.
  struct IndexRebuild {
    std::string name;
    std::vector<std::string> from;
    bool tail = false;
  };
  Result<Dataset> RebuildIndices(const std::string& column,
                                 const std::vector<IndexRebuild>& outputs,
                                 const CommitOptions& opts = {}) const;

  // --- maintenance (maintenance.cc) ------------------------------------------
  // Rewrites small fragments, and fragments with many deleted rows, into
  // fragments of up to target_rows live rows. No candidates: no commit.
  Result<Dataset> Compact(const CompactionOptions& options = {}, CompactionStats* stats = nullptr,
                          const CommitOptions& opts = {}) const;
  // Compact in two steps: the plan on this version (its fragments written;
  // empty when nothing is due), then its commit on this (later) version;
  // FailedPrecondition naming a removed fragment whose rows changed since.
  // A plan never committed leaves its fragments to DeleteStaged or gc.
  Result<CompactionPlan> PlanCompaction(const CompactionOptions& options) const;
  Result<Dataset> CommitCompaction(const CompactionPlan& plan, CompactionStats* stats = nullptr,
                                   const CommitOptions& opts = {}) const;
  // Removes version files outside the retention policy (never a branch's
  // latest, a tagged version or a fork point), then the files only removed
  // versions used. Files no version ever referenced (left by failed writes)
  // are removed only once older than the grace cutoff: they may belong to a
  // commit in flight. Covers every branch. Before deleting data it re-reads
  // each branch's latest version, so a restore that committed meanwhile keeps
  // its files; a restore, tag or branch of a version being removed that
  // commits after that re-read is not protected: choose `older_than` well
  // beyond the longest operation.
  Result<CleanupStats> Cleanup(const CleanupOptions& options) const;

  // --- tags and branches (refs.cc) ------------------------------------------
  Status CreateTag(const std::string& name, uint64_t version) const;
  Status DeleteTag(const std::string& name) const;
  Result<std::vector<std::pair<std::string, uint64_t>>> ListTags() const;
  // A branch of this snapshot's branch at this snapshot's version; no data is copied.
  Result<Dataset> CreateBranch(const std::string& name) const;
  Status DeleteBranch(const std::string& name) const;
  Result<std::vector<std::string>> ListBranches() const;

  // Branch identity: a ULID minted when the branch was created, so a branch
  // deleted and recreated under the same name is a different branch.
  Result<std::string> BranchId(const std::string& name) const;
  // Version file `version` in `branch`'s own directory, decoded as stored: no
  // fork resolution, so one numbered at or below the branch's fork point (left
  // by a writer of an earlier branch of that name) is returned too. nullopt
  // when there is none.
  Result<std::optional<DatasetVersion>> OwnVersionFile(const std::string& branch,
                                                       uint64_t version) const;
  // Removes `branch`'s (never main's) own version file `version`, whose
  // transaction is `txn` (checked again just before the delete), for a
  // commit that must not stand, when that changes no version look-up:
  // - numbered at or below the branch's fork point: look-ups resolve that
  //   number to the parent; only as the newest file there is it taken for
  //   the branch's latest version (its own header and section are read),
  //   which the removal corrects;
  // - otherwise only while it is the newest there and no branch forks from
  //   it or a later version and no tag names it.
  // FailedPrecondition otherwise. Check-then-act (an object store has no
  // conditional delete), so only for a version nothing can commit on.
  Status RemoveOwnVersion(const std::string& branch, uint64_t version,
                          const std::string& txn) const;

  // --- low-level commits (the manifest layer builds its own transactions) ----
  // Writes `batch` as one new fragment file that no version references yet.
  // With `allow_inline`, a small fragment is kept in memory instead, to be
  // embedded in the version file that commits it (CommitRewrite).
  // With `schema` (the dataset's fields and then added nullable ones, for
  // AppendStaged's add_columns) instead of the dataset's schema.
  Result<Fragment> WriteFragment(const RecordBatch& batch, bool allow_inline = false,
                                 const Schema* schema = nullptr) const;
  // Deletes the files of fragments written by WriteFragment that no version
  // references and none will (an abandoned load; those kept in memory need
  // nothing). Never for committed ones.
  Status DeleteStaged(const std::vector<Fragment>& staged) const;
  // Removes the deletion files `txn` (a delete or merge-insert) wrote for
  // `unpublished`, an attempt that lost its race: .ldel files of the
  // fragments it deletes from that `base` does not reference. Best effort.
  void DiscardDeletionFiles(const Transaction& txn, const DatasetVersion& base,
                            const DatasetVersion& unpublished) const;
  // After the put of version file `key` for transaction `txn_id` failed
  // (`put`, not AlreadyExists): the file there decides. Ours → that version;
  // another's → nullopt (the race was lost); unreadable or absent → `put`
  // marked CommitOutcomeUnknown (a put that did not answer may still land).
  Result<std::optional<DatasetVersion>> ReadBackUnanswered(const std::string& key,
                                                           const std::string& txn_id,
                                                           const Status& put,
                                                           uint64_t version) const;
  // OK when a staged fragment's file is still there (NotFound otherwise),
  // or it is kept in memory.
  Status StagedExists(const Fragment& staged) const;
  // Commits the next version on top of this snapshot, which must be the
  // branch's latest: `removed` fragments leave, `added` ones join (ids
  // assigned here), and the application section is stored. `app_section`
  // receives `added` as committed (ids and places assigned, inline ones
  // inside the new version file) and must return non-empty bytes. Aborted
  // when another writer committed that version first; nothing is retried or
  // rebased.
  using AppSectionBuilder = std::function<Result<std::string>(const std::vector<Fragment>& added)>;
  // `txn_id` names the transaction (a new ULID when empty): a caller that
  // must recognise its version file later without other state (a migration
  // commit) derives it, and then the id must fix what the commit holds given
  // its base (an unanswered put whose version file carries the id is taken
  // for this commit).
  Result<Dataset> CommitRewrite(std::vector<Fragment> added, std::vector<uint64_t> removed,
                                const AppSectionBuilder& app_section,
                                std::string txn_id = {}) const;
  // As above, with a section that does not name the added fragments.
  Result<Dataset> CommitRewrite(std::vector<Fragment> added, std::vector<uint64_t> removed,
                                std::string app_section) const {
    return CommitRewrite(
        std::move(added), std::move(removed),
        [&](const std::vector<Fragment>&) -> Result<std::string> { return app_section; });
  }
  // The header (and application section) of the latest version of `branch`:
  // one LIST and one range request, plus the branch ref when the branch has
  // no versions of its own.
  static Result<VersionHeader> ReadLatestHeader(std::shared_ptr<ObjectStore> store,
                                                const std::string& root, const std::string& branch);
  // The header of `version` of `branch` (one range request, plus the branch ref).
  static Result<VersionHeader> ReadHeader(std::shared_ptr<ObjectStore> store,
                                          const std::string& root, const std::string& branch,
                                          uint64_t version);

  ObjectStore& store() const { return *store_; }
  const std::string& root() const { return root_; }
  // Key of a root-relative path.
  std::string Key(std::string_view rel) const;
  // Root-relative directory of a branch ("" or "tree/<name>/").
  static std::string BranchDir(const std::string& branch);

 private:
  Dataset(std::shared_ptr<ObjectStore> store, std::string root, std::string branch,
          std::shared_ptr<const DatasetVersion> state, std::shared_ptr<const DatasetOptions> opts)
      : store_(std::move(store)),
        root_(std::move(root)),
        branch_(std::move(branch)),
        state_(std::move(state)),
        options_(std::move(opts)) {}
  Dataset WithState(DatasetVersion v) const;

  // Cleanup's steps (maintenance.cc), in order: the branches and the
  // versions they pin (tags, fork points, each where it lives); per branch,
  // the versions kept (their files referenced) and those to remove; version
  // files removed before the files only they use, holders of inline parts
  // last, after every branch's latest is read again; then unreferenced
  // files (orphans only past the grace period).
  struct CleanupState;
  Status PinForCleanup(CleanupState& c) const;
  Status SortVersionsForCleanup(CleanupState& c, size_t branch) const;
  static void SpareHolders(CleanupState& c);
  Status RemoveDoomedVersions(CleanupState& c, bool holding_inline) const;
  Status ReferenceLatestVersions(CleanupState& c) const;
  Status RemoveUnreferencedFiles(CleanupState& c) const;

  // Version loading (dataset.cc). `depth` counts the parents followed: past
  // kMaxBranchDepth the refs form a cycle (data loss), not a deep chain.
  Result<DatasetVersion> LoadVersion(const std::string& branch, uint64_t version,
                                     int depth = 0) const;
  Result<DatasetVersion> LoadLatest(const std::string& branch) const;
  // The key of `version`'s file, following `branch` to its ancestors
  // (`owner`, when given: the branch whose directory holds it).
  Result<std::string> VersionKey(const std::string& branch, uint64_t version,
                                 std::string* owner = nullptr, int depth = 0) const;
  Result<VersionHeader> LoadHeader(const std::string& branch, uint64_t version) const;
  // `use_hint` false: listed, for a directory whose versions may have gaps
  // (the hint assumes none).
  Result<std::optional<uint64_t>> LatestOwnVersion(const std::string& branch,
                                                   bool use_hint = true) const;
  // The error for `version` of `branch`'s own files when it is not there:
  // version_expired (category NotFound, detail oldestVersion) when newer
  // versions are, so retention removed it; not_found otherwise.
  Status MissingVersion(const std::string& branch, uint64_t version) const;
  // Where listing reads a whole directory (local disk), a branch's latest
  // own version comes from its hint when that names a version still there
  // (latest_hint.cc); nullopt: no usable hint, list instead.
  Result<std::optional<uint64_t>> LatestFromHint(const std::string& branch) const;
  // Called once `version` of this branch is committed: refreshes the hint
  // there (not durably).
  void NoteCommitted(uint64_t version) const;

  // Commit machinery (commit.cc). `build` produces the transaction against a
  // base; it is called again when the operation must re-run.
  using TxnBuilder = std::function<Result<std::optional<Transaction>>(const DatasetVersion& base)>;
  Result<Dataset> RunOperation(const TxnBuilder& build, const CommitOptions& opts) const;
  // The version `txn` produces on top of `base`; nullopt when a fragment it
  // touches is gone and the operation must re-run.
  // After losing a commit race on `current`: whether a version committed
  // since, up to `latest`, makes `txn` plan again (true) or is compatible
  // (false); Aborted when it conflicts.
  Result<bool> MustPlanAgain(const Transaction& txn, const DatasetVersion& current,
                             const DatasetVersion& latest) const;
  // A delete's or merge's deletion vectors merged into `next` (inline when
  // small); false when a fragment they name is gone.
  Result<bool> ApplyDeletions(const Transaction& txn, DatasetVersion* next) const;
  Result<std::optional<DatasetVersion>> Apply(const DatasetVersion& base,
                                              const Transaction& txn) const;

  // Merge-insert planning (operations.cc): from the source's key columns
  // (`keys` order), the deletions of matched rows and the inserted keys.
  Status PlanMerge(const DatasetVersion& base, const std::vector<std::string>& keys,
                   const std::vector<RecordBatch>& source_keys, Transaction* t,
                   MergeStats* stats) const;
  // Data writing helpers (operations.cc).
  // One fragment per max_rows_per_fragment rows; with `allow_inline`, small
  // ones stay in memory for the committing version file.
  Result<std::vector<Fragment>> WriteFragments(const Schema& schema,
                                               std::span<const RecordBatch> batches,
                                               bool allow_inline = true) const;
  // The rows deleted from `f` (none without a deletion file).
  Result<DeletionVector> ReadDeletions(const Fragment& f) const;
  // Where a fragment's bytes are in the store.
  FragmentLocation Locate(const Fragment& f) const {
    return {Key(f.data_path), f.data_offset, f.data_size};
  }
  // The staged fragments a commit of this snapshot's branch can take: those
  // kept in memory that it may not embed (off main, or past the version's
  // inline budget) are written as files first. Their files, like any staged
  // file of a write that never commits, are left to gc.
  Result<std::vector<Fragment>> PlaceStaged(std::vector<Fragment> staged) const;
  // Encodes `rows` in memory: inline when within max_inline_fragment_bytes
  // and `*budget` (which it then spends), else put as a fragment file.
  Result<Fragment> EncodeSmallFragment(const Schema& schema, BatchStream& rows,
                                       uint64_t* budget) const;
  // Inline parts are written on main only: a branch deleted and created
  // again reuses its version file names, and a cache keyed by place could
  // then serve the old branch's bytes (fragment and deletion files have
  // unique names, and main's version numbers are never reused).
  bool MayInline() const { return branch_.empty(); }
  Result<std::vector<RecordBatch>> ScanVersion(const DatasetVersion& v, const ScanSpec& spec) const;
  // The rows of the fragments `indexes` cover that match `p` (an indexed
  // predicate): fragment id -> ascending row offsets.
  Result<std::map<uint64_t, std::vector<uint64_t>>> IndexHits(
      const std::vector<const IndexMeta*>& indexes, const Predicate& p, ScanStats* stats) const;
  // The dataset columns a scan returns and the schema of its batches.
  struct ScanShape {
    std::vector<int> projected;  // indices into the version's schema
    Schema out_schema;           // projected fields, plus "_rowaddr" if asked
  };
  static Result<ScanShape> ShapeOf(const DatasetVersion& v, const ScanSpec& spec);
  // A fragment's deletion vector, through the cache.
  Result<std::shared_ptr<const DeletionVector>> CachedDeletions(const Fragment& frag) const;
  // Live rows of one fragment: all (take == nullptr) or those at `take`.
  Status ScanFragment(const DatasetVersion& v, const Fragment& frag, const ScanSpec& spec,
                      const ScanShape& shape, const std::vector<uint64_t>* take,
                      std::vector<RecordBatch>* out, int64_t* produced) const;
  // Index entries for every live row of `fragments` (index_ops.cc).
  Result<std::vector<IndexEntry>> CollectIndexEntries(const DatasetVersion& v,
                                                      const std::vector<Fragment>& fragments,
                                                      const std::string& column) const;
  // After a compaction's Apply (`after`, its txn the compaction): `index`
  // with entries of removed fragments moved to their rows in the new ones
  // (index_ops.cc).
  Result<IndexMeta> RemapIndex(const DatasetVersion& before, const DatasetVersion& after,
                               const IndexMeta& index) const;

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::string branch_;
  std::shared_ptr<const DatasetVersion> state_;
  std::shared_ptr<const DatasetOptions> options_;
};

// Validates a branch or tag name: 1-64 of [A-Za-z0-9._-], not starting with
// '.' or '-', and not "main".
Status ValidateRefName(std::string_view kind, std::string_view name);

}  // namespace loam
