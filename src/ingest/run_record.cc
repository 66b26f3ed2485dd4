#include "ingest/run_record.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/strict_json.h"
#include "ingest/csv_reader.h"

namespace loam::ingest {
namespace {

using json = nlohmann::json;

template <typename E>
struct Named {
  E value;
  std::string_view name;
};
constexpr Named<LoadMode> kModes[] = {{LoadMode::kAppend, "append"},
                                      {LoadMode::kUpsert, "upsert"},
                                      {LoadMode::kReplace, "replace"},
                                      {LoadMode::kDelete, "delete"}};
constexpr Named<ErrorPolicy> kPolicies[] = {{ErrorPolicy::kFailRun, "failRun"},
                                            {ErrorPolicy::kValidationOnly, "validationOnly"},
                                            {ErrorPolicy::kSkipRows, "skipRows"}};
constexpr Named<RunState> kStates[] = {
    {RunState::kQueued, "queued"},         {RunState::kValidating, "validating"},
    {RunState::kCommitting, "committing"}, {RunState::kSucceeded, "succeeded"},
    {RunState::kFailed, "failed"},         {RunState::kPartial, "partial"},
    {RunState::kCancelled, "cancelled"}};

template <typename E, size_t N>
std::string_view NameOf(const Named<E> (&table)[N], E v) {
  for (const auto& n : table) {
    if (n.value == v) return n.name;
  }
  return "unknown";
}

template <typename E, size_t N>
Result<E> Parse(const Named<E> (&table)[N], std::string_view s, std::string_view what) {
  std::string known;
  for (const auto& n : table) {
    if (n.name == s) return n.value;
    known += (known.empty() ? "" : ", ") + std::string(n.name);
  }
  return Status::InvalidArgument("unknown " + std::string(what) + " '" + std::string(s) +
                                 "'; use one of " + known);
}

Result<json> ParseObject(std::string_view text, std::string_view what) {
  json j = ParseJson(text);
  if (!j.is_object()) return Status::DataLoss("malformed " + std::string(what));
  return j;
}

}  // namespace

std::string_view LoadModeName(LoadMode m) { return NameOf(kModes, m); }
Result<LoadMode> ParseLoadMode(std::string_view s) { return Parse(kModes, s, "mode"); }
std::string_view ErrorPolicyName(ErrorPolicy p) { return NameOf(kPolicies, p); }
Result<ErrorPolicy> ParseErrorPolicy(std::string_view s) {
  if (s == "quarantine") {
    return Status::PermissionDenied(
        "the quarantine error policy is refused: Loam never keeps rejected rows; use failRun or "
        "validationOnly");
  }
  return Parse(kPolicies, s, "error policy");
}
std::string_view RunStateName(RunState s) { return NameOf(kStates, s); }
bool HasCommitted(RunState s) { return s == RunState::kSucceeded || s == RunState::kPartial; }

bool IsTerminal(RunState s) {
  return s == RunState::kSucceeded || s == RunState::kFailed || s == RunState::kPartial ||
         s == RunState::kCancelled;
}

std::string RunRequest::ToJson() const {
  json j = {{"table", table},
            {"branch", branch},
            {"mode", LoadModeName(mode)},
            {"keys", keys},
            {"format", format ? json(InputFormatName(*format)) : json(nullptr)},
            {"files", files},
            {"schemaPolicy", json::parse(policy.ToJson())},
            {"errorPolicy", ErrorPolicyName(error_policy)},
            {"idempotencyKey", idempotency_key},
            {"principal", principal},
            {"limits",
             {{"maxColumns", limits.max_columns},
              {"maxFieldBytes", limits.max_field_bytes},
              {"maxJsonDepth", limits.max_json_depth},
              {"csvDelimiter", std::string(1, limits.csv_delimiter)},
              {"maxDecodedBytes", limits.decode.max_decoded_bytes},
              {"maxExpansionRatio", limits.decode.max_expansion_ratio},
              {"maxRows", max_rows},
              {"timeBudgetMs", time_budget_ms},
              {"maxRejectedRows", max_rejected_rows}}}};
  // Only when set, so requests written before the field existed keep their text.
  if (expected_table_version) j["expectedTableVersion"] = *expected_table_version;
  if (!additive_admin.empty()) j["additiveAdmin"] = additive_admin;
  if (!file_names.empty()) j["fileNames"] = file_names;
  if (!where.empty()) j["where"] = where;
  if (max_errors != kDefaultMaxErrors) j["limits"]["maxErrors"] = max_errors;
  if (!limits.csv.IsDefault()) {
    json csv = json::object();
    limits.csv.ToJson("", &csv);
    j["csv"] = std::move(csv);
  }
  return j.dump();  // keys sorted: equal requests, equal text
}

namespace {

Status ReadLimits(const json& l, RunRequest* r) {
  if (!l.is_object()) return Status::InvalidArgument("run request: \"limits\" must be an object");
  StrictObject o(l, "run request limits");
  RETURN_NOT_OK(o.Int("maxColumns", &r->limits.max_columns, 1, 1 << 20));
  RETURN_NOT_OK(o.Int("maxFieldBytes", &r->limits.max_field_bytes, 1, int64_t{1} << 30));
  RETURN_NOT_OK(o.Int("maxJsonDepth", &r->limits.max_json_depth, 1, 1024));
  std::string delimiter(1, r->limits.csv_delimiter);
  RETURN_NOT_OK(o.String("csvDelimiter", &delimiter));
  RETURN_NOT_OK(CheckCsvDelimiter(delimiter, "run request: \"csvDelimiter\""));
  r->limits.csv_delimiter = delimiter[0];
  RETURN_NOT_OK(o.Int("maxDecodedBytes", &r->limits.decode.max_decoded_bytes, 1,
                      std::numeric_limits<int64_t>::max()));
  RETURN_NOT_OK(o.Number("maxExpansionRatio", &r->limits.decode.max_expansion_ratio, 1, 1e9));
  RETURN_NOT_OK(o.Int("maxRows", &r->max_rows, 1, std::numeric_limits<int64_t>::max()));
  // 0 or less: no time at all (the run fails its budget at once).
  RETURN_NOT_OK(o.Int("timeBudgetMs", &r->time_budget_ms, std::numeric_limits<int64_t>::min(),
                      std::numeric_limits<int64_t>::max()));
  RETURN_NOT_OK(o.Int("maxRejectedRows", &r->max_rejected_rows, 0, int64_t{1} << 40));
  RETURN_NOT_OK(o.Int("maxErrors", &r->max_errors, 1, RunRequest::kMaxErrorsCeiling));
  return o.Finish();
}

}  // namespace

Result<RunRequest> RunRequest::FromJson(std::string_view text) {
  json j = ParseJson(text);
  if (!j.is_object()) return Status::InvalidArgument("run request: not a JSON object");
  StrictObject o(j, "run request");
  RunRequest r;
  if (const json* q = o.Field("quarantine"); q != nullptr) {
    if (!q->is_boolean()) return o.Bad("quarantine", "false (Loam never keeps rejected rows)");
    if (q->get<bool>()) {
      return Status::PermissionDenied(
          "run request: quarantine is refused: Loam never keeps rejected rows; use the failRun "
          "or validationOnly error policy");
    }
  }
  RETURN_NOT_OK(o.String("table", &r.table, /*required=*/true));
  RETURN_NOT_OK(o.String("branch", &r.branch));
  std::string name = "append";
  RETURN_NOT_OK(o.String("mode", &name));
  ASSIGN_OR_RETURN(r.mode, ParseLoadMode(name));
  RETURN_NOT_OK(o.Strings("keys", &r.keys));
  if (const json* f = o.Field("format"); f != nullptr && !f->is_null()) {
    if (!f->is_string()) return o.Bad("format", "\"csv\", \"jsonl\" or null");
    ASSIGN_OR_RETURN(r.format, ParseInputFormat(f->get<std::string>()));
  }
  RETURN_NOT_OK(o.Strings("files", &r.files));
  if (const json* p = o.Field("schemaPolicy"); p != nullptr) {
    ASSIGN_OR_RETURN(r.policy, SchemaPolicy::FromJson(p->dump()));
  }
  name = std::string(ErrorPolicyName(r.error_policy));
  RETURN_NOT_OK(o.String("errorPolicy", &name));
  ASSIGN_OR_RETURN(r.error_policy, ParseErrorPolicy(name));
  RETURN_NOT_OK(o.String("idempotencyKey", &r.idempotency_key));
  RETURN_NOT_OK(o.String("principal", &r.principal));
  RETURN_NOT_OK(o.String("additiveAdmin", &r.additive_admin));
  RETURN_NOT_OK(o.Strings("fileNames", &r.file_names));
  if (!r.file_names.empty() && r.file_names.size() != r.files.size()) {
    return o.Bad("fileNames", "one name per file");
  }
  if (const json* l = o.Field("limits"); l != nullptr) RETURN_NOT_OK(ReadLimits(*l, &r));
  if (const json* c = o.Field("csv"); c != nullptr) {
    if (!c->is_object()) return o.Bad("csv", "an object");
    StrictObject co(*c, "run request csv");
    RETURN_NOT_OK(r.limits.csv.FromJson("", co));
    RETURN_NOT_OK(co.Finish());
    // The count of named columns is the reader's to check against the
    // run's limit (limit_exceeded): a request reads back whatever its limits.
    RETURN_NOT_OK(r.limits.csv.Check(r.limits.csv_delimiter, size_t{1} << 20, "run request csv"));
  }
  RETURN_NOT_OK(o.Strings("where", &r.where));
  if (r.mode == LoadMode::kDelete && r.where.empty() == r.files.empty()) {
    return o.Bad("where", "filters or keys files (one of the two) for a delete");
  }
  if (r.mode != LoadMode::kDelete && !r.where.empty())
    return o.Bad("where", "absent but for a delete");
  if (o.Field("expectedTableVersion") != nullptr) {
    int64_t v = 0;
    RETURN_NOT_OK(o.Int("expectedTableVersion", &v, 0, std::numeric_limits<int64_t>::max()));
    r.expected_table_version = v;
  }
  RETURN_NOT_OK(o.Finish());
  return r;
}

namespace {

json ErrorJson(const RunError& e) {
  return {{"file", e.file},     {"reason", e.reason}, {"line", e.line},
          {"offset", e.offset}, {"column", e.column}, {"code", e.code}};
}

// Records written before the position fields have file and reason only.
RunError ErrorFromJson(const json& e) {
  RunError out{e.at("file"), e.at("reason")};
  if (e.contains("line")) out.line = Int64At(e, "line", 0);
  if (e.contains("offset")) out.offset = Int64At(e, "offset", -1);
  if (e.contains("column")) out.column = e.at("column");
  if (e.contains("code")) out.code = e.at("code");
  return out;
}

int64_t DetailInt(const Status& s, std::string_view key, int64_t absent) {
  const std::string_view text = s.detail(key);
  int64_t v = absent;
  if (text.empty() || std::from_chars(text.data(), text.data() + text.size(), v).ec != std::errc())
    return absent;
  return v;
}

}  // namespace

RunError RunErrorOf(const Status& s, const std::string& file) {
  const ErrorCode code =
      s.Is(ErrorCode::kInvalidArgument) ? ErrorCode::kValidationFailed : s.error_code();
  return {file,
          s.message(),
          DetailInt(s, "line", 0),
          DetailInt(s, "offset", -1),
          std::string(s.detail("column")),
          std::string(ErrorCodeName(code))};
}

std::string RunErrorsToJsonLines(const std::vector<RunError>& errors) {
  std::string out;
  for (const RunError& e : errors) {
    out += ErrorJson(e).dump(-1, ' ', false, json::error_handler_t::replace);
    out += '\n';
  }
  return out;
}

Result<std::vector<RunError>> RunErrorsFromJsonLines(std::string_view text) {
  std::vector<RunError> out;
  while (!text.empty()) {
    const size_t end = text.find('\n');
    ASSIGN_OR_RETURN(json j, ParseObject(text.substr(0, end), "run error"));
    try {
      out.push_back(ErrorFromJson(j));
    } catch (const json::exception& e) {
      return Status::DataLoss(std::string("malformed run error: ") + e.what());
    }
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return out;
}

std::string RunRecord::ToJson() const {
  json errs = json::array();
  for (const RunError& e : errors) errs.push_back(ErrorJson(e));
  json j = {{"format", 1},
            {"id", id},
            {"request", json::parse(request)},
            {"state", RunStateName(state)},
            {"table", table},
            {"tableId", table_sid},
            {"counters",
             {{"rowsRead", counters.rows_read},
              {"inserted", counters.inserted},
              {"updated", counters.updated},
              {"unchanged", counters.unchanged},
              {"deleted", counters.deleted},
              {"rejected", counters.rejected},
              {"bytesRead", counters.bytes_read}}},
            {"errors", errs},
            {"errorCount", error_count},
            {"errorCode", error_code},
            {"error", error},
            {"validationOnly", validation_only},
            {"timings",
             {{"createdMicros", created_micros},
              {"startedMicros", started_micros},
              {"validatedMicros", validated_micros},
              {"finishedMicros", finished_micros}}},
            {"commit",
             {{"manifestVersion", manifest_version},
              {"commitId", commit_id},
              {"tableVersion", table_version}}},
            {"lease", {{"owner", lease_owner}, {"expiresMicros", lease_expires_micros}}}};
  if (attempts > 0) {
    j["retries"] = {
        {"attempts", attempts}, {"lastErrorCode", last_error_code}, {"lastError", last_error}};
  }
  if (!pipeline_id.empty() || input_bytes > 0) {  // a delete through the service has no pipeline
    j["service"] = {{"pipelineId", pipeline_id},     {"uploads", uploads},
                    {"inputBytes", input_bytes},     {"sourceId", source_id},
                    {"sourceSha256", source_sha256}, {"sourceReload", source_reload}};
  }
  if (!input_text.empty() && !IsTerminal(state)) j["input"] = {{"text", input_text}};
  if (!cancel_requested_by.empty()) {
    j["cancel"] = {{"by", cancel_requested_by}, {"requestedMicros", cancel_requested_micros}};
  }
  // Messages can quote input bytes (a column name): invalid UTF-8 is
  // replaced, never thrown, so a failed run can always be recorded.
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

Result<RunRecord> RunRecord::FromJson(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseObject(text, "run record"));
  RunRecord r;
  try {
    if (j.at("format") != 1) return Status::DataLoss("unknown run record format");
    r.id = j.at("id");
    r.request = j.at("request").dump();
    std::string state = j.at("state");
    bool known = false;
    for (const auto& s : kStates) {
      if (s.name == state) {
        r.state = s.value;
        known = true;
      }
    }
    if (!known) return Status::DataLoss("run record with unknown state '" + state + "'");
    r.table = j.at("table");
    r.table_sid = Int64At(j, "tableId");
    const json& c = j.at("counters");
    r.counters = {Int64At(c, "rowsRead"),
                  Int64At(c, "inserted"),
                  Int64At(c, "updated"),
                  Int64At(c, "unchanged"),
                  Int64At(c, "deleted"),
                  Int64At(c, "rejected"),
                  static_cast<uint64_t>(Int64At(c, "bytesRead", 0))};
    for (const json& e : j.at("errors")) r.errors.push_back(ErrorFromJson(e));
    r.error_count = j.contains("errorCount") ? Int64At(j, "errorCount", 0)
                                             : static_cast<int64_t>(r.errors.size());
    r.error_code = j.at("errorCode");
    r.error = j.at("error");
    r.validation_only = j.at("validationOnly");
    const json& t = j.at("timings");
    r.created_micros = Int64At(t, "createdMicros");
    r.started_micros = Int64At(t, "startedMicros");
    r.validated_micros = Int64At(t, "validatedMicros");
    r.finished_micros = Int64At(t, "finishedMicros");
    const json& k = j.at("commit");
    r.manifest_version = static_cast<uint64_t>(Int64At(k, "manifestVersion", 0));
    r.commit_id = k.at("commitId");
    r.table_version = Int64At(k, "tableVersion");
    r.lease_owner = j.at("lease").at("owner");
    r.lease_expires_micros = Int64At(j.at("lease"), "expiresMicros");
    if (j.contains("retries")) {
      const json& v = j.at("retries");
      r.attempts = static_cast<int>(Int64At(v, "attempts", 0, std::numeric_limits<int>::max()));
      r.last_error_code = v.at("lastErrorCode");
      r.last_error = v.at("lastError");
    }
    if (j.contains("service")) {
      const json& v = j.at("service");
      r.pipeline_id = v.at("pipelineId");
      r.uploads = v.at("uploads").get<std::vector<std::string>>();
      r.input_bytes = Int64At(v, "inputBytes");
      r.source_id = v.at("sourceId");
      r.source_sha256 = v.at("sourceSha256");
      r.source_reload = v.at("sourceReload");
    }
    if (j.contains("input")) r.input_text = j.at("input").at("text");
    if (j.contains("cancel")) {
      r.cancel_requested_by = j.at("cancel").at("by");
      r.cancel_requested_micros = Int64At(j.at("cancel"), "requestedMicros");
    }
  } catch (const json::exception& e) {
    return Status::DataLoss(std::string("malformed run record: ") + e.what());
  }
  return r;
}

std::string RunStore::RunKey(const std::string& run_id) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/runs/" + run_id + ".json";
}

std::string RunStore::ErrorsKey(const std::string& run_id) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/run-errors/" + run_id + ".jsonl";
}

std::string RunStore::KeyKey(const std::string& key) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/idempotency/" + Hash128Hex(key) + ".json";
}

Status RunStore::Create(const RunRecord& record, std::string* etag) {
  ASSIGN_OR_RETURN(ObjectMeta meta, store_->PutIfAbsent(RunKey(record.id), record.ToJson()));
  *etag = meta.etag;
  return Status::OK();
}

Result<RunRecord> RunStore::Get(const std::string& run_id, std::string* etag) const {
  ObjectMeta meta;
  Result<std::string> text = store_->Get(RunKey(run_id), &meta);
  if (text.status().IsNotFound()) return Status::NotFound("no run '" + run_id + "'");
  RETURN_NOT_OK(text.status());
  if (etag) *etag = meta.etag;
  return RunRecord::FromJson(*text);
}

Status RunStore::Update(const RunRecord& record, std::string* etag) {
  ASSIGN_OR_RETURN(ObjectMeta meta, store_->PutIfMatch(RunKey(record.id), record.ToJson(), *etag));
  *etag = meta.etag;
  return Status::OK();
}

Result<std::string> RunStore::Etag(const std::string& run_id) const {
  Result<ObjectMeta> meta = store_->Head(RunKey(run_id));
  if (meta.status().IsNotFound()) return Status::NotFound("no run '" + run_id + "'");
  RETURN_NOT_OK(meta.status());
  return meta->etag;
}

Result<RunRecord> RunStore::RequestCancel(const std::string& run_id, const std::string& by,
                                          int64_t now_micros) {
  if (by.empty()) return Status::InvalidArgument("a cancel names who asks for it");
  // Each lost swap means the lease holder saved progress meanwhile; a few
  // rounds always win against one renewal a third of a lease.
  constexpr int kRounds = 8;
  for (int round = 0;; ++round) {
    std::string etag;
    ASSIGN_OR_RETURN(RunRecord r, Get(run_id, &etag));
    if (IsTerminal(r.state)) {
      return Status::FailedPrecondition("run " + run_id + " is " +
                                        std::string(RunStateName(r.state)) +
                                        ": a finished run cannot be cancelled");
    }
    if (!r.cancel_requested_by.empty()) return r;
    r.cancel_requested_by = by;
    r.cancel_requested_micros = now_micros;
    Status s = Update(r, &etag);
    if (s.ok()) return r;
    if (!s.IsAborted() || round + 1 >= kRounds) return s;
  }
}

Result<std::vector<RunRecord>> RunStore::List() const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects,
                   store_->ListAll((root_.empty() ? "" : root_ + "/") + "_control/runs/"));
  std::vector<RunRecord> out;
  for (const ObjectInfo& o : objects) {
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(RunRecord r, RunRecord::FromJson(*text));
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(),
            [](const RunRecord& a, const RunRecord& b) { return a.id > b.id; });
  return out;
}

Status RunStore::Delete(const RunRecord& record) {
  // The errors first (only a record counting more than it holds has them),
  // so none outlives its record; a record left by a failure in between
  // shows its own (GetErrors).
  if (record.error_count > static_cast<int64_t>(record.errors.size())) {
    RETURN_NOT_OK(store_->Delete(ErrorsKey(record.id)));
  }
  return store_->Delete(RunKey(record.id));
}

Status RunStore::PutErrors(const std::string& run_id, const std::vector<RunError>& errors) {
  return store_->Put(ErrorsKey(run_id), RunErrorsToJsonLines(errors)).status();
}

Result<std::vector<RunError>> RunStore::GetErrors(const RunRecord& record) const {
  if (record.error_count <= static_cast<int64_t>(record.errors.size())) return record.errors;
  Result<std::string> text = store_->Get(ErrorsKey(record.id));
  if (text.status().IsNotFound()) return record.errors;  // Delete stopped half way
  RETURN_NOT_OK(text.status());
  return RunErrorsFromJsonLines(*text);
}

Result<std::optional<std::string>> RunStore::FindKey(const std::string& key) const {
  Result<std::string> text = store_->Get(KeyKey(key));
  if (text.status().IsNotFound()) return std::optional<std::string>();
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(json j, ParseObject(*text, "idempotency entry"));
  if (!j.contains("key") || j["key"] != key || !j.contains("run") || !j["run"].is_string()) {
    return Status::DataLoss("idempotency entry for a different key (hash collision?)");
  }
  return std::optional<std::string>(j["run"].get<std::string>());
}

Status RunStore::BindKey(const std::string& key, const std::string& run_id) {
  return store_->PutIfAbsent(KeyKey(key), json{{"key", key}, {"run", run_id}}.dump()).status();
}

}  // namespace loam::ingest
