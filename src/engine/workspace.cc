#include "engine/workspace.h"

#include <map>
#include <nlohmann/json.hpp>

#include "common/logging.h"
#include "common/principal.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/journal_rows.h"
#include "engine/journal_snapshot.h"
#include "engine/retention.h"
#include "manifest/heads.h"

namespace loam {
namespace {

using json = nlohmann::json;

Status Conflict(const std::string& what) { return Status::Conflict(what); }

}  // namespace

std::string WorkspaceEngine::TableRoot(const std::string& location) const {
  return root_.empty() ? location : root_ + "/" + location;
}

Status WorkspaceEngine::Fail(std::string_view point) const {
  return options_.failpoint ? options_.failpoint(point) : Status::OK();
}

// --- reads ------------------------------------------------------------------------------

Result<Snapshot> WorkspaceEngine::Current(const std::string& branch, SnapshotStats* stats) const {
  ASSIGN_OR_RETURN(ManifestVersion v, manifest_->Current(branch));
  return SnapshotOf(v, stats);
}

Result<WorkspaceEngine::BranchTip> WorkspaceEngine::Tip(const std::string& branch) const {
  ASSIGN_OR_RETURN(ManifestVersion v, manifest_->Current(branch));
  BranchTip tip;
  tip.manifest_version = v.version;
  if (IsJournalOnly(v)) {  // before a migration: only the fold knows
    ASSIGN_OR_RETURN(Snapshot snap, SnapshotOf(v));
    tip.graph_head = std::move(snap.graph_head);
  } else {
    ASSIGN_OR_RETURN(tip.graph_head, manifest_->ReadGraphHead(v));
  }
  return tip;
}

Result<Snapshot> WorkspaceEngine::SnapshotAt(const std::string& branch,
                                             uint64_t manifest_version) const {
  RETURN_NOT_OK(CheckInsideWindow(branch, manifest_version));
  ASSIGN_OR_RETURN(ManifestVersion v, manifest_->At(branch, manifest_version));
  return SnapshotOf(v);
}

Status WorkspaceEngine::CheckInsideWindow(const std::string& branch, uint64_t version) const {
  std::string id;
  if (!branch.empty()) {
    ASSIGN_OR_RETURN(id, manifest_->BranchId(branch));
  }
  ASSIGN_OR_RETURN(uint64_t oldest, ReadTimeTravelHorizon(*store_, root_, id));
  return version < oldest ? VersionExpired(branch, version, oldest) : Status::OK();
}

Result<Snapshot> WorkspaceEngine::SnapshotOf(const ManifestVersion& v, SnapshotStats* stats) const {
  if (!IsJournalOnly(v)) return ReadSnapshot(*manifest_, v, stats);
  // A version past the first without head files: before the branch's
  // migration commit (its heads marker says which) it is folded; at or after
  // it, the branch holds nothing (a migration of an empty branch publishes no
  // partition). Without a marker, a stamped workspace lost its heads.
  if (options_.any_format) return SnapshotFromJournal(*manifest_, v);
  ASSIGN_OR_RETURN(std::optional<ManifestRow> row,
                   manifest_->FindJournalRow(v.branch, HeadsMarkerId(kWorkspaceFormat)));
  if (!row) {
    return Status::DataLoss("manifest version " + std::to_string(v.version) + " of branch '" +
                            (v.branch.empty() ? std::string("main") : v.branch) +
                            "' has no head directory, which no publish of this format writes; "
                            "run 'loam heads verify'");
  }
  ASSIGN_OR_RETURN(HeadsMarker marker, ParseHeadsMarker(*row));
  if (v.version >= marker.produced_version) return ReadSnapshot(*manifest_, v, stats);
  return SnapshotFromJournal(*manifest_, v);
}

Result<Dataset> WorkspaceEngine::OpenTableAt(const TableHead& head) const {
  OpenSpec spec;
  spec.branch = head.owner_ref;
  spec.version = static_cast<uint64_t>(head.table_version);
  return Dataset::Open(store_, TableRoot(head.location), spec, options_.manifest.dataset);
}

Result<Dataset> WorkspaceEngine::OpenTable(const Snapshot& snapshot,
                                           const std::string& name) const {
  const TableState* t = snapshot.Find(name);
  if (t == nullptr) {
    return Status::NotFound("table '" + name + "' does not exist on branch '" +
                            (snapshot.branch.empty() ? "main" : snapshot.branch) + "'");
  }
  return OpenTableAt(t->head);
}

// The latest version of `fork` of the head's table, holding the head's
// content: created from the head when missing, and reset to it when a failed
// write left an unpublished version there. On the head's own fork such a
// version may belong to a live writer: it is reset only once older than the
// recovery grace period (its sidecar, if any, was handled by Recover).
Result<Dataset> WorkspaceEngine::OpenFork(const TableHead& head, const std::string& fork,
                                          std::optional<ForkReset>* reset, bool remembered) const {
  if (remembered && head.owner_ref == fork) {
    std::optional<Dataset> known = committed_forks_.Find(TableRoot(head.location), fork,
                                                         static_cast<uint64_t>(head.table_version));
    if (known) return *std::move(known);
  }
  OpenSpec spec;
  spec.branch = fork;
  // The head's own fork: its version is almost always the latest, found
  // without listing the fork's versions.
  Result<Dataset> latest =
      head.owner_ref == fork
          ? Dataset::OpenLatestFrom(store_, TableRoot(head.location), fork,
                                    static_cast<uint64_t>(head.table_version),
                                    options_.manifest.dataset)
          : Dataset::Open(store_, TableRoot(head.location), spec, options_.manifest.dataset);
  if (latest.status().IsNotFound() && !fork.empty()) {
    ASSIGN_OR_RETURN(Dataset at_head, OpenTableAt(head));
    Result<Dataset> created = at_head.CreateBranch(fork);
    if (!created.status().IsAlreadyExists()) return created;
    latest = Dataset::Open(store_, TableRoot(head.location), spec, options_.manifest.dataset);
  }
  RETURN_NOT_OK(latest.status());
  if (static_cast<int64_t>(latest->version()) == head.table_version) return latest;
  const int64_t latest_version = static_cast<int64_t>(latest->version());
  auto record = [&](int64_t last_undone, int64_t restore_version) {
    if (reset != nullptr && last_undone > head.table_version) {
      *reset = ForkReset{head.table_version, head.table_version + 1, last_undone, restore_version};
    }
  };
  const Transaction& last = latest->state().txn;
  if (last.op == OpType::kRestore &&
      static_cast<int64_t>(last.restore_version) == head.table_version) {
    record(latest_version - 1, latest_version);  // a rollback no publish recorded yet
    return latest;
  }
  const int64_t age =
      options_.manifest.dataset.clock->NowMicros() - latest->state().timestamp_micros;
  if (age < options_.recovery_grace_micros) {
    return Conflict("table '" + head.table_key + "' has version " +
                    std::to_string(latest->version()) + " beyond its published head " +
                    std::to_string(head.table_version) +
                    " (a write in progress or awaiting recovery); retry later");
  }
  // Unpublished versions: no head references them.
  ASSIGN_OR_RETURN(Dataset restored, latest->Restore(static_cast<uint64_t>(head.table_version),
                                                     {.expected_version = latest->version()}));
  LOAM_LOG_WARN("table '{}': reset unpublished versions {}..{} of its fork to version {}",
                head.table_key, head.table_version + 1, latest_version, head.table_version);
  record(latest_version, static_cast<int64_t>(restored.version()));
  return restored;
}

void WorkspaceEngine::SettleFork(const TableHead& head, const std::string& fork,
                                 const Result<WriteResult>& settled, const Dataset& committed) {
  if (settled.ok()) {
    committed_forks_.Remember(TableRoot(head.location), fork, committed);
  } else {
    committed_forks_.Forget(TableRoot(head.location), fork);
  }
}

// --- publishing a table change -------------------------------------------------------

Status WorkspaceEngine::PublishInto(const PublishSpec& spec, WriteResult* result) {
  ASSIGN_OR_RETURN(PublishResult p, manifest_->Publish(spec));
  result->manifest_version = p.manifest_version;
  result->commit_id = p.commit_id;
  return Status::OK();
}

// Grants as of the version the commit lands on.
Status WorkspaceEngine::AuthorizeInPublish(PublishView& view, int64_t sid, const std::string& table,
                                           const PublishAuthorisation& auth) const {
  auto role_of = [&](const std::string& principal) -> Result<std::optional<Role>> {
    ASSIGN_OR_RETURN(std::optional<ManifestRow> grant_row,
                     view.Find(GrantRow({sid, principal}).object_id, kCatalogPartition));
    if (!grant_row) return std::optional<Role>();
    ASSIGN_OR_RETURN(Grant g, ParseGrant(*grant_row));
    return std::optional<Role>(g.role);
  };
  if (auth.principal != nullptr) {
    ASSIGN_OR_RETURN(std::optional<Role> held, role_of(*auth.principal));
    RETURN_NOT_OK(AuthorizeRole(table, *auth.principal, held, auth.mode));
  }
  for (const std::string& principal : auth.more_principals) {
    ASSIGN_OR_RETURN(std::optional<Role> held, role_of(principal));
    RETURN_NOT_OK(AuthorizeRole(table, principal, held, auth.mode));
  }
  if (auth.additive) {
    ASSIGN_OR_RETURN(std::optional<Role> allowed, role_of(std::string(kAdditiveSchemaPrincipal)));
    if (!allowed) {
      return Status::PermissionDenied("table '" + table +
                                      "' no longer allows additive schema changes");
    }
    if (auth.additive_admin != nullptr && !auth.additive_admin->empty()) {
      ASSIGN_OR_RETURN(std::optional<Role> held, role_of(*auth.additive_admin));
      Status admin = AuthorizeRole(table, *auth.additive_admin, held, WriteMode::kAddColumn);
      if (!admin.ok()) {
        return admin.WithMessage("the additive load was configured by '" + *auth.additive_admin +
                                 "', no longer an admin of table '" + table +
                                 "': " + admin.message());
      }
    }
  }
  return Status::OK();
}

Result<WriteResult> WorkspaceEngine::PublishTableChange(
    const Sidecar& s, const TableHead& expected, int64_t new_version, int64_t row_count,
    const std::string& commit_id, const std::string& actor, const std::vector<CommittedRun>& runs,
    const std::string& recovery, PublishAuthorisation auth, const std::optional<ForkReset>& reset) {
  WriteResult result;
  PublishSpec spec;
  spec.branch = s.branch;
  spec.commit_id = commit_id;
  spec.actor = actor;
  spec.runs = runs;
  spec.direct_change = auth.direct;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    ASSIGN_OR_RETURN(std::optional<TableHead> cur, view.TableHeadOf(s.sid));
    if (!cur || cur->state != HeadState::kLive || cur->inc != expected.inc) {
      return Conflict("table '" + expected.table_key + "' was dropped meanwhile");
    }
    if (cur->table_version != expected.table_version || cur->owner_ref != expected.owner_ref) {
      return Conflict("table '" + cur->table_key + "' moved from version " +
                      std::to_string(expected.table_version) + " to " +
                      std::to_string(cur->table_version) + " meanwhile");
    }
    ASSIGN_OR_RETURN(std::optional<ManifestRow> def_row,
                     view.Find(TableDefId(s.sid), kCatalogPartition));
    if (!def_row) return Conflict("table '" + cur->table_key + "' left the catalog meanwhile");
    ASSIGN_OR_RETURN(TableDef def, ParseTableDef(*def_row));
    RETURN_NOT_OK(AuthorizeInPublish(view, s.sid, def.name, auth));
    PublishPlan plan;
    TableHead next = *cur;
    if (!s.new_table_def.empty()) {
      ASSIGN_OR_RETURN(def.schema, SchemaFromJson(s.new_table_def));
      def.schema_version++;
      plan.upserts.push_back(TableDefRow(def));
    }
    next.table_version = new_version;
    next.owner_branch = s.owner_branch;
    next.owner_ref = s.fork;
    next.row_count = row_count;
    next.head_commit = view.commit_id();
    next.schema_hash = def.SchemaHash();
    std::string id = TableVersionId(s.sid, s.inc, new_version);
    if (new_version == cur->table_version)
      id += "@" + (s.fork.empty() ? "main" : s.fork);  // handoff
    ManifestRow version = JournalRow(object_type::kTableVersion, std::move(id), next);
    version.table_version = new_version;
    if (!s.owner_branch.empty()) version.table_branch = s.owner_branch;
    version.row_count = row_count;
    json meta = {{"owner_ref", s.fork}, {"operation_id", s.operation_id}};
    if (!recovery.empty()) meta["recovery"] = {{"kind", recovery}, {"for_actor", s.actor}};
    if (reset) {
      meta["reset"] = {{"head_version", reset->head_version},
                       {"undone", {reset->first_undone, reset->last_undone}},
                       {"restore_version", reset->restore_version}};
    }
    version.metadata = meta.dump();
    if (!s.new_table_def.empty()) plan.journal.push_back(TableSchemaRow(def, next));
    plan.journal.push_back(std::move(version));
    plan.upserts.push_back(TableHeadRow(next));
    result.sid = s.sid;
    result.table_version = new_version;
    result.row_count = row_count;
    return plan;
  };
  RETURN_NOT_OK(PublishInto(spec, &result));
  return result;
}

// --- schema operations --------------------------------------------------------------

Result<WriteResult> WorkspaceEngine::CreateTable(const std::string& name, const Schema& schema,
                                                 const std::vector<std::string>& keys,
                                                 const std::string& branch) {
  TableDef def;
  def.name = name;
  def.schema = schema;
  def.keys = keys;
  RETURN_NOT_OK(ValidateTableDef(def));
  ASSIGN_OR_RETURN(Snapshot snap, Current(branch));
  if (snap.Find(name)) return Status::AlreadyExists("table '" + name + "' already exists");
  ASSIGN_OR_RETURN(def.sid, MintIdentity(*store_, root_));
  ASSIGN_OR_RETURN(def.inc, MintIdentity(*store_, root_));
  // The dataset first: a crash before the publish leaves only an unreferenced
  // directory, whose ids are never minted again.
  RETURN_NOT_OK(
      Dataset::Create(store_, TableRoot(def.Location()), schema, options_.manifest.dataset)
          .status());
  WriteResult result;
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = options_.actor;
  spec.direct_change = true;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    RETURN_NOT_OK(NameIsFree(view, name));
    TableHead h;
    h.sid = def.sid;
    h.inc = def.inc;
    h.schema_hash = def.SchemaHash();
    h.head_commit = view.commit_id();
    h.table_key = name;
    h.location = def.Location();
    h.table_version = 1;
    h.row_count = 0;
    PublishPlan plan;
    ManifestRow inc = JournalRow(object_type::kIncarnation, IncarnationId(def.sid, def.inc), h);
    inc.metadata = json{{"schema_hash", h.schema_hash}}.dump();
    ManifestRow version =
        JournalRow(object_type::kTableVersion, TableVersionId(def.sid, def.inc, 1), h);
    version.table_version = 1;
    version.row_count = 0;
    version.metadata = json{{"owner_ref", ""}}.dump();
    plan.journal = {inc, TableSchemaRow(def, h), version};
    plan.upserts = {TableDefRow(def), TableHeadRow(h)};
    return plan;
  };
  RETURN_NOT_OK(PublishInto(spec, &result));
  result.sid = def.sid;
  result.table_version = 1;
  return result;
}

Result<WriteResult> WorkspaceEngine::RenameTable(const std::string& from, const std::string& to,
                                                 const std::string& branch) {
  RETURN_NOT_OK(ValidateTableName(to));
  WriteResult result;
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = options_.actor;
  spec.direct_change = true;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    ASSIGN_OR_RETURN(TableDef def, DefByName(view, from));
    RETURN_NOT_OK(NameIsFree(view, to));
    ASSIGN_OR_RETURN(std::optional<TableHead> head, view.TableHeadOf(def.sid));
    if (!head) return Status::DataLoss("table '" + from + "' has no head");
    def.name = to;
    def.renames++;
    head->table_key = to;
    head->head_commit = view.commit_id();
    PublishPlan plan;
    ManifestRow rename =
        JournalRow(object_type::kTableRename, TableRenameId(def.sid, def.inc, def.renames), *head);
    rename.metadata = json{{"old", from}, {"new", to}}.dump();
    plan.journal = {rename};
    plan.upserts = {TableDefRow(def), TableHeadRow(*head)};
    result.sid = def.sid;
    result.table_version = head->table_version;
    result.row_count = head->row_count.value_or(0);
    return plan;
  };
  RETURN_NOT_OK(PublishInto(spec, &result));
  return result;
}

Result<WriteResult> WorkspaceEngine::DropTable(const std::string& name, const std::string& branch) {
  WriteResult result;
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = options_.actor;
  spec.direct_change = true;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    ASSIGN_OR_RETURN(TableDef def, DefByName(view, name));
    ASSIGN_OR_RETURN(std::optional<TableHead> head, view.TableHeadOf(def.sid));
    if (!head) return Status::DataLoss("table '" + name + "' has no head");
    PublishPlan plan;
    RETURN_NOT_OK(TombstoneRows(view, def, *head, &plan));
    result.sid = def.sid;
    result.table_version = head->table_version + 1;
    return plan;
  };
  RETURN_NOT_OK(PublishInto(spec, &result));
  return result;
}

Status WorkspaceEngine::SetGrant(const std::string& table, const std::string& principal,
                                 std::optional<Role> role, const std::string& branch,
                                 const std::string& actor, const std::string& if_head_commit) {
  if (Status valid = CheckPrincipal(principal); !valid.ok()) {
    return Status::InvalidArgument("the grantee's name: " + valid.message());
  }
  const std::string& by = actor.empty() ? options_.actor : actor;
  PublishSpec spec;
  spec.branch = branch;
  spec.actor = by;
  spec.build = [&](PublishView& view) -> Result<PublishPlan> {
    ASSIGN_OR_RETURN(TableDef def, DefByName(view, table));
    ASSIGN_OR_RETURN(std::optional<TableHead> head, view.TableHeadOf(def.sid));
    if (!head) return Status::DataLoss("table '" + table + "' has no head");
    if (!if_head_commit.empty() && head->head_commit != if_head_commit) {
      return Status::FailedPrecondition("table '" + table + "' changed since the state named (" +
                                        if_head_commit + "): read it again and repeat the change")
          .WithErrorCode(ErrorCode::kPreconditionFailed);
    }
    head->head_commit = view.commit_id();
    PublishPlan plan;
    // The audit row: who changed whose role on which table (when: the commit).
    ManifestRow audit = JournalRow(object_type::kTableGrant,
                                   TableGrantId(def.sid, def.inc, view.commit_id()), *head);
    audit.metadata = json{
        {"principal", principal},
        {"role", role ? json(RoleName(*role)) : json(nullptr)},
        {"actor", by}}.dump();
    plan.journal = {audit};
    plan.upserts = {TableHeadRow(*head)};
    const ManifestRow row = GrantRow({def.sid, principal, role.value_or(Role::kReader)});
    if (role) {
      plan.upserts.push_back(row);
    } else {
      plan.removes = {row};
    }
    return plan;
  };
  return manifest_->Publish(spec).status();
}

Status WorkspaceEngine::SetAdditiveSchema(const std::string& table, bool allowed,
                                          const std::string& actor, const std::string& branch) {
  return SetGrant(table, std::string(kAdditiveSchemaPrincipal),
                  allowed ? std::optional<Role>(Role::kAdmin) : std::nullopt, branch, actor);
}

// --- data -----------------------------------------------------------------------------------

Status WorkspaceEngine::Authorize(const Snapshot& snapshot, const TableState& table,
                                  const std::string& principal, WriteMode mode) const {
  return AuthorizeRole(table.def.name, principal, snapshot.RoleOf(table.def.sid, principal), mode);
}

Status WorkspaceEngine::AuthorizeRole(const std::string& table, const std::string& principal,
                                      std::optional<Role> held, WriteMode mode) const {
  if (principal.empty()) {
    if (options_.system_actor) return Status::OK();
    return Status::PermissionDenied("a write to table '" + table +
                                    "' needs a principal (set LOAM_PRINCIPAL, or authenticate)");
  }
  if (!owner_.empty() && principal == owner_) return Status::OK();
  const Role needed =
      mode == WriteMode::kReplace || mode == WriteMode::kAddColumn ? Role::kAdmin : Role::kWriter;
  if (held && *held >= needed) return Status::OK();
  return Status::PermissionDenied("principal '" + principal + "' needs the " +
                                  std::string(RoleName(needed)) + " grant on table '" + table +
                                  "' (holds " +
                                  (held ? std::string(RoleName(*held)) : std::string("none")) +
                                  "); an admin can grant it with 'loam table grant'");
}

Result<WriteResult> WorkspaceEngine::ForkTable(const std::string& name, const std::string& branch) {
  ASSIGN_OR_RETURN(Snapshot snap, Current(branch));
  const TableState* t = snap.Find(name);
  if (t == nullptr) return Status::NotFound("table '" + name + "' does not exist");
  ASSIGN_OR_RETURN(std::string branch_id, manifest_->BranchId(branch));
  WriteResult result;
  result.sid = t->head.sid;
  result.table_version = t->head.table_version;
  result.manifest_version = snap.manifest_version;
  if (t->head.owner_ref == branch_id) {
    result.changed = false;
    return result;
  }
  ASSIGN_OR_RETURN(RecoveryReport recovered, RecoverIfDue());
  RETURN_NOT_OK(RecoveryBarrier(recovered, branch_id, t->head.sid, name));
  std::optional<ForkReset> reset;
  ASSIGN_OR_RETURN(Dataset fork, OpenFork(t->head, branch_id, &reset));
  Sidecar s;
  s.operation_id = NewUlidString();
  s.branch = branch;
  s.actor = options_.actor;
  s.sid = t->head.sid;
  s.inc = t->head.inc;
  s.fork = branch_id;
  s.owner_branch = branch;
  return PublishTableChange(s, t->head, static_cast<int64_t>(fork.version()),
                            t->head.row_count.value_or(0), NewUlidString(), options_.actor, {}, "",
                            {}, reset);
}

}  // namespace loam
