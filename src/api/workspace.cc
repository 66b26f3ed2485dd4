#include "loam/workspace.h"

#include "api/workspace_access.h"
#include "common/principal.h"
#include "common/status_macros.h"

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

}  // namespace internal

namespace {

using internal::EngineBranch;
using internal::WorkspaceAccess;

TableInfo InfoOf(const TableState& t) {
  TableInfo info;
  info.name = t.def.name;
  info.id = t.def.sid;
  info.schema = t.def.schema;
  info.keys = t.def.keys;
  info.version = t.head.table_version;
  info.row_count = t.head.row_count.value_or(0);
  info.schema_version = t.def.schema_version;
  return info;
}

Commit CommitOf(const WriteResult& w) {
  Commit c;
  c.workspace_version = w.manifest_version;
  c.commit_id = w.commit_id;
  c.table_version = w.table_version;
  c.row_count = w.row_count;
  c.changed = w.changed;
  return c;
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
    // Another process made it first: open theirs.
    if (engine.status().IsAlreadyExists()) engine = WorkspaceEngine::Open(store, "", o);
  }
  if (engine.status().IsNotFound()) {
    return Status::NotFound("no Loam workspace at '" + location +
                            "' (OpenOptions::create_if_missing makes one)");
  }
  return engine;
}

}  // namespace

Workspace::Workspace(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
Workspace::~Workspace() = default;

Result<std::unique_ptr<Workspace>> Workspace::Open(const std::string& location,
                                                   const OpenOptions& options) {
  auto rep = std::make_unique<Rep>();
  ASSIGN_OR_RETURN(rep->engine, OpenEngine(location, options));
  rep->principal = options.principal;
  return std::unique_ptr<Workspace>(new Workspace(std::move(rep)));
}

const std::string& Workspace::principal() const { return rep_->principal; }

Result<uint64_t> Workspace::CurrentVersion(const std::string& branch) const {
  ASSIGN_OR_RETURN(Snapshot snap, rep_->engine->Current(EngineBranch(branch)));
  return snap.manifest_version;
}

Result<std::vector<TableInfo>> Workspace::ListTables(const ReadOptions& at) const {
  ASSIGN_OR_RETURN(Snapshot snap, internal::SnapshotFor(*rep_->engine, at));
  std::vector<TableInfo> out;
  for (const auto& [name, t] : snap.tables) out.push_back(InfoOf(t));
  return out;
}

Result<TableInfo> Workspace::DescribeTable(const std::string& name, const ReadOptions& at) const {
  ASSIGN_OR_RETURN(Snapshot snap, internal::SnapshotFor(*rep_->engine, at));
  ASSIGN_OR_RETURN(const TableState* t, internal::FindTable(snap, name));
  return InfoOf(*t);
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
  ASSIGN_OR_RETURN(WriteResult w, rep_->engine->RenameTable(from, to, EngineBranch(branch)));
  return CommitOf(w);
}

Result<Commit> Workspace::DropTable(const std::string& name, const std::string& branch) {
  ASSIGN_OR_RETURN(WriteResult w, rep_->engine->DropTable(name, EngineBranch(branch)));
  return CommitOf(w);
}

Status Workspace::SetGrant(const std::string& table, const std::string& principal,
                           std::optional<Role> role, const std::string& branch) {
  return rep_->engine->SetGrant(table, principal, role, EngineBranch(branch), rep_->principal);
}

Result<Commit> Workspace::Write(const std::string& table, const RecordBatch& rows,
                                const WriteOptions& options) {
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
  Result<WriteResult> done = rep_->engine->Write(w);
  // The caller's compare-and-swap lost: as a load's expectedTableVersion,
  // precondition_failed (read the table again before deciding to retry).
  if (!done.ok() && options.expected_table_version && done.status().Is(ErrorCode::kConflict)) {
    return done.status()
        .WithMessage(done.status().message() + " (WriteOptions::expected_table_version " +
                     std::to_string(*options.expected_table_version) + "); nothing was written")
        .WithErrorCode(ErrorCode::kPreconditionFailed);
  }
  ASSIGN_OR_RETURN(WriteResult written, std::move(done));
  return CommitOf(written);
}

Status Workspace::CreateBranch(const std::string& name, const ReadOptions& from) {
  return rep_->engine->CreateBranch(name, EngineBranch(from.branch), from.version);
}

Status Workspace::DeleteBranch(const std::string& name) { return rep_->engine->DeleteBranch(name); }

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
    out.push_back({static_cast<uint64_t>(c.manifest_version), c.id,
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
    out.push_back(
        {e.event, e.table_version, e.row_count, e.commit_id, e.actor, e.created_micros, e.detail});
  }
  return out;
}

}  // namespace loam
