// Service: tables (create, list, describe, rows, history, grants) and the
// run listing, each authorised for the calling principal.
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/principal.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "common/ulid.h"
#include "ingest/where_clause.h"
#include "service/run_listing.h"
#include "service/service.h"

namespace loam::service {

using ingest::RunRecord;
using nlohmann::json;

constexpr int kMaxRunsExamined = 1000;

Result<TableDocument> ParseTableDocument(std::string_view text) {
  std::string problem;
  json j = ParseJson(text, &problem);
  if (j.is_discarded()) return Status::InvalidArgument("table: " + problem);
  if (!j.is_object()) {
    return Status::InvalidArgument(
        R"(a table is a JSON object: {"name":"t","columns":[{"name":"id","type":"int64","nullable":false}],"keys":["id"]})");
  }
  StrictObject o(j, "table");
  TableDocument doc;
  RETURN_NOT_OK(o.String("name", &doc.name, /*required=*/true));
  const json* columns = o.Field("columns");
  if (columns == nullptr || !columns->is_array() || columns->empty()) {
    return o.Bad("columns", "a non-empty array of {\"name\",\"type\",\"nullable\"}");
  }
  // Each column as strictly as the document: a misspelt "nullable" must not
  // make a nullable column.
  for (size_t i = 0; i < columns->size(); ++i) {
    const json& c = (*columns)[i];
    if (!c.is_object()) continue;  // SchemaFromJson names the problem
    StrictObject co(c, "table column " + std::to_string(i + 1));
    std::string ignored;
    RETURN_NOT_OK(co.String("name", &ignored));
    RETURN_NOT_OK(co.String("type", &ignored));
    bool nullable = true;
    RETURN_NOT_OK(co.Bool("nullable", &nullable));
    RETURN_NOT_OK(co.Finish());
  }
  RETURN_NOT_OK(o.Strings("keys", &doc.keys));
  RETURN_NOT_OK(o.Finish());
  ASSIGN_OR_RETURN(doc.schema, SchemaFromJson(columns->dump()));
  return doc;
}

namespace {

bool CanSeeGrants(const WorkspaceEngine& ws, const Snapshot& snap, int64_t sid,
                  const std::string& principal) {
  return principal == ws.owner() || snap.RoleOf(sid, principal) == Role::kAdmin;
}

TableInfo Describe(const WorkspaceEngine& ws, const Snapshot& snap, const TableState& t,
                   const std::string& principal) {
  TableInfo info;
  info.name = t.def.name;
  info.table_id = t.def.sid;
  info.schema = t.def.schema;
  info.keys = t.def.keys;
  info.schema_version = t.def.schema_version;
  info.table_version = t.head.table_version;
  info.row_count = t.head.row_count.value_or(0);
  info.manifest_version = snap.manifest_version;
  info.head_commit = t.head.head_commit;
  info.additive_schema = snap.AllowsAdditiveSchema(t.def.sid);
  if (CanSeeGrants(ws, snap, t.def.sid, principal)) {
    for (const Grant& g : snap.grants) {
      if (g.sid == t.def.sid && g.principal != kAdditiveSchemaPrincipal) info.grants.push_back(g);
    }
  }
  return info;
}

}  // namespace

Result<const TableState*> Service::ReadableTable(const Snapshot& snap, const std::string& name,
                                                 const std::string& principal) const {
  const TableState* t = snap.Find(name);
  if (t == nullptr) return Status::NotFound("table '" + name + "' does not exist");
  if (principal != ws_->owner() && !snap.RoleOf(t->def.sid, principal)) {
    return Status::PermissionDenied("principal '" + principal + "' holds no grant on table '" +
                                    name + "'");
  }
  return t;
}

Result<WriteResult> Service::CreateTable(const CallContext& ctx, std::string_view doc_json) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (ctx.principal != ws_->owner()) {
    return Status::PermissionDenied("only the workspace owner creates tables; '" + ctx.principal +
                                    "' is not the owner");
  }
  ASSIGN_OR_RETURN(TableDocument doc, ParseTableDocument(doc_json));
  return ws_->CreateTable(doc.name, doc.schema, doc.keys);
}

Result<std::vector<TableInfo>> Service::ListTables(const CallContext& ctx) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  std::vector<TableInfo> out;
  for (const auto& [name, t] : snap.tables) {
    if (ctx.principal == ws_->owner() || snap.RoleOf(t.def.sid, ctx.principal)) {
      out.push_back(Describe(*ws_, snap, t, ctx.principal));
    }
  }
  return out;
}

Result<TableInfo> Service::DescribeTable(const CallContext& ctx, const std::string& name) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  ASSIGN_OR_RETURN(const TableState* t, ReadableTable(snap, name, ctx.principal));
  return Describe(*ws_, snap, *t, ctx.principal);
}

Status Service::ReadRows(const CallContext& ctx, const std::string& name, const RowQuery& query,
                         const std::function<Status(std::string_view)>& sink) {
  RETURN_NOT_OK(CheckContext(ctx));
  // Grants are those of now on the branch, whatever version is read.
  const std::string branch = EngineBranchName(query.branch);
  ASSIGN_OR_RETURN(Snapshot now, ws_->Current(branch));
  ASSIGN_OR_RETURN(const TableState* current, ReadableTable(now, name, ctx.principal));
  const int64_t sid = current->def.sid;
  const int64_t inc = current->def.inc;
  Snapshot snap = std::move(now);
  if (query.manifest_version >= 0) {
    ASSIGN_OR_RETURN(snap, ws_->SnapshotAt(branch, static_cast<uint64_t>(query.manifest_version)));
    // The grant is on this table: the name may have meant another one then
    // (renamed away, or dropped and created again).
    const TableState* then = snap.Find(name);
    if (then == nullptr || then->def.sid != sid || then->def.inc != inc) {
      return Status::NotFound("table '" + name + "' did not exist at manifest version " +
                              std::to_string(query.manifest_version));
    }
  }
  ASSIGN_OR_RETURN(Dataset table, ws_->OpenTable(snap, name));
  const Schema& schema = snap.Find(name)->def.schema;
  ScanSpec spec;
  if (!query.where.empty()) {
    ASSIGN_OR_RETURN(Predicate p, ingest::ParseWhere(schema, query.where));
    spec.where.push_back(std::move(p));
  }
  int64_t left = query.limit < 0 ? INT64_MAX : query.limit;
  std::string text;
  bool stopped = false;  // the limit was reached: the scan ends early
  Status s = table.ScanEach(spec, [&](const RecordBatch& b) -> Status {
    text.clear();
    for (int64_t r = 0; r < b.num_rows() && left > 0; ++r, --left) {
      ingest::AppendJsonLine(schema, b, r, &text);
    }
    RETURN_NOT_OK(sink(text));
    if (left > 0) return Status::OK();
    stopped = true;
    return Status::Aborted("row limit reached");
  });
  return stopped ? Status::OK() : s;
}

Result<std::vector<TableHistoryEntry>> Service::TableHistory(const CallContext& ctx,
                                                             const std::string& name) {
  RETURN_NOT_OK(CheckContext(ctx));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  ASSIGN_OR_RETURN(const TableState* t, ReadableTable(snap, name, ctx.principal));
  ASSIGN_OR_RETURN(std::vector<TableHistoryEntry> all, ws_->History(name));
  if (CanSeeGrants(*ws_, snap, t->def.sid, ctx.principal)) return all;
  // Who holds which role is for the owner and admins (as in DescribeTable).
  std::vector<TableHistoryEntry> out;
  for (TableHistoryEntry& e : all) {
    if (e.event != "table_grant") out.push_back(std::move(e));
  }
  return out;
}

Status Service::SetTableGrant(const CallContext& ctx, const std::string& table,
                              const std::string& principal, std::optional<Role> role,
                              const std::string& if_head_commit) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (Status valid = CheckPrincipal(principal); !valid.ok()) {
    return Status::InvalidArgument("the grantee's name: " + valid.message());
  }
  if (principal.rfind("loam:", 0) == 0) {
    return Status::InvalidArgument("principals starting with 'loam:' are reserved for Loam itself");
  }
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  ASSIGN_OR_RETURN(const TableState* t, ReadableTable(snap, table, ctx.principal));
  if (!CanSeeGrants(*ws_, snap, t->def.sid, ctx.principal)) {
    return Status::PermissionDenied("principal '" + ctx.principal + "' needs the admin grant on '" +
                                    table + "' to change its grants");
  }
  return ws_->SetGrant(table, principal, role, /*branch=*/"", ctx.principal, if_head_commit);
}

Result<RunPage> Service::ListRuns(const CallContext& ctx, const RunFilter& filter) {
  RETURN_NOT_OK(CheckContext(ctx));
  if (filter.limit < 1 || filter.limit > 1000) {
    return Status::InvalidArgument("limit must be from 1 to 1000");
  }
  if (!filter.cursor.empty()) {
    // Canonical only: another spelling of an id sorts elsewhere among keys.
    Result<Ulid> id = Ulid::Parse(filter.cursor);
    if (!id.ok() || id->ToString() != filter.cursor) {
      return Status::InvalidArgument("cursor is not one this server gave");
    }
  }
  std::optional<ingest::RunState> state;
  if (!filter.state.empty()) {
    ASSIGN_OR_RETURN(state, ParseRunState(filter.state));
  }
  RunPage page;
  if (!filter.idempotency_key.empty()) {
    ASSIGN_OR_RETURN(auto r, requests_.Find(ctx.principal, filter.idempotency_key));
    if (!r || !filter.cursor.empty()) return page;  // one run at most: no second page
    Result<RunStatus> run = GetRun(ctx, r->run_id);
    if (run.status().IsNotFound()) return page;  // reserved; its run is not created yet
    RETURN_NOT_OK(run.status());
    ASSIGN_OR_RETURN(Ulid id, Ulid::Parse(r->run_id));
    const auto created = static_cast<int64_t>(id.millis());
    if ((filter.pipeline_id.empty() || run->run.pipeline_id == filter.pipeline_id) &&
        (filter.table.empty() || run->run.table == filter.table) &&
        (filter.state.empty() || run->run.state == filter.state) &&
        (filter.since_ms < 0 || created >= filter.since_ms) &&
        (filter.until_ms < 0 || created < filter.until_ms)) {
      page.runs.push_back(std::move(run->run));
    }
    return page;
  }
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  int64_t table_sid = 0;  // 0 = any table
  if (!filter.table.empty()) {
    ASSIGN_OR_RETURN(const TableState* t, ReadableTable(snap, filter.table, ctx.principal));
    table_sid = t->def.sid;
  }
  const std::string prefix = (ws_->root().empty() ? "" : ws_->root() + "/") + "_control/runs/";
  RunIdRange range{.since_ms = filter.since_ms, .until_ms = filter.until_ms};
  (filter.newest_first ? range.before : range.after) = filter.cursor;
  RunIdScanner scan(ws_->store().get(), prefix, range, filter.newest_first,
                    options_.clock->NowMillis());
  // At most kMaxRunsExamined records read per call: a sparse filter returns
  // fewer runs and a cursor rather than reading the whole history.
  int examined = 0;
  for (std::string last;; ++examined) {
    ASSIGN_OR_RETURN(std::optional<std::string> id, scan.Next());
    if (!id) break;
    if (static_cast<int>(page.runs.size()) == filter.limit || examined == kMaxRunsExamined) {
      page.next_cursor = last;  // more follow
      break;
    }
    last = *id;
    Result<RunRecord> rec = loader_->runs().Get(*id);
    if (rec.status().IsNotFound()) continue;
    RETURN_NOT_OK(rec.status());
    if (!filter.pipeline_id.empty() && rec->pipeline_id != filter.pipeline_id) continue;
    if (table_sid != 0 && rec->table_sid != table_sid) continue;
    if (state && rec->state != *state) continue;
    ASSIGN_OR_RETURN(ingest::RunRequest req, ingest::RunRequest::FromJson(rec->request));
    if (req.principal != ctx.principal && ctx.principal != ws_->owner() &&
        !snap.RoleOf(rec->table_sid, ctx.principal)) {
      continue;
    }
    page.runs.push_back(ViewOf(*rec));
  }
  return page;
}

}  // namespace loam::service
