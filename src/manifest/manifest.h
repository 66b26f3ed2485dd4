// The __manifest dataset of a workspace: an immutable journal plus the
// current mutable rows (table heads, graph heads, catalog), published together
// in one atomic commit (docs/format/manifest.md).
//
// Every version's application section holds a HeadDirectory, so the current
// state of a branch costs one LIST, one range GET, and one GET per partition
// file read, whatever the length of the history.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/lru_cache.h"
#include "common/thread_annotations.h"
#include "dataset/dataset.h"
#include "manifest/directory.h"
#include "manifest/heads.h"
#include "manifest/rows.h"

namespace loam {

// The journal's exact-id index (on column object_id) is kept in levels,
// "object_id-0", "object_id-1", ...: a fold rewrites level 0 with the
// fragments outside every level, and a level past its capacity moves into
// the next one (which starts empty), so a fold's bytes stay flat however
// long the history (docs/format/manifest.md, "Journal look-up"). An index
// named kJournalIndex (one built before the levels) keeps the fragments it
// covers.
inline constexpr std::string_view kJournalIndex = "object_id";
std::string JournalLevelName(int level);

struct ManifestOptions {
  DatasetOptions dataset;
  int max_publish_attempts = 64;
  // Decoded partition files (immutable), shared by every read; 0 = no cache.
  size_t cache_bytes = 32 << 20;
  // After a publish, once `merge_fanout` fragments of one size tier hold no
  // current partition, their journal rows are merged into one fragment, so a
  // version lists a bounded number of fragments at any depth. 0 = never.
  size_t merge_fanout = 16;
  // The journal's object_id index (run-commit look-ups) is folded forward
  // after a publish once more than this many fragments are outside it, so a
  // look-up scans at most this many (plus those a merge added since).
  // 0 = never (only Reconcile builds it).
  size_t index_tail_fragments = 16;
  // Level i of that index holds up to level0 * fanout^i entries before it
  // moves into level i + 1.
  uint64_t journal_level0_entries = 1024;
  uint64_t journal_level_fanout = 4;
  // Compact writes the live partitions into files of about this many rows
  // (more when that would take over 16 files; a partition never splits), so
  // a read decodes a bounded file, and the cache holds it, however many
  // tables there are.
  size_t compacted_file_rows = 4096;
};

// One version of one branch's manifest, as its header describes it.
struct ManifestVersion {
  std::string branch;  // "" = main
  uint64_t version = 0;
  int64_t timestamp_micros = 0;
  HeadDirectory dir;
};

// A version past the first without head directory files: a journal-only
// (format 4) version, whose state is the fold of its journal. After a
// migration only versions from before it look like this (a version holding
// nothing at all would too, and folds to the same nothing).
inline bool IsJournalOnly(const ManifestVersion& v) { return v.version > 1 && v.dir.files.empty(); }

struct ManifestReadStats {
  int partition_files_read = 0;   // fetched from the store (not the cache)
  int rows_decoded = 0;           // mutable rows turned into ManifestRow values
  int64_t file_rows_decoded = 0;  // rows of the files fetched (a file holds other rows too)
};

class Manifest;

// What one publish attempt sees: the latest version's mutable rows, read
// lazily, partition by partition.
class PublishView {
 public:
  const ManifestVersion& base() const { return base_; }
  const std::string& commit_id() const { return commit_id_; }
  Result<std::vector<ManifestRow>> Partition(uint32_t p);
  Result<std::optional<ManifestRow>> Find(const std::string& object_id, uint32_t partition);
  Result<std::optional<TableHead>> TableHeadOf(int64_t sid);
  Result<std::optional<GraphHead>> GraphHeadOf(const std::string& branch);

 private:
  friend class Manifest;
  PublishView(Manifest* m, ManifestVersion base, std::string commit_id)
      : manifest_(m), base_(std::move(base)), commit_id_(std::move(commit_id)) {}
  Manifest* manifest_;
  ManifestVersion base_;
  std::string commit_id_;
  std::map<uint32_t, std::vector<ManifestRow>> partitions_;
};

// The rows one commit adds and changes.
struct PublishPlan {
  std::vector<ManifestRow> journal;  // immutable rows
  std::vector<ManifestRow> upserts;  // mutable rows, replacing any with the same id
  std::vector<ManifestRow> removes;  // mutable rows (id and type) to delete
  // A metadata-only commit (grants) creates no graph commit.
  bool graph_commit = true;
  // Without a graph commit, journal rows are refused unless this is set
  // (`loam migrate`: baselines, marker and record, no graph head move).
  bool journal_without_graph_commit = false;
  // Partitions rewritten from `upserts` alone, ignoring what they hold now
  // (heads repair).
  std::set<uint32_t> rebuild;
};

// One run a commit records: its `run_commit:<run_id>` row, whose metadata
// gets `detail`'s fields (a JSON object, "" for none) besides commit, run_id
// and manifest_version.
struct CommittedRun {
  std::string run_id;
  std::string detail;
  // Manifest::JournalFloor taken before the run could exist anywhere but in
  // this process (0 = unknown): its run_commit row, if any, lies in journal
  // fragments from this id up, so the check reads only those.
  uint64_t journal_floor = 0;
};

struct PublishSpec {
  std::string branch;  // "" = main
  // Called on every attempt against the latest version; errors end the
  // publish (a stale expectation is FailedPrecondition, a typed conflict).
  std::function<Result<PublishPlan>(PublishView&)> build;
  std::string commit_id;  // graph commit id; minted when empty
  // The manifest version's transaction id (a new ULID when empty), so a
  // writer can recognise its version file from the file alone.
  std::string txn_id;
  std::string actor = "loam";
  // Adds run_commit:<run_id> for each (a group commit carries several);
  // AlreadyExists (run_already_committed) if any of them committed.
  std::vector<CommittedRun> runs;
  // A merge's second parent: the merged branch's head commit ("" = none).
  std::string merged_parent;
  // A direct change of the branch's tables (a load, delete, revert, create,
  // rename or drop): PermissionDenied on a protected branch. Merges,
  // recovery and maintenance are not.
  bool direct_change = false;
  // Protects (or unprotects) the branch with this commit; nullopt keeps it.
  std::optional<bool> set_protected;
};

struct PublishResult {
  uint64_t manifest_version = 0;
  std::string commit_id;
  int attempts = 0;
};

struct JournalLookupStats {
  bool index_used = false;
  int index_pages_read = 0;
  int fragments_scanned = 0;  // the index's uncovered tail (all fragments without an index)
};

class Manifest {
 public:
  // The manifest of the workspace whose root key prefix is `workspace`
  // ("" = the store's root); it lives under "<workspace>/__manifest".
  static Result<std::shared_ptr<Manifest>> Create(std::shared_ptr<ObjectStore> store,
                                                  std::string workspace,
                                                  ManifestOptions options = {});
  static Result<std::shared_ptr<Manifest>> Open(std::shared_ptr<ObjectStore> store,
                                                std::string workspace,
                                                ManifestOptions options = {});

  // --- current state (flat cost) ------------------------------------------
  Result<ManifestVersion> Current(const std::string& branch) const;
  // As Current, for a writer: when this process committed main's latest
  // known version V, one HEAD of version V + 1 confirms it is still the
  // latest (a LIST reads a whole directory on local disk).
  Result<ManifestVersion> CurrentForWriter(const std::string& branch);
  Result<ManifestVersion> At(const std::string& branch, uint64_t version) const;
  // The mutable rows of one partition, checked: unique ids, each in its
  // partition. DataLoss on anything else.
  Result<std::vector<ManifestRow>> ReadPartition(const ManifestVersion& v, uint32_t partition,
                                                 ManifestReadStats* stats = nullptr) const;
  // The same rows unchecked (for verify and repair, which report problems
  // rather than stop at the first).
  Result<std::vector<ManifestRow>> ReadPartitionUnchecked(const ManifestVersion& v,
                                                          uint32_t partition) const;
  Result<std::optional<TableHead>> ReadTableHead(const ManifestVersion& v, int64_t sid,
                                                 ManifestReadStats* stats = nullptr) const;
  Result<std::optional<GraphHead>> ReadGraphHead(const ManifestVersion& v,
                                                 ManifestReadStats* stats = nullptr) const;

  // --- writes ---------------------------------------------------------------
  Result<PublishResult> Publish(const PublishSpec& spec);
  // Rewrites the journal into one fragment and the partitions into another.
  Status Compact(const std::string& branch);
  // Merges every size tier's fragments that hold no current partition (the
  // automatic merge, without waiting for `merge_fanout` of them).
  Status Maintain(const std::string& branch);
  // Builds or folds forward the object_id index now, whatever its tail.
  Status Reconcile(const std::string& branch);
  // Fragments of the branch's latest version outside the object_id index
  // (all of them when there is none): what a journal look-up scans.
  Result<int> JournalIndexTail(const std::string& branch) const;

  // --- history (cost grows with history) -------------------------------------
  // Journal rows of a version in commit order (the latest when nullopt).
  Result<std::vector<ManifestRow>> Journal(const std::string& branch,
                                           std::optional<uint64_t> version = {}) const;
  // Exact look-up of a journal row by id, through the index when present.
  Result<std::optional<ManifestRow>> FindJournalRow(const std::string& branch,
                                                    const std::string& object_id,
                                                    JournalLookupStats* stats = nullptr) const;
  // Whether run `run_id` committed, as of this process's latest snapshot of
  // the branch (no LIST on main; a stale answer is caught by the publish,
  // which checks again on the version it commits on).
  Result<bool> RunCommitted(const std::string& branch, const std::string& run_id,
                            JournalLookupStats* stats = nullptr, uint64_t journal_floor = 0);
  // A journal floor for a run about to be created: main's next fragment id
  // as of this process's latest snapshot (read now when it has none). A row
  // first written after this call lies in fragments from it up, whatever
  // rewrites it later, because fragment ids only grow along main's versions.
  // 0 for a branch: one deleted and recreated restarts from its fork.
  Result<uint64_t> JournalFloor(const std::string& branch);
  // The rows a version's commit added (all of its new fragments' rows).
  Result<std::vector<ManifestRow>> CommitRows(const std::string& branch, uint64_t version) const;
  Result<std::vector<ManifestRow>> RowsAddedIn(const DatasetVersion& v) const;

  // --- branches of the manifest ------------------------------------------------
  Status CreateBranch(const std::string& name, const std::string& from, uint64_t version);
  Status DeleteBranch(const std::string& name);
  Result<std::vector<std::string>> ListBranches() const;
  // The branch's identity (its fork name for tables); "" for main.
  Result<std::string> BranchId(const std::string& name) const;
  Result<BranchInfo> BranchParent(const std::string& name) const;
  // The transaction id of version `version`'s file in `branch`'s own
  // directory, as stored (no fork resolution; Dataset::OwnVersionFile): what
  // PublishSpec::txn_id named. nullopt when there is none.
  Result<std::optional<std::string>> OwnVersionTxn(const std::string& branch,
                                                   uint64_t version) const;
  // Removes version `version` of branch `branch` (never main), transaction
  // `txn`, from its own directory when that changes no version look-up
  // (Dataset::RemoveOwnVersion), so the branch reads as it did before: for
  // a commit that landed on a branch deleted and recreated under its writer
  // (engine/migration_branch.cc). The caller knows nothing can commit on that
  // version. FailedPrecondition otherwise.
  Status WithdrawVersion(const std::string& branch, uint64_t version, const std::string& txn);

  Result<Dataset> OpenDataset(const std::string& branch,
                              std::optional<uint64_t> version = {}) const;
  const std::shared_ptr<ObjectStore>& store() const { return store_; }
  const std::string& workspace() const { return workspace_; }
  const ManifestOptions& options() const { return options_; }

 private:
  Manifest(std::shared_ptr<ObjectStore> store, std::string workspace, ManifestOptions options);
  std::string Root() const;
  // Only fragments from `floor` up are looked at (0 = all).
  Result<std::optional<ManifestRow>> FindJournalRowIn(const Dataset& ds,
                                                      const std::string& object_id,
                                                      JournalLookupStats* stats,
                                                      uint64_t floor = 0) const;
  Result<ManifestVersion> FromHeader(const std::string& branch, const VersionHeader& h) const;
  Result<std::vector<ManifestRow>> ReadPartitionRows(const ManifestVersion& v, uint32_t partition,
                                                     ManifestReadStats* stats) const;
  // A fragment holding partitions, decoded whole (cached by location).
  Result<std::shared_ptr<const RecordBatch>> ReadFile(const HeadDirectory::File& f,
                                                      ManifestReadStats* stats) const;
  std::string FileCacheKey(const HeadDirectory::File& f) const;
  // The latest snapshot of `branch`, reusing the last one this process
  // committed (a lost race shows it stale and it is reloaded).
  Result<Dataset> WriterBase(const std::string& branch, bool reload, bool* cached);
  // Keeps `ds` as the branch's writer snapshot unless a newer one is kept.
  void RememberBase(const std::string& branch, const Dataset& ds);
  // The graph commit a publish carries: its journal row (parent: the
  // branch's head, or its nearest ancestor's with a commit), one run_commit
  // row per run, and the branch's graph head.
  Status AddGraphCommit(const PublishSpec& spec, const Dataset& base, PublishView& view,
                        const std::string& commit_id, uint64_t next_version, PublishPlan* plan);
  Result<PublishResult> PublishOnce(const PublishSpec& spec, const Dataset& base,
                                    const std::string& commit_id);
  Status FitDirectory(const std::string& branch, const HeadDirectory& dir, PublishView& view,
                      std::map<uint32_t, std::vector<ManifestRow>>* touched);
  // Writes `journal` and the `touched` partitions as one commit's fragments
  // and commits them with `dir` updated (see manifest.cc), as transaction
  // `txn_id` (minted when empty).
  Result<Dataset> CommitPartitions(const Dataset& base, const HeadDirectory& dir,
                                   std::vector<ManifestRow> journal,
                                   std::map<uint32_t, std::vector<ManifestRow>>* touched,
                                   const std::string& txn_id = {});
  // Merges the fragments of one tier that no partition uses, when at least
  // `min_count` of them exist (the smallest such tier). Returns the new
  // snapshot, or `base` when there was nothing to merge.
  Result<Dataset> MergeTier(const Dataset& base, size_t min_count);
  // Folds the uncovered tail into the object_id index (creating it when
  // absent) once it holds more than `max_tail` fragments. Returns the new
  // snapshot, or `base` when the tail is short enough.
  Result<Dataset> FoldJournalIndex(const Dataset& base, size_t max_tail);

  std::shared_ptr<ObjectStore> store_;
  std::string workspace_;
  ManifestOptions options_;
  std::shared_ptr<LruCache> cache_;
  std::mutex mu_;
  std::map<std::string, Dataset> writer_base_ LOAM_GUARDED_BY(mu_);
};

// Adds "commit" and "manifest_version" to a journal row's JSON metadata.
std::string WithCommit(const std::string& metadata, const std::string& commit_id,
                       uint64_t manifest_version);
// The manifest version a journal row was published at (0 when absent).
uint64_t ManifestVersionOf(const ManifestRow& row);

}  // namespace loam
