// Loam's public entry point: a workspace of versioned tables, opened from a
// local directory or an s3:// URI. Loads are in loam/load.h, reads in
// loam/scan.h; everything else a workspace does is here.
//
//   auto ws = loam::Workspace::Open("/data/loam", {.create_if_missing = true});
//   if (!ws.ok()) { ... ws.status() ... }
//   (*ws)->CreateTable("events", schema, {"id"});
//
// Every call is one atomic step: it commits entirely or not at all, and its
// error says why (loam/status.h: a stable ErrorCode, docs/errors.md). A
// Workspace may be used by several threads at once, and several processes
// may open the same location: they coordinate through the store alone (make
// a workspace once, then open it from many: two processes making the same
// one at the same moment is not supported).
//
// Branches are named; "main" is the default. A read names a branch and,
// optionally, a workspace version (time travel); a version is what a commit
// returns as `workspace_version`, and Log lists them.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "loam/batch.h"
#include "loam/merge.h"
#include "loam/result.h"
#include "loam/status.h"
#include "loam/types.h"

namespace loam {

struct OpenOptions {
  // Make an empty workspace (owned by `principal`) when none is there.
  bool create_if_missing = false;
  // Who acts: recorded with every commit, and checked against the table's
  // grants by every change (writes: writer, or admin to replace; renames,
  // drops and grants: admin; the workspace's owner holds every role). Reads
  // are not checked: a process that opens the location can read its files.
  // 1..127 bytes of printable UTF-8, no space at either end, not "." or ".."
  // (docs/server.md).
  std::string principal = "loam";
  // Settle writes left half-done by crashed processes (older than their
  // lease) before returning; off only for read-only inspection.
  bool recover = true;
  // Memory for what reads of this Workspace keep decoded (file footers,
  // deletion vectors, the pages point look-ups read), shared by its reads;
  // 0: none.
  uint64_t read_cache_bytes = 64 << 20;
};

// Where a read looks: a branch at its current state, or at a version.
struct ReadOptions {
  std::string branch = "main";
  std::optional<uint64_t> version;  // nullopt: the current state
};

// A principal's role on a table.
struct TableGrant {
  std::string principal;
  Role role = Role::kReader;
};

// A table as one state of a branch holds it.
struct TableInfo {
  std::string name;
  int64_t id = 0;           // stable across renames and writes
  int64_t incarnation = 0;  // new when a dropped name is created again
  Schema schema;
  std::vector<std::string> keys;  // the declared key columns; may be empty
  int64_t version = 0;            // the table's own version
  int64_t row_count = 0;
  int64_t schema_version = 1;
  std::string schema_hash;         // of the columns and keys (docs/format/catalog.md)
  std::vector<TableGrant> grants;  // besides the workspace's owner, who holds every role
};

// The workspace as a whole.
struct WorkspaceInfo {
  std::string id;                     // made once, with the workspace
  std::string owner;                  // holds every role on every table
  uint64_t version = 0;               // main's current workspace version
  int manifest_format = 0;            // the head directory's format (docs/format/manifest.md)
  std::vector<std::string> branches;  // "main" first
};

// What a commit made.
struct Commit {
  uint64_t workspace_version = 0;  // readable with ReadOptions::version
  int64_t table_id = 0;            // the table it changed
  std::string commit_id;
  int64_t table_version = 0;
  int64_t row_count = 0;  // the table's rows after the commit
  bool changed = true;    // false: there was nothing to commit
};

// One commit of a branch, as Log lists them (newest first).
struct LogEntry {
  uint64_t workspace_version = 0;
  std::string commit_id;
  std::vector<std::string> parents;  // the commits it follows
  std::string branch;
  std::string actor;
  int64_t created_micros = 0;        // µs since the epoch
  std::vector<std::string> run_ids;  // the loads it committed
};

// One event in a table's history (oldest first).
struct TableEvent {
  std::string event;   // table_version, table_schema, table_rename, table_grant, ...
  std::string name;    // the table's name then
  std::string branch;  // the branch whose fork the event changed
  int64_t table_version = 0;
  std::optional<int64_t> row_count;
  std::string commit_id;
  std::string actor;
  int64_t created_micros = 0;
  std::string detail;  // grants: "bob: writer"; renames: "a -> b"
};

// How rows arrive in a table, by Workspace::Write and by loads (loam/load.h).
// Append and upsert need the writer role, replace the admin role.
enum class LoadMode {
  kAppend,   // adds the rows; on a keyed table, a key it already holds is refused
  kUpsert,   // by key: a row whose key the table holds replaces that row; others are added
  kReplace,  // the rows become the table's whole content
};

struct WriteOptions {
  std::string branch = "main";
  LoadMode mode = LoadMode::kAppend;
  std::vector<std::string> keys;  // upsert: empty = the table's declared key
  // The write fails with precondition_failed, writing nothing, unless the
  // table is at this version (optimistic concurrency: read it again, then
  // decide).
  std::optional<int64_t> expected_table_version;
};

// How Workspace::Merge merges (loam/merge.h).
struct MergeOptions {
  std::string into = "main";  // must be the branch the merged one was created from
  // The same id answers an earlier merge again instead of merging twice ("" = a new one).
  std::string merge_id;
  // The branch's version to merge (its checks see that state); nullopt = its newest.
  std::optional<uint64_t> version;
  std::vector<MergeCheck> checks;
};

namespace internal {
struct WorkspaceAccess;
}

class Workspace {
 public:
  // `location`: a directory, or s3://bucket[/prefix][?endpoint=URL&region=R]
  // (credentials from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY). NotFound
  // when no workspace is there and !create_if_missing.
  static Result<std::unique_ptr<Workspace>> Open(const std::string& location,
                                                 const OpenOptions& options = {});
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const std::string& principal() const;
  const std::string& id() const;     // "" for a workspace made before ids existed
  const std::string& owner() const;  // "" for one made before owners existed
  Result<WorkspaceInfo> Info() const;

  // The newest version of `branch`.
  Result<uint64_t> CurrentVersion(const std::string& branch = "main") const;

  // Tables. A name is 1..128 letters, digits and '_', not starting with a digit.
  Result<std::vector<TableInfo>> ListTables(const ReadOptions& at = {}) const;
  Result<TableInfo> DescribeTable(const std::string& name, const ReadOptions& at = {}) const;
  Result<Commit> CreateTable(const std::string& name, const Schema& schema,
                             const std::vector<std::string>& keys = {},
                             const std::string& branch = "main");
  Result<Commit> RenameTable(const std::string& from, const std::string& to,
                             const std::string& branch = "main");
  Result<Commit> DropTable(const std::string& name, const std::string& branch = "main");
  // Gives `principal` `role` on `table`, or takes its role away (nullopt).
  Status SetGrant(const std::string& table, const std::string& principal, std::optional<Role> role,
                  const std::string& branch = "main");
  // Whether the service's pipelines may add columns to `table` (additive
  // loads, docs/service.md); needs the role a column change needs.
  Status SetAdditiveSchema(const std::string& table, bool allowed,
                           const std::string& branch = "main");

  // Rows held in memory, committed as one table version. On a keyed table
  // the rows' keys must be set and unique (duplicate_key), and an append's
  // must be new to the table: it reads the table for them once, and fails
  // with conflict if the table moves before the commit (write again).
  Result<Commit> Write(const std::string& table, const RecordBatch& rows,
                       const WriteOptions& options = {});

  // Branches fork lazily: a table is copied on its branch's first write.
  Status CreateBranch(const std::string& name, const ReadOptions& from = {});
  Status DeleteBranch(const std::string& name);  // never "main"
  Result<std::vector<std::string>> ListBranches() const;
  // Merges `branch` into the branch it was created from, in one commit there
  // (loam/merge.h): conflict, naming the tables, when that branch changed
  // one of them too. Needs the writer role on every table whose rows it
  // changes, admin on every table it creates, drops, renames or widens.
  Result<MergeResult> Merge(const std::string& branch, const MergeOptions& options = {});
  // The merge of `branch` committed under `merge_id` into `into`, if any
  // (what Merge answers a retry with, before its checks run).
  Result<std::optional<MergeResult>> FindMerge(const std::string& branch,
                                               const std::string& merge_id,
                                               const std::string& into = "main") const;
  // Undoes the merge `merge_id` into `into` as one unit, in one commit: every
  // table it changed back as it was, every table it created dropped
  // (loam/merge.h). revert_blocked, naming the table, when a commit since
  // changed one of them, took a name back, or the merge dropped a table. A
  // second revert answers the first (already_reverted). Needs the roles
  // the undone changes need.
  Result<MergeRevertResult> RevertMerge(const std::string& merge_id,
                                        const std::string& into = "main");
  // A protected branch's tables change only through merges: loads, deletes,
  // reverts, creates, renames and drops there are refused (permission_denied).
  // The workspace owner only.
  Status SetBranchProtected(const std::string& branch, bool on);
  Result<bool> BranchProtected(const std::string& branch) const;

  Result<std::vector<LogEntry>> Log(const std::string& branch = "main") const;
  Result<std::vector<TableEvent>> History(const std::string& table,
                                          const std::string& branch = "main") const;

 private:
  friend struct internal::WorkspaceAccess;
  Status CheckNewKeys(const TableInfo& info, const RecordBatch& rows, bool append,
                      const std::string& branch) const;
  Status RequireAdmin(const std::string& table, const std::string& branch) const;
  struct Rep;
  explicit Workspace(std::unique_ptr<Rep> rep);
  std::unique_ptr<Rep> rep_;
};

}  // namespace loam
