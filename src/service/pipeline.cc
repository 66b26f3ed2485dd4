#include "service/pipeline.h"

#include "common/crypto.h"
#include "common/hash.h"
#include "common/json_parse.h"
#include "common/status_macros.h"
#include "common/ulid.h"
#include "dataset/dataset.h"
#include "ingest/csv_reader.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

Status CheckName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= 128;
  for (char c : name) {
    ok = ok && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-');
  }
  if (ok) return Status::OK();
  return Status::InvalidArgument("pipeline name '" + name +
                                 "' must be 1 to 128 of the characters A-Z a-z 0-9 _ . -");
}

Result<json> ParseObject(std::string_view text, const char* what, bool client) {
  std::string problem;
  json j = ParseJson(text, &problem);
  if (j.is_object()) return j;
  std::string msg = std::string(what) + ": " + (j.is_discarded() ? problem : "not a JSON object");
  return client ? Status::InvalidArgument(msg) : Status::DataLoss(msg);
}

}  // namespace

Result<PipelineSpec> PipelineSpec::FromJson(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseObject(text, "pipeline", true));
  StrictObject o(j, "pipeline");
  PipelineSpec p;
  RETURN_NOT_OK(o.String("name", &p.name, /*required=*/true));
  RETURN_NOT_OK(CheckName(p.name));
  RETURN_NOT_OK(o.String("table", &p.table, /*required=*/true));
  RETURN_NOT_OK(o.String("branch", &p.branch));
  if (p.branch != "main") {
    if (Status valid = ValidateRefName("branch", p.branch); !valid.ok()) {
      return Status::InvalidArgument("pipeline: \"branch\": " + valid.message());
    }
  }
  std::string text_value = "append";
  RETURN_NOT_OK(o.String("mode", &text_value));
  ASSIGN_OR_RETURN(p.mode, ingest::ParseLoadMode(text_value));
  if (p.mode == ingest::LoadMode::kDelete) {
    return Status::InvalidArgument(
        "pipeline: \"mode\" \"delete\" is not a pipeline's: rows are deleted by POST "
        "/v1/tables/{name}/deletes");
  }
  RETURN_NOT_OK(o.Strings("keyColumns", &p.key_columns));
  if (p.mode != ingest::LoadMode::kUpsert && !p.key_columns.empty()) {
    return Status::InvalidArgument("pipeline: \"keyColumns\" are for mode \"upsert\" only");
  }
  text_value = "csv";
  RETURN_NOT_OK(o.String("format", &text_value, /*required=*/true));
  ASSIGN_OR_RETURN(p.format, ingest::ParseInputFormat(text_value));
  if (const json* f = o.Field("formatOptions"); f != nullptr) {
    if (!f->is_object()) return o.Bad("formatOptions", "an object");
    StrictObject fo(*f, "pipeline formatOptions");
    std::string delimiter(1, p.csv_delimiter);
    RETURN_NOT_OK(fo.String("csvDelimiter", &delimiter));
    RETURN_NOT_OK(CheckCsvDelimiter(delimiter, "pipeline formatOptions: \"csvDelimiter\""));
    p.csv_delimiter = delimiter[0];
    RETURN_NOT_OK(p.csv.FromJson("csv", fo));
    RETURN_NOT_OK(fo.Finish());
    // The run checks the column count against its own limit.
    RETURN_NOT_OK(p.csv.Check(p.csv_delimiter, size_t{1} << 20, "pipeline formatOptions"));
    if (!p.csv.IsDefault() && p.format != ingest::InputFormat::kCsv) {
      return Status::InvalidArgument(
          "pipeline formatOptions: the CSV options are for format \"csv\" only");
    }
  }
  if (const json* s = o.Field("schemaPolicy"); s != nullptr) {
    ASSIGN_OR_RETURN(p.schema_policy, ingest::SchemaPolicy::FromJson(s->dump()));
  }
  text_value = "failRun";
  RETURN_NOT_OK(o.String("errorPolicy", &text_value));
  ASSIGN_OR_RETURN(p.error_policy, ingest::ParseErrorPolicy(text_value));
  if (const json* q = o.Field("quarantine"); q != nullptr && *q != false) {
    return Status::PermissionDenied(
        "pipeline: quarantine is refused: Loam never keeps rejected rows");
  }
  if (const json* l = o.Field("limits"); l != nullptr) {
    ASSIGN_OR_RETURN(p.limits, LoadLimits::FromJson(*l, "pipeline limits"));
  }
  RETURN_NOT_OK(o.Bool("paused", &p.paused));
  RETURN_NOT_OK(o.Finish());
  return p;
}

namespace {

json FormatOptionsJson(char delimiter, const ingest::CsvDialect& csv) {
  json j = {{"csvDelimiter", std::string(1, delimiter)}};
  csv.ToJson("csv", &j);  // only what differs: records before the options read the same
  return j;
}

}  // namespace

json PipelineSpec::ToJson() const {
  json j = {{"name", name},
            {"table", table},
            {"mode", ingest::LoadModeName(mode)},
            {"keyColumns", key_columns},
            {"format", ingest::InputFormatName(format)},
            {"formatOptions", FormatOptionsJson(csv_delimiter, csv)},
            {"schemaPolicy", json::parse(schema_policy.ToJson())},
            {"errorPolicy", ingest::ErrorPolicyName(error_policy)},
            {"limits", limits.ToJson()}};
  if (paused) j["paused"] = true;              // absent otherwise: records before it read the same
  if (branch != "main") j["branch"] = branch;  // likewise
  return j;
}

json Pipeline::ToJson() const {
  json j = spec.ToJson();
  j["id"] = id;
  j["tableId"] = table_sid;
  j["createdBy"] = created_by;
  j["createdMicros"] = created_micros;
  j["updatedBy"] = updated_by;
  j["updatedMicros"] = updated_micros;
  return j;
}

std::string Pipeline::Etag() const {
  return "\"" + Sha256Hex(ToJson().dump()).substr(0, 16) + "\"";
}

Result<Pipeline> Pipeline::FromJson(std::string_view text) {
  ASSIGN_OR_RETURN(json j, ParseObject(text, "pipeline record", false));
  Pipeline p;
  try {
    p.id = j.at("id");
    p.table_sid = Int64At(j, "tableId");
    p.created_by = j.at("createdBy");
    p.created_micros = Int64At(j, "createdMicros");
    p.updated_by = j.at("updatedBy");
    p.updated_micros = Int64At(j, "updatedMicros");
    for (const char* k :
         {"id", "tableId", "createdBy", "createdMicros", "updatedBy", "updatedMicros"}) {
      j.erase(k);
    }
  } catch (const json::exception& e) {
    return Status::DataLoss(std::string("malformed pipeline record: ") + e.what());
  }
  Result<PipelineSpec> spec = PipelineSpec::FromJson(j.dump());
  if (!spec.ok()) return Status::DataLoss("malformed pipeline record: " + spec.status().message());
  p.spec = std::move(*spec);
  return p;
}

PipelineStore::PipelineStore(std::shared_ptr<ObjectStore> store, std::string workspace_root)
    : store_(std::move(store)), root_(std::move(workspace_root)) {}

std::string PipelineStore::Key(const std::string& id) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/pipelines/" + id + ".json";
}

std::string PipelineStore::NameKey(const std::string& name) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/pipeline-names/" + Hash128Hex(name) +
         ".json";
}

Status PipelineStore::Create(const Pipeline& p) {
  const std::string entry = json{{"name", p.spec.name}, {"id", p.id}}.dump();
  Result<ObjectMeta> named = store_->PutIfAbsent(NameKey(p.spec.name), entry);
  if (named.status().IsAlreadyExists()) {
    // Taken, unless it names a pipeline that is gone (a create or delete
    // that stopped half way): then this create takes the name over.
    ObjectMeta meta;
    ASSIGN_OR_RETURN(std::string text, store_->Get(NameKey(p.spec.name), &meta));
    json j = ParseJson(text);
    const std::string other = j.is_object() ? StringAt(j, "id") : "";
    Result<ObjectMeta> there = store_->Head(Key(other));
    if (!there.status().IsNotFound()) {
      RETURN_NOT_OK(there.status());
      return Status::AlreadyExists("a pipeline named '" + p.spec.name + "' exists (" + other + ")");
    }
    named = store_->PutIfMatch(NameKey(p.spec.name), entry, meta.etag);
    if (named.status().IsAborted()) return Create(p);
  }
  RETURN_NOT_OK(named.status());
  return store_->PutIfAbsent(Key(p.id), p.ToJson().dump()).status();
}

Result<Pipeline> PipelineStore::Get(const std::string& id, std::string* etag) const {
  if (Ulid::Parse(id).ok() == false) return Status::NotFound("no pipeline '" + id + "'");
  ObjectMeta meta;
  Result<std::string> text = store_->Get(Key(id), &meta);
  if (text.status().IsNotFound()) return Status::NotFound("no pipeline '" + id + "'");
  RETURN_NOT_OK(text.status());
  if (etag) *etag = meta.etag;
  return Pipeline::FromJson(*text);
}

Status PipelineStore::Update(const Pipeline& p, const std::string& etag) {
  Status s = store_->PutIfMatch(Key(p.id), p.ToJson().dump(), etag).status();
  if (s.IsAborted()) {
    return Status::Conflict("pipeline " + p.id + " changed meanwhile; read it again and retry");
  }
  return s;
}

Status PipelineStore::Delete(const Pipeline& p) {
  RETURN_NOT_OK(store_->Delete(Key(p.id)));
  Result<std::string> text = store_->Get(NameKey(p.spec.name));
  if (text.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(text.status());
  json j = ParseJson(*text);
  if (j.is_object() && StringAt(j, "id") == p.id)
    RETURN_NOT_OK(store_->Delete(NameKey(p.spec.name)));
  return Status::OK();
}

Result<std::vector<Pipeline>> PipelineStore::List() const {
  ASSIGN_OR_RETURN(std::vector<ObjectInfo> objects,
                   store_->ListAll((root_.empty() ? "" : root_ + "/") + "_control/pipelines/"));
  std::vector<Pipeline> out;
  for (const ObjectInfo& o : objects) {
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(Pipeline p, Pipeline::FromJson(*text));
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace loam::service
