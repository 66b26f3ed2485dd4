// The write protocol of one table write (docs/architecture.md, "The life of
// one write"): resolve, preconditions, commit the table, publish.

#include "common/status_macros.h"
#include "common/ulid.h"
#include "engine/workspace.h"

namespace loam {

namespace {

// The table definition an additive append publishes: the table's schema and
// then `req.add_columns`, nullable. Refused unless an admin allowed it.
Result<std::string> AdditiveSchema(const Snapshot& snap, const TableState& t,
                                   const WriteRequest& req) {
  if (req.mode != WriteMode::kAppend || !req.staged_rows) {
    return Status::InvalidArgument("columns are added only by an append of staged rows");
  }
  if (!snap.AllowsAdditiveSchema(t.def.sid)) {
    return Status::PermissionDenied("table '" + t.def.name +
                                    "' does not allow additive schema changes; an admin can allow "
                                    "them");
  }
  Schema next = t.def.schema;
  for (Field f : req.add_columns) {
    if (next.IndexOf(f.name) >= 0) {
      return Status::Conflict("column '" + f.name + "' is already in table '" + t.def.name + "'")
          .WithErrorCode(ErrorCode::kSchemaConflict);
    }
    f.nullable = true;
    next.fields.push_back(std::move(f));
  }
  RETURN_NOT_OK(ValidateColumns(next, t.def.name));
  RETURN_NOT_OK(next.Validate());
  return SchemaToJson(next);
}

// `req`'s change applied to `base`, committed as its next version.
Result<Dataset> ApplyWrite(Dataset& base, const WriteRequest& req, const TableDef& def,
                           const MergePlan* plan, const CommitOptions& opts, WriteResult* result) {
  switch (req.mode) {
    case WriteMode::kAppend:
      return req.staged_rows ? base.AppendStaged(req.staged, opts, req.add_columns)
                             : base.Append(req.rows, opts);
    case WriteMode::kUpsert: {
      ASSIGN_OR_RETURN(std::vector<std::string> keys, UpsertKeys(def, req.keys));
      return req.staged_rows ? base.MergeInsertStaged(keys, req.staged, &result->merge, opts, plan)
                             : base.MergeInsert(keys, req.rows, &result->merge, opts);
    }
    case WriteMode::kReplace:
      return req.staged_rows ? base.OverwriteStaged(req.staged, opts)
                             : base.Overwrite(req.rows, std::nullopt, opts);
    case WriteMode::kDelete:
      return req.row_addresses ? base.DeleteRows(*req.row_addresses, opts)
                               : base.Delete(req.where, opts);
    case WriteMode::kReplaceRows:
      if (!req.row_addresses) return Status::InvalidArgument("replace rows needs row addresses");
      return base.ReplaceRowsStaged(*req.row_addresses, req.staged, opts);
    case WriteMode::kCompact:
      return req.compaction_plan
                 ? base.CommitCompaction(*req.compaction_plan, &result->compacted, opts)
                 : base.Compact(req.compaction, &result->compacted, opts);
    case WriteMode::kRestore:
      if (!req.restore_version || *req.restore_version < 1) {
        return Status::InvalidArgument("restore needs an earlier table version");
      }
      return base.Restore(static_cast<uint64_t>(*req.restore_version), opts);
    case WriteMode::kAddColumn: {
      Field f = *req.new_column;
      f.nullable = true;
      return base.AddColumn(f, opts);
    }
  }
  return Status::InvalidArgument("unknown write mode");
}

}  // namespace

Result<WriteResult> WorkspaceEngine::WriteOnce(const WriteRequest& req, bool* busy) {
  WriteTarget target;
  RETURN_NOT_OK(ResolveWrite(req, &target));
  MergePlan carried;
  ASSIGN_OR_RETURN(const MergePlan* plan, CheckWritePreconditions(req, target, &carried));
  const TableState& t = *target.table;
  ASSIGN_OR_RETURN(std::string branch_id, manifest_->BranchId(req.branch));
  RETURN_NOT_OK(RecoveryBarrier(target.recovered, branch_id, t.head.sid, t.def.name));
  ASSIGN_OR_RETURN(Sidecar s, PrepareSidecar(req, target, branch_id));
  const std::string key = SidecarKey(root_, s.operation_id);
  ASSIGN_OR_RETURN(const SidecarLeases::Held held, leases_->PutAndHold(key, &s));
  RETURN_NOT_OK(Fail(failpoint::kAfterSidecar));
  TableCommit commit;
  bool unknown = false;
  Result<Dataset> committed = CommitTable(req, t, s, plan, &commit, &unknown, busy);
  if (unknown) return committed.status();  // the sidecar stays: recovery decides
  return PublishWrite(req, target, s, key, std::move(committed), commit, busy);
}

Status WorkspaceEngine::ResolveWrite(const WriteRequest& req, WriteTarget* out) {
  ASSIGN_OR_RETURN(out->recovered, RecoverIfDue());
  ASSIGN_OR_RETURN(ManifestVersion latest, manifest_->CurrentForWriter(req.branch));
  ASSIGN_OR_RETURN(out->snap, SnapshotOf(latest));
  const Snapshot& snap = out->snap;
  out->table = req.table_sid ? snap.FindSid(*req.table_sid) : snap.Find(req.table);
  if (out->table == nullptr) {
    return Status::NotFound("table '" + req.table + "'" +
                            (req.table_sid ? " (id " + std::to_string(*req.table_sid) + ")" : "") +
                            " does not exist on branch '" +
                            (req.branch.empty() ? "main" : req.branch) + "'");
  }
  // A run that already committed is reported as such before anything else
  // (its table has moved on since, by its own commit).
  if (!req.run_id.empty()) {
    ASSIGN_OR_RETURN(bool done,
                     manifest_->RunCommitted(req.branch, req.run_id, nullptr, req.journal_floor));
    if (done) {
      return Status::AlreadyExists("run " + req.run_id + " already committed")
          .WithErrorCode(ErrorCode::kRunAlreadyCommitted);
    }
  }
  return Status::OK();
}

Result<const MergePlan*> WorkspaceEngine::CheckWritePreconditions(const WriteRequest& req,
                                                                  const WriteTarget& target,
                                                                  MergePlan* carried) const {
  const TableState& t = *target.table;
  RETURN_NOT_OK(Authorize(target.snap, t, req.principal, req.authorize_as.value_or(req.mode)));
  if (req.expected_schema_version && *req.expected_schema_version != t.def.schema_version) {
    return Status::FailedPrecondition("table '" + req.table + "' changed from schema version " +
                                      std::to_string(*req.expected_schema_version) + " to " +
                                      std::to_string(t.def.schema_version) + " since validation")
        .WithErrorCode(ErrorCode::kSchemaConflict);
  }
  // After the schema check: a schema change also moves the version, and is
  // the reason a retry cannot fix.
  if (req.expected_version && *req.expected_version != t.head.table_version) {
    if (req.mode == WriteMode::kUpsert) {
      RETURN_NOT_OK(CarryMergePlan(target.snap, t, req, carried));
      return carried;
    }
    RETURN_NOT_OK(KeysStillAbsent(target.snap, t, req));
  }
  return req.merge_plan;
}

Result<Sidecar> WorkspaceEngine::PrepareSidecar(const WriteRequest& req, const WriteTarget& target,
                                                const std::string& branch_id) const {
  const TableState& t = *target.table;
  Sidecar s = NewSidecar(req, t.head, branch_id);
  if (req.mode == WriteMode::kAddColumn) {
    if (!req.new_column) return Status::InvalidArgument("add column needs a column");
    Schema next = t.def.schema;
    next.fields.push_back(*req.new_column);
    next.fields.back().nullable = true;
    RETURN_NOT_OK(ValidateColumns(next, t.def.name));
    s.new_table_def = SchemaToJson(next);
  }
  if (!req.add_columns.empty()) {
    ASSIGN_OR_RETURN(s.new_table_def, AdditiveSchema(target.snap, t, req));
  }
  s.planned_txn = NewUlidString();
  return s;
}

Result<Dataset> WorkspaceEngine::CommitTable(const WriteRequest& req, const TableState& t,
                                             const Sidecar& s, const MergePlan* plan,
                                             TableCommit* out, bool* unknown, bool* busy) {
  const TableHead& head = t.head;
  out->base_version = head.table_version;
  Result<Dataset> committed = [&]() -> Result<Dataset> {
    // A remembered base may be stale: only a write that tries again may start there.
    Result<Dataset> opened = OpenFork(head, s.fork, &out->reset, CommitsOnAnyVersion(req));
    if (!opened.ok()) {
      *busy = opened.status().Is(ErrorCode::kConflict);  // another commit in progress
      return opened.status();
    }
    Dataset base = *std::move(opened);
    out->base_version = static_cast<int64_t>(base.version());
    out->own_commit = true;  // past OpenFork: a failure may be this write's commit
    CommitOptions opts;
    opts.expected_version = base.version();
    opts.txn_id = s.planned_txn;
    opts.trust_snapshot = true;  // just opened at its latest version
    return ApplyWrite(base, req, t.def, plan, opts, &out->result);
  }();
  committed = LookAgainAtUnanswered(
      head, s, out->own_commit ? std::optional(out->base_version) : std::nullopt,
      std::move(committed), unknown);
  if (*unknown) return committed;  // as it is: the caller keeps the sidecar
  if (committed.status().IsAborted()) {
    *busy = true;
    committed_forks_.Forget(TableRoot(head.location), s.fork);
    return Status::Conflict("another writer committed to table '" + req.table + "' first (" +
                            committed.status().message() + ")");
  }
  return committed;
}

Result<WriteResult> WorkspaceEngine::PublishWrite(const WriteRequest& req,
                                                  const WriteTarget& target, const Sidecar& s,
                                                  const std::string& key, Result<Dataset> committed,
                                                  const TableCommit& commit, bool* busy) {
  const TableHead& head = target.table->head;
  WriteResult result = commit.result;
  if (!committed.ok() || static_cast<int64_t>(committed->version()) <= commit.base_version) {
    // No table effect: the sidecar has nothing to recover. A write tries
    // again only once its sidecar is gone.
    Status deleted = store_->DeleteRelaxed(key);
    if (!deleted.ok()) {
      *busy = false;
      return deleted;
    }
    if (!committed.ok()) return committed.status();
    result.changed = false;
    result.sid = head.sid;
    result.table_version = head.table_version;
    result.row_count = head.row_count.value_or(0);
    result.manifest_version = target.snap.manifest_version;
    return result;
  }
  RETURN_NOT_OK(Fail(failpoint::kAfterTableCommit));
  const WriteMode auth_mode = req.authorize_as.value_or(req.mode);
  std::vector<CommittedRun> runs = RunsOf(s, *committed);
  if (runs.size() == 1 && runs[0].run_id == req.run_id) runs[0].journal_floor = req.journal_floor;
  Result<WriteResult> published = PublishTableChange(
      s, head, static_cast<int64_t>(committed->version()),
      static_cast<int64_t>(committed->CountRows()), s.commit_id, options_.actor, runs, "",
      {&req.principal,
       auth_mode,
       !req.add_columns.empty(),
       &req.additive_admin,
       {},
       req.mode != WriteMode::kCompact},
      commit.reset);
  Result<WriteResult> settled = SettlePublish(s, key, *committed, std::move(published), result);
  SettleFork(head, s.fork, settled, *committed);
  return settled;
}

}  // namespace loam
