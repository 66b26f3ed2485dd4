#include "loam/workspace.h"

#include <bit>
#include <set>
#include <variant>

#include "api/workspace_access.h"
#include "common/principal.h"
#include "common/status_macros.h"
#include "loam/scan.h"

namespace loam {
namespace internal {

Result<Snapshot> SnapshotFor(const WorkspaceEngine& engine, const ReadOptions& at) {
  if (at.version.has_value()) return engine.SnapshotAt(EngineBranch(at.branch), *at.version);
  return engine.Current(EngineBranch(at.branch));
}

Result<const TableState*> FindTable(const Snapshot& snap, const std::string& name) {
  const TableState* t = snap.Find(name);
  if (t == nullptr) {
    return Status::NotFound("table '" + name + "' does not exist on branch '" +
                            (snap.branch.empty() ? "main" : snap.branch) + "'");
  }
  return t;
}

Commit CommitOf(const WriteResult& w) {
  Commit c;
  c.workspace_version = w.manifest_version;
  c.table_id = w.sid;
  c.commit_id = w.commit_id;
  c.table_version = w.table_version;
  c.row_count = w.row_count;
  c.changed = w.changed;
  return c;
}

}  // namespace internal

namespace {

using internal::CommitOf;
using internal::EngineBranch;
using internal::WorkspaceAccess;

TableInfo InfoOf(const Snapshot& snap, const TableState& t) {
  TableInfo info;
  info.name = t.def.name;
  info.id = t.def.sid;
  info.incarnation = t.def.inc;
  info.schema = t.def.schema;
  info.keys = t.def.keys;
  info.version = t.head.table_version;
  info.row_count = t.head.row_count.value_or(0);
  info.schema_version = t.def.schema_version;
  info.schema_hash = t.def.SchemaHash();
  for (const Grant& g : snap.grants) {
    if (g.sid == t.def.sid) info.grants.push_back({g.principal, g.role});
  }
  return info;
}

Result<std::shared_ptr<WorkspaceEngine>> OpenEngine(const std::string& location,
                                                    const OpenOptions& options) {
  if (Status valid = CheckPrincipal(options.principal); !valid.ok()) {
    return Status::InvalidArgument("OpenOptions::principal is not a valid principal: " +
                                   valid.message());
  }
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenObjectStore(location));
  WorkspaceOptions o;
  o.owner = options.principal;  // read by Init only
  o.actor = options.principal;
  o.recover_on_open = options.recover;
  Result<std::shared_ptr<WorkspaceEngine>> engine = WorkspaceEngine::Open(store, "", o);
  if (engine.status().IsNotFound() && options.create_if_missing) {
    engine = WorkspaceEngine::Init(store, "", o);
    // Made meanwhile by another process: open it (making one workspace from
    // two processes at once is not supported; docs/embedding.md).
    if (engine.status().IsAlreadyExists()) engine = WorkspaceEngine::Open(store, "", o);
  }
  if (engine.status().IsNotFound()) {
    return Status::NotFound("no Loam workspace at '" + location +
                            "' (OpenOptions::create_if_missing makes one)");
  }
  return engine;
}

// A key's values as one string (each tagged with its kind), or nullopt
// when one is null.
std::optional<std::string> KeyOf(const RecordBatch& rows, const std::vector<int>& cols, int64_t r) {
  std::string key;
  for (int c : cols) {
    const Value v = rows.columns[c].GetValue(r);
    if (std::holds_alternative<std::monostate>(v)) return std::nullopt;
    key += std::to_string(v.index()) + ":";
    if (const auto* text = std::get_if<std::string>(&v)) {
      key += std::to_string(text->size()) + ":" + *text;
    } else if (const auto* i = std::get_if<int64_t>(&v)) {
      key += std::to_string(*i);
    } else if (const auto* b = std::get_if<bool>(&v)) {
      key += *b ? "1" : "0";
    } else if (const auto* d = std::get_if<double>(&v)) {
      key += std::to_string(std::bit_cast<uint64_t>(*d));
    } else if (const auto* w = std::get_if<Int128>(&v)) {
      key += std::to_string(w->hi) + "." + std::to_string(w->lo);
    }
    key += ";";
  }
  return key;
}

std::vector<int> KeyColumns(const Schema& schema, const std::vector<std::string>& keys) {
  std::vector<int> cols;
  for (const std::string& k : keys) cols.push_back(schema.IndexOf(k));
  return cols;
}

}  // namespace

// A keyed table holds one row per key: the rows' keys are set and unique,
// and (an append) none is in the table at `info`'s version.
Status Workspace::CheckNewKeys(const TableInfo& info, const RecordBatch& rows, bool append,
                               const std::string& branch) const {
  const std::vector<int> cols = KeyColumns(rows.schema, info.keys);
  for (int c : cols) {
    if (c < 0) return Status::InvalidArgument("the rows lack a key column of '" + info.name + "'");
  }
  std::set<std::string> seen;
  std::vector<Value> first_values;
  for (int64_t r = 0; r < rows.num_rows(); ++r) {
    std::optional<std::string> key = KeyOf(rows, cols, r);
    if (!key) {
      return Status::InvalidArgument("row " + std::to_string(r + 1) + " has a null key column");
    }
    if (!seen.insert(*key).second) {
      return Status::InvalidArgument("row " + std::to_string(r + 1) +
                                     " repeats the key of an earlier row")
          .WithErrorCode(ErrorCode::kDuplicateKey);
    }
    first_values.push_back(rows.columns[cols[0]].GetValue(r));
  }
  if (!append || rows.num_rows() == 0) return Status::OK();
  ScanOptions held;
  held.branch = branch;
  held.columns = info.keys;
  held.where = {Predicate::In(info.keys[0], std::move(first_values))};
  ASSIGN_OR_RETURN(std::vector<RecordBatch> found, loam::Scan(*this, info.name, held));
  for (const RecordBatch& b : found) {
    const std::vector<int> found_cols = KeyColumns(b.schema, info.keys);
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      if (std::optional<std::string> key = KeyOf(b, found_cols, r); key && seen.count(*key)) {
        return Status::InvalidArgument("table '" + info.name +
                                       "' already holds a row with the key of one of the rows; "
                                       "write them with LoadMode::kUpsert to replace it")
            .WithErrorCode(ErrorCode::kDuplicateKey);
      }
    }
  }
  return Status::OK();
}

// Renaming, dropping and granting need the admin role on the table (the
// workspace's owner holds every role).
Status Workspace::RequireAdmin(const std::string& table, const std::string& branch) const {
  ASSIGN_OR_RETURN(Snapshot snap, rep_->engine->Current(EngineBranch(branch)));
  ASSIGN_OR_RETURN(const TableState* t, internal::FindTable(snap, table));
  return rep_->engine->Authorize(snap, *t, rep_->principal, WriteMode::kReplace);
}

Workspace::Workspace(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Workspace::~Workspace() = default;

Result<std::unique_ptr<Workspace>> Workspace::Open(const std::string& location,
                                                   const OpenOptions& options) {
  auto rep = std::make_unique<Rep>();
  ASSIGN_OR_RETURN(rep->engine, OpenEngine(location, options));
  rep->principal = options.principal;
  if (options.read_cache_bytes > 0) {
    rep->read_cache = std::make_shared<LruCache>(options.read_cache_bytes);
  }
  return std::unique_ptr<Workspace>(new Workspace(std::move(rep)));
}

const std::string& Workspace::principal() const { return rep_->principal; }
const std::string& Workspace::id() const { return rep_->engine->id(); }
const std::string& Workspace::owner() const { return rep_->engine->owner(); }

Result<WorkspaceInfo> Workspace::Info() const {
  WorkspaceInfo info;
  info.id = id();
  info.owner = owner();
  ASSIGN_OR_RETURN(ManifestVersion main, rep_->engine->manifest().Current(""));
  info.version = main.version;
  info.manifest_format = main.dir.format;
  ASSIGN_OR_RETURN(info.branches, ListBranches());
  return info;
}

Result<uint64_t> Workspace::CurrentVersion(const std::string& branch) const {
  ASSIGN_OR_RETURN(Snapshot snap, rep_->engine->Current(EngineBranch(branch)));
  return snap.manifest_version;
}

Result<std::vector<TableInfo>> Workspace::ListTables(const ReadOptions& at) const {
  ASSIGN_OR_RETURN(Snapshot snap, internal::SnapshotFor(*rep_->engine, at));
  std::vector<TableInfo> out;
  for (const auto& [name, t] : snap.tables) out.push_back(InfoOf(snap, t));
  return out;
}

Result<TableInfo> Workspace::DescribeTable(const std::string& name, const ReadOptions& at) const {
  ASSIGN_OR_RETURN(Snapshot snap, internal::SnapshotFor(*rep_->engine, at));
  ASSIGN_OR_RETURN(const TableState* t, internal::FindTable(snap, name));
  return InfoOf(snap, *t);
}

Result<Commit> Workspace::CreateTable(const std::string& name, const Schema& schema,
                                      const std::vector<std::string>& keys,
                                      const std::string& branch) {
  ASSIGN_OR_RETURN(WriteResult w,
                   rep_->engine->CreateTable(name, schema, keys, EngineBranch(branch)));
  return CommitOf(w);
}

Result<Commit> Workspace::RenameTable(const std::string& from, const std::string& to,
                                      const std::string& branch) {
  RETURN_NOT_OK(RequireAdmin(from, branch));
  ASSIGN_OR_RETURN(WriteResult w, rep_->engine->RenameTable(from, to, EngineBranch(branch)));
  return CommitOf(w);
}

Result<Commit> Workspace::DropTable(const std::string& name, const std::string& branch) {
  RETURN_NOT_OK(RequireAdmin(name, branch));
  ASSIGN_OR_RETURN(WriteResult w, rep_->engine->DropTable(name, EngineBranch(branch)));
  return CommitOf(w);
}

Status Workspace::SetGrant(const std::string& table, const std::string& principal,
                           std::optional<Role> role, const std::string& branch) {
  RETURN_NOT_OK(RequireAdmin(table, branch));
  return rep_->engine->SetGrant(table, principal, role, EngineBranch(branch), rep_->principal);
}

Status Workspace::SetAdditiveSchema(const std::string& table, bool allowed,
                                    const std::string& branch) {
  ASSIGN_OR_RETURN(Snapshot snap, rep_->engine->Current(EngineBranch(branch)));
  ASSIGN_OR_RETURN(const TableState* t, internal::FindTable(snap, table));
  RETURN_NOT_OK(rep_->engine->Authorize(snap, *t, rep_->principal, WriteMode::kAddColumn));
  return rep_->engine->SetAdditiveSchema(table, allowed, rep_->principal, EngineBranch(branch));
}

Result<Commit> Workspace::Write(const std::string& table, const RecordBatch& rows,
                                const WriteOptions& options) {
  ReadOptions now;
  now.branch = options.branch;
  ASSIGN_OR_RETURN(TableInfo info, DescribeTable(table, now));
  std::optional<int64_t> checked_at;  // the version the new keys were checked on
  if (!info.keys.empty() && options.mode != LoadMode::kUpsert) {
    RETURN_NOT_OK(CheckNewKeys(info, rows, options.mode == LoadMode::kAppend, options.branch));
    if (options.mode == LoadMode::kAppend) checked_at = info.version;
  }
  WriteRequest w;
  w.table = table;
  w.branch = EngineBranch(options.branch);
  w.principal = rep_->principal;
  w.mode = options.mode == LoadMode::kUpsert    ? WriteMode::kUpsert
           : options.mode == LoadMode::kReplace ? WriteMode::kReplace
                                                : WriteMode::kAppend;
  w.rows = {rows};
  w.keys = options.keys;
  w.expected_version = options.expected_table_version;
  if (!w.expected_version) w.expected_version = checked_at;
  Result<WriteResult> done = rep_->engine->Write(w);
  // The caller's compare-and-swap lost: as a load's expectedTableVersion,
  // precondition_failed (read the table again before deciding to retry).
  if (!done.ok() && options.expected_table_version && done.status().Is(ErrorCode::kConflict)) {
    return done.status()
        .WithMessage(done.status().message() + " (WriteOptions::expected_table_version " +
                     std::to_string(*options.expected_table_version) + "); nothing was written")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  if (!done.ok() && checked_at && done.status().Is(ErrorCode::kConflict)) {
    return done.status().WithMessage(done.status().message() +
                                     " (the table moved while the rows' keys were checked "
                                     "against it; write again)");
  }
  ASSIGN_OR_RETURN(WriteResult written, std::move(done));
  return CommitOf(written);
}

Status Workspace::CreateBranch(const std::string& name, const ReadOptions& from) {
  return rep_->engine->CreateBranch(name, EngineBranch(from.branch), from.version);
}

Status Workspace::DeleteBranch(const std::string& name) {
  if (EngineBranch(name).empty()) {
    return Status::InvalidArgument("the main branch cannot be deleted");
  }
  return rep_->engine->DeleteBranch(name);
}

Result<MergeResult> Workspace::Merge(const std::string& branch, const MergeOptions& options) {
  MergeRequest r;
  r.source = EngineBranch(branch);
  r.into = EngineBranch(options.into);
  r.principal = rep_->principal;
  r.merge_id = options.merge_id;
  r.source_version = options.version;
  r.checks = options.checks;
  return rep_->engine->Merge(r);
}

Result<std::optional<MergeResult>> Workspace::FindMerge(const std::string& branch,
                                                        const std::string& merge_id,
                                                        const std::string& into) const {
  return rep_->engine->FindMerge(EngineBranch(into), merge_id, EngineBranch(branch));
}

Result<MergeRevertResult> Workspace::RevertMerge(const std::string& merge_id,
                                                 const std::string& into) {
  MergeRevertRequest r;
  r.into = EngineBranch(into);
  r.merge_id = merge_id;
  r.principal = rep_->principal;
  return rep_->engine->RevertMerge(r);
}

Status Workspace::SetBranchProtected(const std::string& branch, bool on) {
  if (rep_->principal != rep_->engine->owner()) {
    return Status::PermissionDenied("only the workspace owner protects branches; '" +
                                    rep_->principal + "' is not the owner");
  }
  return rep_->engine->SetBranchProtected(EngineBranch(branch), on, rep_->principal);
}

Result<bool> Workspace::BranchProtected(const std::string& branch) const {
  ASSIGN_OR_RETURN(WorkspaceEngine::BranchTip tip, rep_->engine->Tip(EngineBranch(branch)));
  return tip.graph_head && tip.graph_head->protected_branch;
}

Result<std::vector<std::string>> Workspace::ListBranches() const {
  ASSIGN_OR_RETURN(std::vector<std::string> named, rep_->engine->ListBranches());
  std::vector<std::string> branches = {"main"};
  branches.insert(branches.end(), named.begin(), named.end());
  return branches;
}

Result<std::vector<LogEntry>> Workspace::Log(const std::string& branch) const {
  ASSIGN_OR_RETURN(std::vector<GraphCommitInfo> commits, rep_->engine->Log(EngineBranch(branch)));
  std::vector<LogEntry> out;
  for (const GraphCommitInfo& c : commits) {
    out.push_back({static_cast<uint64_t>(c.manifest_version), c.id, c.parents,
                   c.branch.empty() ? "main" : c.branch, c.actor, c.created_micros, c.run_ids});
  }
  return out;
}

Result<std::vector<TableEvent>> Workspace::History(const std::string& table,
                                                   const std::string& branch) const {
  ASSIGN_OR_RETURN(std::vector<TableHistoryEntry> events,
                   rep_->engine->History(table, EngineBranch(branch)));
  std::vector<TableEvent> out;
  for (const TableHistoryEntry& e : events) {
    out.push_back({e.event, e.table_key, e.owner_branch.empty() ? "main" : e.owner_branch,
                   e.table_version, e.row_count, e.commit_id, e.actor, e.created_micros, e.detail});
  }
  return out;
}

}  // namespace loam
