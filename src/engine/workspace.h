// WorkspaceEngine: the tables of one root, their catalog, branches and history.
//
// Every mutation follows the write protocol (docs/architecture.md): sidecar, table
// commit, one manifest publish (journal + heads + graph commit), sidecar
// delete. Current-state reads come from heads at flat cost; history from the
// journal.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "catalog/snapshot.h"
#include "catalog/table_def.h"
#include "dataset/dataset.h"
#include "engine/committed_forks.h"
#include "engine/format_stamp.h"
#include "engine/sidecar.h"
#include "engine/sidecar_lease.h"
#include "loam/merge.h"
#include "manifest/fold.h"
#include "manifest/manifest.h"

namespace loam {

// Named failpoints of the write protocol, in order.
namespace failpoint {
inline constexpr std::string_view kAfterSidecar = "write.after_sidecar";
inline constexpr std::string_view kAfterTableCommit = "write.after_table_commit";
inline constexpr std::string_view kAfterPublish = "write.after_publish";
inline constexpr std::string_view kRecoveryAfterRestore = "recovery.after_restore";
// A merge: its tables' versions committed on the target's forks, not published.
inline constexpr std::string_view kMergeAfterTableCommits = "merge.after_table_commits";
inline constexpr std::string_view kMergeAfterPublish = "merge.after_publish";
// A merge's revert: its tables' restores committed on the forks, not published.
inline constexpr std::string_view kMergeRevertAfterTableCommits =
    "merge_revert.after_table_commits";
inline constexpr std::string_view kMergeRevertAfterPublish = "merge_revert.after_publish";
}  // namespace failpoint

struct WorkspaceOptions {
  ManifestOptions manifest;
  // Called at each named failpoint; a non-OK status stops the operation
  // there, leaving its durable effects as a crash would.
  std::function<Status(std::string_view)> failpoint;
  std::string actor = "loam";
  // Opens the workspace as the system actor: writes without a principal are
  // allowed and skip grant checks (maintenance, tests, an embedding without
  // authentication). Otherwise a write without a principal is refused.
  bool system_actor = false;
  // Init only: the principal recorded as the workspace's owner, who holds
  // every role on every table ("" = no owner; only grants authorise).
  std::string owner;
  // A sidecar younger than this whose lease is not over may belong to a
  // live writer: recovery leaves it alone. An unpublished table version
  // without a sidecar is reset once older than this (younger, a write that
  // meets one is refused as a conflict).
  int64_t recovery_grace_micros = 60'000'000;
  // A write's sidecar names a lease this long, renewed while the write runs
  // (SidecarLeases): a crashed writer's sidecar is recovered once its lease
  // is over instead of after the whole grace period. 0: no lease. Every
  // process sharing a workspace should use the same value.
  int64_t sidecar_lease_micros = 10'000'000;
  // Open recovers sidecars older than the grace period; false opens read-only
  // in spirit (heads verify): nothing is rolled forward or back.
  bool recover_on_open = true;
  // Opens a workspace whatever its format stamp says (only `loam migrate`,
  // which converts it). Every other open refuses all but kWorkspaceFormat.
  bool any_format = false;
};

// kRestore makes `restore_version`'s rows the table's content again (a new
// version; needs the writer grant, like a delete).
// kReplaceRows: the rows at `row_addresses` leave and the `staged` fragments
// join in one commit (an upsert run's revert puts back what it replaced).
enum class WriteMode {
  kAppend,
  kUpsert,
  kReplace,
  kDelete,
  kAddColumn,
  kCompact,
  kRestore,
  kReplaceRows
};

struct WriteRequest {
  std::string table;
  // When set, the table is resolved by its Table node id (a rename since the
  // caller looked it up is fine; a drop is NotFound) and `table` only names
  // it in messages.
  std::optional<int64_t> table_sid;
  std::string branch;  // "" = main
  // Checked against the grants of the manifest version the write commits on:
  // writer for append, upsert and delete; admin for replace and add column.
  // The owner passes. Empty only on a workspace opened as the system actor.
  std::string principal;
  WriteMode mode = WriteMode::kAppend;
  // The mode whose role `principal` needs, when not `mode`'s: a revert of a
  // replace restores (a writer's mode) but needs the admin a replace needs.
  std::optional<WriteMode> authorize_as;
  std::vector<RecordBatch> rows;  // append / upsert / replace
  // Instead of `rows`: fragments already written with Dataset::WriteFragment
  // on the table (OpenTable), so a load can stream rows to storage first.
  bool staged_rows = false;
  std::vector<Fragment> staged;
  // Upsert of staged rows: the merge as the caller planned it (see
  // MergePlan); used when the table's fragments are still its basis.
  const MergePlan* merge_plan = nullptr;
  std::vector<std::string> keys;  // upsert keys; empty = the table's declared keys
  std::vector<Predicate> where;   // delete
  // Delete by row address instead of `where` (a run's revert: every row of
  // the fragments it appended); the rows kReplaceRows removes.
  std::optional<std::vector<int64_t>> row_addresses;
  std::optional<Field> new_column;         // add column (nullable)
  std::optional<int64_t> restore_version;  // restore: an older table version
  CompactionOptions compaction;            // compact
  // compact: commit this plan (made on an earlier version) instead of
  // planning again; FailedPrecondition when a fragment it removes changed.
  const CompactionPlan* compaction_plan = nullptr;
  // Append of staged rows: nullable columns the same commit adds (the staged
  // fragments hold the table's columns and then these). Needs the table to
  // allow additive schema changes; bumps the schema version.
  std::vector<Field> add_columns;
  // With add_columns: the admin who configured the additive load (a
  // pipeline's last editor); checked again, like the flag, in the commit.
  std::string additive_admin;
  std::optional<int64_t> expected_version;  // the head's table version
  // A keyed append's expected_version is only the version its key checks
  // were made against: a group commit may take it with others whose keys
  // differ (otherwise an expected version commits alone), and on a later
  // version when no row live since holds one of its keys (KeysStillAbsent).
  // An upsert's is the version its merge plan was made on, carried to a later
  // one when no commit since touched one of its keys (CarryMergePlan).
  bool expected_for_keys = false;
  std::optional<int64_t> expected_schema_version;  // schema_conflict when it moved
  std::string run_id;                              // recorded as run_commit:<run_id>, at most once
  // Manifest::JournalFloor taken before run_id could exist anywhere but in
  // the caller (0 = unknown, as for a resumed run): the run's commit, if any,
  // is looked for only in journal fragments from it up.
  uint64_t journal_floor = 0;
};

struct WriteResult {
  uint64_t manifest_version = 0;
  std::string commit_id;
  int64_t sid = 0;
  int64_t table_version = 0;
  int64_t row_count = 0;
  MergeStats merge;
  CompactionStats compacted;
  bool changed = true;  // false: nothing to commit (e.g. a delete that matched no row)
};

struct GraphCommitInfo {
  std::string id;
  std::vector<std::string> parents;
  std::string branch;
  std::string actor;
  std::string run_id;                // the first run the commit records ("" for none)
  std::vector<std::string> run_ids;  // every run it records (a group commit: several)
  int64_t manifest_version = 0;
  int64_t created_micros = 0;
};

struct TableHistoryEntry {
  std::string event;  // table_version, table_rename, table_tombstone, ...
  std::string object_id;
  std::string table_key;
  int64_t table_version = 0;
  std::string owner_branch;
  std::optional<int64_t> row_count;
  std::string commit_id;
  std::string actor;                 // who made the commit
  int64_t created_micros = 0;        // when
  std::vector<std::string> run_ids;  // the runs the commit records (run_commit rows)
  std::string detail;  // table_grant: "bob: writer" or "bob: revoked"; renames: "a -> b"
};

struct RecoveryReport {
  int rolled_forward = 0;
  int rolled_back = 0;
  int already_published = 0;
  int without_effect = 0;
  int left_to_live_writers = 0;          // younger than the grace period
  std::vector<std::string> failures;     // sidecars that could not be recovered, with why
  std::vector<std::string> moved_aside;  // unreadable sidecars moved to _recovery/unreadable/
  // The tables (fork, stable id) whose sidecar failed: their writes wait.
  struct Blocked {
    std::string fork;
    int64_t sid = 0;
    std::string why;
  };
  std::vector<Blocked> blocked;
};

// A rollback of a table fork that no recovery commit published: the
// unpublished versions above the head's, undone by a restore to the head's
// content (by the writer that found them past the grace period, or by a
// recovery whose head did not expect it). The next publish on the fork
// records it in its journal row, so every rollback is audited.
struct ForkReset {
  int64_t head_version = 0;
  int64_t first_undone = 0;  // the versions undone: [first_undone, last_undone]
  int64_t last_undone = 0;
  int64_t restore_version = 0;  // the restore that brought the head's content back
};

struct MergeRequest {
  std::string source;  // the branch merged (not main)
  std::string into;    // the branch it was created from ("" = main); none other
  // Writer of every table whose rows the merge changes, admin of every table
  // it creates, drops, renames or changes the schema of (checked inside the
  // publish; the owner passes). Empty only as the system actor.
  std::string principal;
  // A merge already committed under this id is answered again, never
  // repeated ("" = a fresh id).
  std::string merge_id;
  // The source's version merged (checks run on it); nullopt = its latest.
  std::optional<uint64_t> source_version;
  std::vector<MergeCheck> checks;  // loam/merge.h
};

struct MergeRevertRequest {
  std::string into;  // the branch the merge committed on ("" = main)
  std::string merge_id;
  // Writer of every table whose rows go back, admin of every table whose
  // name or schema goes back or that is dropped (checked inside the publish).
  std::string principal;
};

// Who a table change is published for (see WorkspaceEngine::PublishTableChange).
struct PublishAuthorisation {
  const std::string* principal = nullptr;  // nullptr: not checked (recovery, forks)
  WriteMode mode = WriteMode::kAppend;
  // An additive append: the table must still allow additive schema changes,
  // and `additive_admin` (when not empty) must still hold admin.
  bool additive = false;
  const std::string* additive_admin = nullptr;
  // A group commit: the other runs' principals, each checked like `principal`.
  std::vector<std::string> more_principals;
  // A load, delete, revert or restore (not a compaction, a recovery or a
  // fork): refused on a protected branch (PublishSpec::direct_change).
  bool direct = false;
};

class WorkspaceEngine {
 public:
  // Creates the workspace (its __manifest) at `root` ("" = the store's root).
  static Result<std::shared_ptr<WorkspaceEngine>> Init(std::shared_ptr<ObjectStore> store,
                                                       std::string root,
                                                       WorkspaceOptions options = {});
  // Opens it and recovers sidecars older than the grace period.
  static Result<std::shared_ptr<WorkspaceEngine>> Open(std::shared_ptr<ObjectStore> store,
                                                       std::string root,
                                                       WorkspaceOptions options = {});

  // --- current state and time travel --------------------------------------------
  Result<Snapshot> Current(const std::string& branch = "", SnapshotStats* stats = nullptr) const;
  // A branch's current version and graph head, without reading its tables.
  struct BranchTip {
    uint64_t manifest_version = 0;
    std::optional<GraphHead> graph_head;
  };
  Result<BranchTip> Tip(const std::string& branch) const;
  Result<Snapshot> SnapshotAt(const std::string& branch, uint64_t manifest_version) const;
  // The table's dataset at the snapshot's head version (read-only use).
  Result<Dataset> OpenTable(const Snapshot& snapshot, const std::string& name) const;

  // --- schema operations ----------------------------------------------------------
  Result<WriteResult> CreateTable(const std::string& name, const Schema& schema,
                                  const std::vector<std::string>& keys,
                                  const std::string& branch = "");
  Result<WriteResult> RenameTable(const std::string& from, const std::string& to,
                                  const std::string& branch = "");
  Result<WriteResult> DropTable(const std::string& name, const std::string& branch = "");
  // Sets (or with nullopt removes) a principal's role: a metadata-only commit,
  // audited with `actor` ("" = WorkspaceOptions::actor). With
  // `if_head_commit`, only while the table's head commit is still that one
  // (precondition_failed otherwise), checked inside the commit.
  Status SetGrant(const std::string& table, const std::string& principal, std::optional<Role> role,
                  const std::string& branch = "", const std::string& actor = "",
                  const std::string& if_head_commit = "");
  // Allows (or forbids) additive loads on `table`, audited like a grant
  // (kAdditiveSchemaPrincipal). The caller checked that `actor` is an admin.
  Status SetAdditiveSchema(const std::string& table, bool allowed, const std::string& actor,
                           const std::string& branch = "");

  // --- data -------------------------------------------------------------------------
  // One table commit and its publish. An append of staged rows that expects
  // no table version (CommitsOnAnyVersion) tries again from a fresh read of
  // the manifest, after a short jittered pause, while another writer's commit
  // to the table is in progress or lands first (a few times; then conflict).
  Result<WriteResult> Write(const WriteRequest& request);
  // Group commit: appends of staged rows by several runs to one table of one
  // branch (same table_sid and branch; no merge plan or added columns; an
  // expected version only as a keyed append's, `expected_for_keys`) in one
  // table commit and one manifest commit, each run with its own run_commit
  // row. Every rule is checked per run first (the run already committed, its
  // grant, its schema version, its expected version, and for a keyed table
  // that no earlier member adds one of its keys); a run that fails
  // one gets its own error and the others commit without it. A refusal at
  // the commit itself (a conflict, a grant revoked meanwhile, a run committed
  // elsewhere) commits nothing and reaches every member as a conflict, so
  // each retries alone and gets its own answer. One result per request. A
  // group of appends that expect no version tries again as Write does.
  std::vector<Result<WriteResult>> WriteGroup(const std::vector<const WriteRequest*>& requests);
  // Whether `request` commits on whatever version its table has (an append
  // of staged rows expecting none, adding no column): it may try again when
  // its table is busy.
  static bool CommitsOnAnyVersion(const WriteRequest& request);
  // A keyed append joins a group only with at most this many staged bytes.
  static constexpr uint64_t kMaxGroupedKeyedBytes = uint64_t{4} << 20;
  // Whether `request` may join a group commit (see WriteGroup).
  static bool Groupable(const WriteRequest& request);
  // A keyed append whose table moved since the version it checked its keys
  // on (`expected_version`, with `expected_for_keys`) may still commit on
  // the table's head `t`: OK when no row that became live since holds one of
  // its keys (keyed_rebase.cc). Otherwise a conflict, and the run checks its
  // keys again.
  Status KeysStillAbsent(const Snapshot& snap, const TableState& t, const WriteRequest& req) const;
  // The same for an upsert planned on `expected_version` (with
  // `expected_for_keys`) into a table with declared keys: `carried` is its
  // merge plan made valid on the head `t` when no commit since changed, deleted
  // or inserted one of its keys (keyed_rebase.cc). Otherwise a conflict, and
  // the run plans again.
  Status CarryMergePlan(const Snapshot& snap, const TableState& t, const WriteRequest& req,
                        MergePlan* carried) const;
  // Forks the table onto `branch` at its current version without writing:
  // the head's owner changes at an equal version.
  Result<WriteResult> ForkTable(const std::string& name, const std::string& branch);

  // --- branches -------------------------------------------------------------------------
  Status CreateBranch(const std::string& name, const std::string& from = "",
                      std::optional<uint64_t> version = std::nullopt);
  Status DeleteBranch(const std::string& name);
  Result<std::vector<std::string>> ListBranches() const;
  // Protects (or unprotects) `branch`: a commit by `actor` after which only
  // merges, recovery and maintenance change its tables (GraphHead). The
  // caller checked that the actor may (the workspace owner).
  Status SetBranchProtected(const std::string& branch, bool on, const std::string& actor);
  // Merges branch `request.source` into the branch it was created from, as
  // one manifest commit there (branch_merge.cc, docs/branches.md): every
  // table the source changed since it was created (or last merged) takes
  // the source's content, name and schema on the target's fork, and tables
  // it created or dropped are created or dropped; a conflict names the
  // tables both sides changed, and nothing is merged. Checks first, on the
  // source's snapshot.
  Result<MergeResult> Merge(const MergeRequest& request);
  // The merge of `source` committed on `into` under `merge_id` (nullopt:
  // none; idempotency_key_reused: another branch's): a retry is answered
  // with it before anything else is done.
  Result<std::optional<MergeResult>> FindMerge(const std::string& into, const std::string& merge_id,
                                               const std::string& source) const;
  // Undoes the merge `request.merge_id` on `request.into` in one commit
  // (merge_revert.cc): revert_blocked, naming them, when a commit since
  // changed one of its tables. A second revert answers the first.
  Result<MergeRevertResult> RevertMerge(const MergeRevertRequest& request);

  // --- history, verification, recovery ------------------------------------------------
  Result<std::vector<GraphCommitInfo>> Log(const std::string& branch = "") const;  // newest first
  Result<std::vector<TableHistoryEntry>> History(const std::string& table,
                                                 const std::string& branch = "") const;
  // Compares the stored heads and the catalog with the journal's fold and
  // reports every difference; reads only (no recovery, no publish).
  Result<HeadsReport> VerifyHeads(const std::string& branch = "") const;
  // Offline: settles every sidecar (Unavailable, changing nothing, when one
  // cannot be settled), then publishes the fold's heads and a
  // catalog rebuilt to agree with them as one commit by "loam:repair". Does
  // nothing when verify would find nothing. Concurrent writers make it fail
  // (FailedPrecondition), never half-apply.
  Result<HeadsReport> RepairHeads(const std::string& branch = "");
  // Write sidecars present (crashed or in-flight writes).
  Result<int> PendingSidecars() const;
  // Readable sidecars not yet due for recovery under `grace_micros`
  // (SidecarDueAt): writes that may still be running.
  Result<int> SidecarsNotYetDue(int64_t grace_micros) const;
  // Classifies every sidecar due under `grace_micros` (SidecarDueAt: its
  // lease is over, or it is older) and rolls it forward or back (see
  // recovery.cc). 0: every sidecar.
  Result<RecoveryReport> Recover(int64_t grace_micros);
  // Recovers the sidecars of run `run_id` whatever their age: the caller
  // knows their writer is gone (its run lease expired).
  Result<RecoveryReport> RecoverRun(const std::string& run_id);
  // `loam migrate`'s barrier on a journal-only (format 4) workspace: every
  // sidecar, whatever its age, judged against the fold of its branch's
  // journal. A write whose commit the journal does not hold is rolled back
  // (its table fork restored); nothing is published, since a commit there
  // would be a format-4 commit.
  Result<RecoveryReport> RecoverAgainstJournal();

  // The principal that holds every role ("" = none; see WorkspaceOptions).
  const std::string& owner() const { return owner_; }
  // The workspace id (a ULID minted by Init; "" for workspaces made before
  // ids existed). Service calls carry it in their verified context.
  const std::string& id() const { return id_; }
  // OK when `principal` may perform `mode` on `table`; PermissionDenied names
  // the role it lacks. An empty principal passes only as the system actor.
  Status Authorize(const Snapshot& snapshot, const TableState& table, const std::string& principal,
                   WriteMode mode) const;
  bool system_actor() const { return options_.system_actor; }
  const WorkspaceOptions& options() const { return options_; }

  Manifest& manifest() const { return *manifest_; }
  const std::shared_ptr<ObjectStore>& store() const { return store_; }
  const std::string& root() const { return root_; }
  // Where the dataset of the table at `location` (a head's) lives in the store.
  std::string TableRoot(const std::string& location) const;

 private:
  friend class BranchMerger;   // Merge's steps (branch_merge.cc)
  friend class MergeReverter;  // RevertMerge's (merge_revert.cc)
  WorkspaceEngine(std::shared_ptr<ObjectStore> store, std::string root, WorkspaceOptions options,
                  std::shared_ptr<Manifest> manifest)
      : store_(std::move(store)),
        root_(std::move(root)),
        options_(std::move(options)),
        manifest_(std::move(manifest)),
        leases_(
            std::make_unique<SidecarLeases>(store_, options_.manifest.dataset.clock,
                                            std::max<int64_t>(options_.sidecar_lease_micros, 0))) {}

  // version_expired when `version` of `branch` is below its time-travel horizon.
  Status CheckInsideWindow(const std::string& branch, uint64_t version) const;
  // The snapshot of `v`: its heads; folded from the journal only for a
  // version before its branch's migration commit; DataLoss for a version
  // without heads that no migration explains.
  Result<Snapshot> SnapshotOf(const ManifestVersion& v, SnapshotStats* stats = nullptr) const;
  Status Fail(std::string_view point) const;
  // Publishes `spec`; records the manifest version and commit id in `result`.
  Status PublishInto(const PublishSpec& spec, WriteResult* result);
  Result<Dataset> OpenTableAt(const TableHead& head) const;
  // `reset`, when given, is set when the returned fork's latest version is
  // a rollback no publish recorded yet (see ForkReset).
  // With `remembered`, a fork this process committed at the head's version
  // is taken from committed_forks_ without reading (see CommittedForks).
  Result<Dataset> OpenFork(const TableHead& head, const std::string& fork,
                           std::optional<ForkReset>* reset = nullptr,
                           bool remembered = false) const;
  // After a write's table commit: remembers the fork `committed` when its
  // publish succeeded, forgets it otherwise.
  void SettleFork(const TableHead& head, const std::string& fork,
                  const Result<WriteResult>& settled, const Dataset& committed);
  // Unavailable when recovery (`report`) could not settle a write of the
  // table `sid` on `fork`: its writes wait until that recovery succeeds.
  static Status RecoveryBarrier(const RecoveryReport& report, const std::string& fork, int64_t sid,
                                const std::string& table);
  // `auth`, when it names a principal, is authorised again against the
  // grants of the version the publish commits on (a revoke that landed since
  // the write started refuses it).
  Result<WriteResult> PublishTableChange(const Sidecar& sidecar, const TableHead& expected,
                                         int64_t new_version, int64_t row_count,
                                         const std::string& commit_id, const std::string& actor,
                                         const std::vector<CommittedRun>& runs,
                                         const std::string& recovery,
                                         PublishAuthorisation auth = {},
                                         const std::optional<ForkReset>& reset = {});
  Status AuthorizeRole(const std::string& table, const std::string& principal,
                       std::optional<Role> held, WriteMode mode) const;
  // `auth` checked against the grants of the version a publish lands on.
  Status AuthorizeInPublish(PublishView& view, int64_t sid, const std::string& table,
                            const PublishAuthorisation& auth) const;
  // The run_commit rows of the write `s` describes, whose table commit is
  // `committed`'s latest version: an append names the fragments each run
  // added (so a revert can remove exactly its rows).
  // The sidecar of `req`'s write of the table at `head` on fork `branch_id`
  // (fresh operation, commit and rollback ids; no planned transaction yet).
  Sidecar NewSidecar(const WriteRequest& req, const TableHead& head,
                     const std::string& branch_id) const;
  // The end of a write whose table commit is `committed`: decides a publish
  // whose answer was lost, rolls back one the manifest refused, deletes the
  // sidecar at `key`.
  Result<WriteResult> SettlePublish(const Sidecar& s, const std::string& key,
                                    const Dataset& committed, Result<WriteResult> published,
                                    const WriteResult& counted);
  // A table commit of sidecar `s` on top of `base_version` (nullopt: the
  // write failed before its own commit, e.g. in OpenFork's reset) that did
  // not answer and whose read-back failed (CommitOutcomeUnknown): looks at
  // the version it tried again, a few times. Ours → that version; another's
  // → Aborted (a lost race). `*unknown` is set when it still cannot tell
  // (absent included: a put may land after its timeout): the caller keeps
  // its sidecar and returns the error, and recovery, or a retry of the run
  // (RecoverRun), decides. Any other `committed` comes back unchanged.
  Result<Dataset> LookAgainAtUnanswered(const TableHead& head, const Sidecar& s,
                                        std::optional<int64_t> base_version,
                                        Result<Dataset> committed, bool* unknown) const;
  // One attempt of Write and WriteGroup (workspace_write.cc): resolve,
  // preconditions, commit the table, publish. `busy` is set when nothing was
  // committed because another writer's commit to the table was in progress
  // (a version above the head, younger than the grace) or landed first.
  Result<WriteResult> WriteOnce(const WriteRequest& req, bool* busy);
  // What a write resolves first: what recovery settled, the branch's latest
  // snapshot and the table in it.
  struct WriteTarget {
    RecoveryReport recovered;
    Snapshot snap;
    const TableState* table = nullptr;  // in `snap`
  };
  // 1. Resolve: recovery when due, the table by name or id; a run already
  // in the journal is kRunAlreadyCommitted.
  Status ResolveWrite(const WriteRequest& req, WriteTarget* out);
  // 2. Preconditions: the grant, the expected schema and table versions. The
  // merge plan to commit: the request's, or (an upsert whose table moved)
  // one carried to the head in `carried`.
  Result<const MergePlan*> CheckWritePreconditions(const WriteRequest& req,
                                                   const WriteTarget& target,
                                                   MergePlan* carried) const;
  // The sidecar of the write, with the table definition it publishes.
  Result<Sidecar> PrepareSidecar(const WriteRequest& req, const WriteTarget& target,
                                 const std::string& branch_id) const;
  // What the table commit leaves for the publish.
  struct TableCommit {
    WriteResult result;        // merge and compaction counts
    int64_t base_version = 0;  // the fork's version the commit went on top of
    bool own_commit = false;   // past OpenFork: a failure may be this write's commit
    std::optional<ForkReset> reset;
  };
  // 3. Commit the table: the change as the fork's next version. `*unknown`:
  // the outcome cannot be told (the sidecar stays; recovery decides).
  Result<Dataset> CommitTable(const WriteRequest& req, const TableState& t, const Sidecar& s,
                              const MergePlan* plan, TableCommit* out, bool* unknown, bool* busy);
  // 4. Publish: the manifest commit of a table commit that changed the
  // table; a commit without effect only removes the sidecar at `key`.
  Result<WriteResult> PublishWrite(const WriteRequest& req, const WriteTarget& target,
                                   const Sidecar& s, const std::string& key,
                                   Result<Dataset> committed, const TableCommit& commit,
                                   bool* busy);
  std::vector<Result<WriteResult>> WriteGroupOnce(const std::vector<const WriteRequest*>& requests,
                                                  bool* busy);
  // The table and manifest commit of a group's `members` (WriteGroup).
  Result<WriteResult> CommitGroup(const std::vector<const WriteRequest*>& requests,
                                  const std::vector<size_t>& members, const TableState& t,
                                  const std::string& branch_id, bool* busy);
  static std::vector<CommittedRun> RunsOf(const Sidecar& s, const Dataset& committed);
  // The members of a group commit that pass every per-run rule on `snap`;
  // the others get their error in `results`.
  std::vector<size_t> GroupMembers(const std::vector<const WriteRequest*>& requests,
                                   const Snapshot& snap, const TableState& t,
                                   std::vector<Result<WriteResult>>* results);
  // Where recovery reads a table's current head, and whether it may publish.
  struct RecoveryHeads {
    std::function<Result<std::optional<TableHead>>(const std::string& branch, int64_t sid)> read;
    bool publish = true;
  };
  RecoveryHeads StoredHeads() const;
  // Recovers the sidecar at `key`; counts the outcome in `report`.
  Status RecoverOne(const std::string& key, const Sidecar& s, const RecoveryHeads& heads,
                    RecoveryReport* report);
  Status MoveAside(const std::string& key, const std::string& text, RecoveryReport* report);
  Status RollBack(const Sidecar& s, const TableHead& cur, const Dataset& fork, bool publish);
  // `earliest_left`, when given, receives the earliest time one of the
  // sidecars left to live writers is due under `grace` (SidecarDueAt;
  // unchanged when there are none).
  Result<RecoveryReport> RecoverWhere(const std::function<bool(const Sidecar&)>& due,
                                      const RecoveryHeads& heads, int64_t grace = 0,
                                      int64_t* earliest_left = nullptr);
  // The write path's recovery: Recover(recovery_grace_micros), skipped while
  // no sidecar can be due yet (see recovery.cc).
  Result<RecoveryReport> RecoverIfDue();

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  WorkspaceOptions options_;
  std::shared_ptr<Manifest> manifest_;
  std::string owner_;
  std::string id_;
  // Before this time (the workspace clock) no sidecar can be past the grace
  // period: RecoverIfDue lists nothing. 0 = list on the next write.
  std::atomic<int64_t> recovery_not_due_before_{0};
  mutable CommittedForks committed_forks_;
  std::unique_ptr<SidecarLeases> leases_;  // puts write sidecars and renews their leases
};

}  // namespace loam
