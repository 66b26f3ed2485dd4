// Api: branches and merges (docs/branches.md). A merge's SQL checks run here,
// through the SQL layer, on the branch's state pinned before the merge; the
// merge then merges exactly that state.
#include <nlohmann/json.hpp>

#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "server/api.h"
#include "server/listing_page.h"
#include "server/merge_json.h"
#include "sql/sql.h"

namespace loam::server {
namespace {

using json = nlohmann::json;

json BranchJson(const service::BranchState& b) {
  json j = {{"name", b.name}, {"version", b.version}, {"protected", b.protected_branch}};
  if (!b.parent.empty()) {
    j["parent"] = b.parent;
    j["parentVersion"] = b.parent_version;
  }
  return j;
}

// A merge body: {"into"?, "checks"?: [{"name", "table", "minRows"?,
// "maxRows"?, "unique"?} | {"name", "sql"}]}.
struct MergeBody {
  std::string into = "main";
  std::vector<MergeCheck> checks;
  std::vector<std::pair<std::string, std::string>> sql_checks;  // name, statement
};

Status ParseCheck(const json& j, size_t i, MergeBody* out) {
  const std::string where = "checks[" + std::to_string(i) + "]";
  if (!j.is_object()) return Status::InvalidArgument(where + " must be an object");
  StrictObject o(j, where);
  MergeCheck c;
  std::string sql;
  RETURN_NOT_OK(o.String("name", &c.name, true));
  RETURN_NOT_OK(o.String("table", &c.table));
  RETURN_NOT_OK(o.String("sql", &sql));
  int64_t min = -1, max = -1;
  RETURN_NOT_OK(o.Int("minRows", &min, 0, INT64_MAX));
  RETURN_NOT_OK(o.Int("maxRows", &max, 0, INT64_MAX));
  RETURN_NOT_OK(o.Strings("unique", &c.unique_columns));
  RETURN_NOT_OK(o.Finish());
  if (c.name.empty()) return Status::InvalidArgument(where + ": \"name\" must not be empty");
  if (!sql.empty()) {
    if (!c.table.empty() || min >= 0 || max >= 0 || !c.unique_columns.empty()) {
      return Status::InvalidArgument(where + ": an \"sql\" check takes only a name");
    }
    out->sql_checks.emplace_back(c.name, sql);
    return Status::OK();
  }
  if (c.table.empty()) return Status::InvalidArgument(where + ": \"table\" or \"sql\" is required");
  if (min < 0 && max < 0 && c.unique_columns.empty()) {
    return Status::InvalidArgument(where + ": name \"minRows\", \"maxRows\" or \"unique\"");
  }
  if (min >= 0) c.min_rows = min;
  if (max >= 0) c.max_rows = max;
  if (c.min_rows && c.max_rows && *c.min_rows > *c.max_rows) {
    return Status::InvalidArgument(where + ": \"minRows\" is above \"maxRows\"");
  }
  out->checks.push_back(std::move(c));
  return Status::OK();
}

Result<MergeBody> ParseMergeBody(const std::string& body) {
  MergeBody out;
  if (body.empty()) return out;
  ASSIGN_OR_RETURN(json j, ParseJsonObject(body, "merge request"));
  StrictObject o(j, "merge request");
  RETURN_NOT_OK(o.String("into", &out.into));
  const json* checks = o.Field("checks");
  RETURN_NOT_OK(o.Finish());
  if (checks == nullptr) return out;
  if (!checks->is_array() || checks->size() > 100) {
    return o.Bad("checks", "an array of at most 100 checks");
  }
  for (size_t i = 0; i < checks->size(); ++i) RETURN_NOT_OK(ParseCheck((*checks)[i], i, &out));
  return out;
}

}  // namespace

Response Api::ListBranches(Call& c) {
  Result<std::vector<service::BranchState>> branches = svc_->ListBranches(c.ctx);
  if (!branches.ok()) return Problem(branches.status());
  Result<json> page = ListingPage(
      std::move(*branches), c.target, "branches",
      [](const service::BranchState& b) { return b.name; }, BranchJson);
  if (!page.ok()) return Problem(page.status());
  return JsonResponse(200, *page);
}

Response Api::GetBranch(Call& c) {
  Result<service::BranchState> b = svc_->DescribeBranch(c.ctx, c.params["name"]);
  if (!b.ok()) return Problem(b.status());
  return JsonResponse(200, BranchJson(*b));
}

Response Api::CreateBranch(Call& c) {
  Result<json> j = ParseJsonObject(c.body, "branch");
  if (!j.ok()) return Problem(j.status());
  StrictObject o(*j, "branch");
  std::string name, from = "main";
  int64_t version = -1;
  Status s = o.String("name", &name, true);
  if (s.ok()) s = o.String("from", &from);
  if (s.ok()) s = o.Int("version", &version, 1, INT64_MAX);
  if (s.ok()) s = o.Finish();
  if (!s.ok()) return Problem(s);
  Result<service::BranchState> b = svc_->CreateBranch(
      c.ctx, name, from, version > 0 ? std::optional<uint64_t>(version) : std::nullopt);
  if (!b.ok()) return Problem(b.status());
  Response r = JsonResponse(201, BranchJson(*b));
  r.set(http::field::location, "/v1/branches/" + b->name);
  return r;
}

Response Api::PatchBranch(Call& c) {
  Result<json> j = ParseJsonObject(c.body, "branch patch");
  if (!j.ok()) return Problem(j.status());
  StrictObject o(*j, "branch patch");
  bool on = false;
  Status s = o.Bool("protected", &on);
  if (s.ok()) s = o.Finish();
  if (s.ok() && !j->contains("protected")) s = o.Bad("protected", "given (true or false)");
  if (!s.ok()) return Problem(s);
  Result<service::BranchState> b = svc_->ProtectBranch(c.ctx, c.params["name"], on);
  if (!b.ok()) return Problem(b.status());
  return JsonResponse(200, BranchJson(*b));
}

Response Api::DeleteBranch(Call& c) {
  Status s = svc_->DeleteBranch(c.ctx, c.params["name"]);
  return s.ok() ? EmptyResponse(204) : Problem(s);
}

Response Api::MergeBranch(Call& c) {
  const std::string& branch = c.params["name"];
  Result<MergeBody> body = ParseMergeBody(c.body);
  if (!body.ok()) return Problem(body.status());
  Result<std::string> key = OneHeader(c.header, "Idempotency-Key");
  if (!key.ok()) return Problem(key.status());
  if (!key->empty()) {  // a retry is answered before the checks run again
    Result<std::optional<MergeResult>> known = svc_->FindMerge(c.ctx, branch, *key, body->into);
    if (!known.ok()) return Problem(known.status());
    if (*known) return JsonResponse(200, MergeJson(branch, body->into, **known));
  }
  MergeRequest req;
  req.source = branch;
  req.into = body->into;
  req.merge_id = *key;
  req.checks = std::move(body->checks);
  Result<uint64_t> pinned = svc_->BranchVersion(c.ctx, branch);
  if (!pinned.ok()) return Problem(pinned.status());
  req.source_version = *pinned;
  if (!body->sql_checks.empty() && options_.workspace == nullptr) {
    return Problem(Status::Unimplemented("this server was started without SQL: no sql checks"));
  }
  for (const auto& [name, statement] : body->sql_checks) {
    sql::SqlOptions at;
    at.at.branch = branch;
    at.at.version = *pinned;
    at.principal = c.ctx.principal;
    at.time_budget_millis = options_.sql.time_budget_millis;
    at.max_value_bytes = options_.sql.max_value_bytes;
    Status s = sql::ExpectNoRows(*options_.workspace, name, statement, at);
    if (!s.ok()) return Problem(s);
  }
  Result<MergeResult> merged = svc_->MergeBranch(c.ctx, std::move(req));
  if (!merged.ok()) return Problem(merged.status());
  return JsonResponse(200, MergeJson(branch, body->into, *merged));
}

// The merge id names the revert: a retry answers the first (alreadyReverted).
Response Api::RevertMerge(Call& c) {
  std::string into = "main";
  if (!c.body.empty()) {
    Result<json> j = ParseJsonObject(c.body, "merge revert");
    if (!j.ok()) return Problem(j.status());
    StrictObject o(*j, "merge revert");
    Status s = o.String("into", &into);
    if (s.ok()) s = o.Finish();
    if (!s.ok()) return Problem(s);
  }
  Result<MergeRevertResult> r = svc_->RevertMerge(c.ctx, c.params["id"], into);
  if (!r.ok()) return Problem(r.status());
  return JsonResponse(200, MergeRevertJson(into, *r));
}

}  // namespace loam::server
