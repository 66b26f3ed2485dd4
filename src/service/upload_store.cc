#include "service/upload_store.h"

#include <nlohmann/json.hpp>

#include "common/status_macros.h"
#include "common/ulid.h"

namespace loam::service {

using json = nlohmann::json;

std::string UploadRecord::ToJson() const {
  return json{{"format", 1},
              {"id", id},
              {"pipelineId", pipeline_id},
              {"principal", principal},
              {"tableId", table_sid},
              {"key", key},
              {"prefix", prefix},
              {"size", size},
              {"sha256", sha256},
              {"contentType", content_type},
              {"fileName", file_name},
              {"createdMicros", created_micros},
              {"expiresMicros", expires_micros},
              {"receivedSha256", received_sha256},
              {"runId", run_id}}
      .dump();
}

Result<UploadRecord> UploadRecord::FromJson(std::string_view text) {
  json j = json::parse(text, nullptr, false);
  UploadRecord r;
  try {
    if (j.at("format") != 1) return Status::DataLoss("unknown upload record format");
    r.id = j.at("id");
    r.pipeline_id = j.at("pipelineId");
    r.principal = j.at("principal");
    r.table_sid = j.at("tableId");
    r.key = j.at("key");
    r.prefix = j.at("prefix");
    r.size = j.at("size");
    r.sha256 = j.at("sha256");
    r.content_type = j.at("contentType");
    r.file_name = j.value("fileName", "");  // records before 2026-12-03 have none
    r.created_micros = j.at("createdMicros");
    r.expires_micros = j.at("expiresMicros");
    r.received_sha256 = j.at("receivedSha256");
    r.run_id = j.at("runId");
  } catch (const json::exception& e) {
    return Status::DataLoss(std::string("malformed upload record: ") + e.what());
  }
  return r;
}

UploadStore::UploadStore(std::shared_ptr<ObjectStore> store, std::string workspace_root)
    : store_(std::move(store)), root_(std::move(workspace_root)) {}

std::string UploadStore::Key(const std::string& id) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/uploads/" + id + ".json";
}

Status UploadStore::Create(const UploadRecord& r) {
  return store_->PutIfAbsent(Key(r.id), r.ToJson()).status();
}

Result<UploadRecord> UploadStore::Get(const std::string& id, std::string* etag) const {
  if (!Ulid::Parse(id).ok()) return Status::NotFound("no upload '" + id + "'");
  ObjectMeta meta;
  Result<std::string> text = store_->Get(Key(id), &meta);
  if (text.status().IsNotFound()) return Status::NotFound("no upload '" + id + "'");
  RETURN_NOT_OK(text.status());
  if (etag) *etag = meta.etag;
  return UploadRecord::FromJson(*text);
}

Status UploadStore::Update(const UploadRecord& r, const std::string& etag) {
  return store_->PutIfMatch(Key(r.id), r.ToJson(), etag).status();
}

Status UploadStore::Delete(const std::string& id) { return store_->Delete(Key(id)); }

}  // namespace loam::service
