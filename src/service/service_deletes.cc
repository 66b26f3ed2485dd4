// Deletes through the service (docs/service.md, "Deleting rows"): a delete
// is a run like a load's, checked when it is asked for, queued, and carried
// out by a worker (ingest/row_deletes.h) as one commit. It has no pipeline;
// its keys, if it names rows by key, travel in its record as JSON Lines.
#include <limits>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "common/ulid.h"
#include "ingest/row_deletes.h"
#include "service/service.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

// The body as the run's request: filters, or keys (as JSON Lines) and
// their columns; the error policy and expected version.
// A JSON number keeps about 15 significant digits here (a double): a key
// written with more could name another value, so it is refused.
Status CheckKeyNumbers(const json& key) {
  for (const auto& [column, v] : key.items()) {
    if (!v.is_number_float()) continue;
    std::string digits;
    for (char c : v.dump()) {
      if (c == 'e' || c == 'E') break;
      if (c >= '0' && c <= '9' && !(digits.empty() && c == '0')) digits += c;
    }
    if (digits.size() > 15) {
      return Status::InvalidArgument("delete: key value " + v.dump() + " of column '" + column +
                                     "' has more significant digits than a JSON number keeps "
                                     "here (15); delete it with loam delete --keys instead");
    }
  }
  return Status::OK();
}

Result<ingest::RunRequest> ParseDeleteBody(std::string_view text, std::string* keys_jsonl) {
  ASSIGN_OR_RETURN(const json j, ParseJsonObject(text, "delete"));
  StrictObject o(j, "delete");
  ingest::RunRequest r;
  r.mode = ingest::LoadMode::kDelete;
  RETURN_NOT_OK(o.Strings("where", &r.where));
  if (const json* keys = o.Field("keys"); keys != nullptr) {
    if (!keys->is_array() || keys->empty()) return o.Bad("keys", "an array of key objects");
    for (const json& k : *keys) {
      if (!k.is_object()) return o.Bad("keys", "an array of key objects");
      RETURN_NOT_OK(CheckKeyNumbers(k));
      *keys_jsonl += k.dump(-1, ' ', false, json::error_handler_t::strict) + "\n";
    }
  }
  RETURN_NOT_OK(o.Strings("keyColumns", &r.keys));
  if (r.where.empty() == keys_jsonl->empty()) {
    return Status::InvalidArgument(
        "a delete names its rows by \"where\" filters or by \"keys\" (one of the two)");
  }
  if (!r.keys.empty() && keys_jsonl->empty()) return o.Bad("keyColumns", "absent without keys");
  std::string policy = "failRun";
  RETURN_NOT_OK(o.String("errorPolicy", &policy));
  if (policy != "failRun" && policy != "validationOnly") {
    return o.Bad("errorPolicy", "\"failRun\" or \"validationOnly\" (a delete is all or nothing)");
  }
  ASSIGN_OR_RETURN(r.error_policy, ingest::ParseErrorPolicy(policy));
  if (o.Field("expectedTableVersion") != nullptr) {
    int64_t v = 0;
    RETURN_NOT_OK(o.Int("expectedTableVersion", &v, 0, std::numeric_limits<int64_t>::max()));
    r.expected_table_version = v;
  }
  RETURN_NOT_OK(o.Finish());
  if (!keys_jsonl->empty()) {
    r.files = {std::string(ingest::kRecordInputFile)};
    r.file_names = {"keys"};
    r.format = ingest::InputFormat::kJsonLines;
  }
  return r;
}

}  // namespace

Result<Service::DeleteRun> Service::CheckDelete(const CallContext& ctx, const std::string& table,
                                                std::string_view body) const {
  DeleteRun d;
  ASSIGN_OR_RETURN(d.request, ParseDeleteBody(body, &d.keys_jsonl));
  ASSIGN_OR_RETURN(Snapshot snap, ws_->Current());
  const TableState* t = snap.Find(table);
  if (t == nullptr) return Status::NotFound("table '" + table + "' does not exist");
  RETURN_NOT_OK(ws_->Authorize(snap, *t, ctx.principal, WriteMode::kDelete));
  ingest::RunRequest& r = d.request;
  r.table = t->def.name;
  r.principal = ctx.principal;
  RETURN_NOT_OK(r.where.empty() ? ingest::DeleteKeyColumns(r, t->def).status()
                                : ingest::DeleteFilters(r, t->def.schema).status());
  // Refused now when already stale; the commit checks it again.
  if (r.expected_table_version && *r.expected_table_version != t->head.table_version) {
    return Status::FailedPrecondition(
        "the table is at version " + std::to_string(t->head.table_version) + ", not the expected " +
        std::to_string(*r.expected_table_version));
  }
  d.table_sid = t->def.sid;
  return d;
}

Result<Submission> Service::SubmitDelete(const CallContext& ctx, const std::string& table,
                                         std::string_view idempotency_key, std::string_view body) {
  RETURN_NOT_OK(CheckContext(ctx));
  RETURN_NOT_OK(CheckIdempotencyKey(idempotency_key));
  const std::string key(idempotency_key);
  const std::string fingerprint = Sha256Hex(std::string(body) + '\0' + table + '\0' + "delete");
  ASSIGN_OR_RETURN(std::optional<RequestRecord> known, requests_.Find(ctx.principal, key));
  const int64_t now = options_.clock->NowMicros();
  if (known) {
    bool expired = false;
    ASSIGN_OR_RETURN(std::optional<Submission> answered,
                     AnswerKnownKey(*known, fingerprint, now, &expired));
    if (answered) return *answered;
    if (expired) return SubmitDelete(ctx, table, idempotency_key, body);
    // Its creator stopped half way: finish the creation under the same run
    // id, or, refused now, free the key for a corrected request.
    Result<DeleteRun> d = CheckDelete(ctx, table, body);
    if (!d.ok()) {
      if (!d.status().IsUnavailable()) {
        NoteCleanupFailure("releasing an idempotency reservation", requests_.Delete(*known));
      }
      return d.status();
    }
    return CreateDeleteRun(*known, *d, /*resuming=*/true);
  }
  ASSIGN_OR_RETURN(DeleteRun d, CheckDelete(ctx, table, body));
  const std::string run_id = NewUlidString();
  RETURN_NOT_OK(AdmitNew(ctx, key, "", static_cast<int64_t>(d.keys_jsonl.size()),
                         options_.limits.max_concurrent_runs_per_pipeline, run_id));
  struct Settler {
    Service* service;
    const std::string& run_id;
    ~Settler() { service->Settle(run_id); }
  } settle{this, run_id};
  RequestRecord reservation{
      key,    ctx.principal, fingerprint,
      run_id, now,           now + options_.limits.idempotency_retention_seconds * 1'000'000};
  Status reserved = requests_.Reserve(reservation);
  if (reserved.IsAlreadyExists()) return SubmitDelete(ctx, table, idempotency_key, body);
  RETURN_NOT_OK(reserved);
  return CreateDeleteRun(reservation, d, /*resuming=*/false);
}

Result<Submission> Service::CreateDeleteRun(const RequestRecord& reservation, const DeleteRun& d,
                                            bool resuming) {
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterReserve));
  ingest::RunRecord run;
  run.id = reservation.run_id;
  const ingest::RunRequest& request = d.request;
  run.request = request.ToJson();
  run.table = request.table;
  run.table_sid = d.table_sid;
  run.created_micros = options_.clock->NowMicros();
  run.validation_only = request.error_policy == ingest::ErrorPolicy::kValidationOnly;
  run.input_text = d.keys_jsonl;
  run.input_bytes = static_cast<int64_t>(d.keys_jsonl.size());
  RETURN_NOT_OK(queue_.Enqueue(run.id, "", run.input_bytes));
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterEnqueue));
  std::string etag;
  Status created = loader_->runs().Create(run, &etag);
  if (created.IsAlreadyExists()) return Replay(reservation, reservation.fingerprint);
  RETURN_NOT_OK(created);
  if (resuming) {
    // Old enough that a worker may have removed its queue entry as an
    // orphan just before the record appeared: again, and counted.
    RETURN_NOT_OK(queue_.Enqueue(run.id, "", run.input_bytes));
    CountAdmitted("", run.input_bytes);
  }
  RETURN_NOT_OK(Fail(failpoint::kSubmitAfterRun));
  Wake();
  return Submission{ViewOf(run), /*replayed=*/false};
}

}  // namespace loam::service
