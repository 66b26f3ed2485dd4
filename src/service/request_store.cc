#include "service/request_store.h"

#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

// Member `key` of `j` as a string, or nullopt.
// Record `text` as a JSON object of format 1, else DataLoss naming `what`.
Result<json> RecordObject(std::string_view text, const std::string& what) {
  Result<json> j = ParseJsonObject(text, what);
  if (!j.ok()) return Status::DataLoss("malformed " + what + ": " + j.status().message());
  if (IntegerAt(*j, "format") != 1) return Status::DataLoss("unknown " + what + " format");
  return j;
}

}  // namespace

std::string EncodeRequestRecord(const RequestRecord& r) {
  json j = {{"format", 1},
            {"key", r.key},
            {"principal", r.principal},
            {"fingerprint", r.fingerprint},
            {"runId", r.run_id},
            {"createdMicros", r.created_micros},
            {"expiresMicros", r.expires_micros}};
  if (!r.staged_uploads.empty()) j["stagedUploads"] = r.staged_uploads;
  return j.dump();
}

Result<RequestRecord> DecodeRequestRecord(std::string_view text) {
  const std::string what = "idempotency record";
  ASSIGN_OR_RETURN(json j, RecordObject(text, what));
  const auto key = OptionalStringAt(j, "key"), principal = OptionalStringAt(j, "principal"),
             fingerprint = OptionalStringAt(j, "fingerprint"), run = OptionalStringAt(j, "runId");
  const auto created = IntegerAt(j, "createdMicros"), expires = IntegerAt(j, "expiresMicros");
  if (!key || !principal || !fingerprint || !run || !created || !expires) {
    return Status::DataLoss("malformed " + what + ": a field is missing or of the wrong type");
  }
  RequestRecord r{*key, *principal, *fingerprint, *run, *created, *expires, {}};
  if (auto staged = j.find("stagedUploads"); staged != j.end()) {
    if (!staged->is_array()) return Status::DataLoss("malformed " + what + ": stagedUploads");
    for (const json& u : *staged) {
      if (!u.is_string()) return Status::DataLoss("malformed " + what + ": stagedUploads");
      r.staged_uploads.push_back(u.get<std::string>());
    }
  }
  return r;
}

std::string EncodeSourceRecord(const SourceRecord& r) {
  return json{{"format", 1},
              {"sourceId", r.source_id},
              {"sha256", r.sha256},
              {"runId", r.run_id},
              {"loaded", r.loaded},
              {"createdMicros", r.created_micros},
              {"expiresMicros", r.expires_micros}}
      .dump();
}

Result<SourceRecord> DecodeSourceRecord(std::string_view text) {
  const std::string what = "source record";
  ASSIGN_OR_RETURN(json j, RecordObject(text, what));
  const auto source = OptionalStringAt(j, "sourceId"), sha = OptionalStringAt(j, "sha256"),
             run = OptionalStringAt(j, "runId");
  const auto created = IntegerAt(j, "createdMicros"), expires = IntegerAt(j, "expiresMicros");
  auto loaded = j.find("loaded");
  if (!source || !sha || !run || !created || !expires || loaded == j.end() ||
      !loaded->is_boolean()) {
    return Status::DataLoss("malformed " + what + ": a field is missing or of the wrong type");
  }
  return SourceRecord{*source, *sha, *run, loaded->get<bool>(), *created, *expires};
}

RequestStore::RequestStore(std::shared_ptr<ObjectStore> store, std::string workspace_root,
                           std::string workspace_id)
    : store_(std::move(store)),
      root_(std::move(workspace_root)),
      workspace_id_(std::move(workspace_id)) {}

std::string RequestStore::Prefix(const char* what) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/" + what + "/";
}

std::string RequestStore::RequestKey(const std::string& principal, const std::string& key) const {
  std::string scoped = workspace_id_;
  scoped += '\0';
  scoped += principal;
  scoped += '\0';
  scoped += key;
  return Prefix("requests") + Hash128Hex(scoped) + ".json";
}

std::string RequestStore::SourceKey(const std::string& pipeline_id, const std::string& source_id,
                                    const std::string& sha256) const {
  return Prefix("sources") + pipeline_id + "/" + Hash128Hex(source_id + '\0' + sha256) + ".json";
}

Result<std::optional<RequestRecord>> RequestStore::Find(const std::string& principal,
                                                        const std::string& key,
                                                        std::string* etag) const {
  ObjectMeta meta;
  Result<std::string> text = store_->Get(RequestKey(principal, key), &meta);
  if (text.status().IsNotFound()) return std::optional<RequestRecord>();
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(RequestRecord r, DecodeRequestRecord(*text));
  if (r.key != key || r.principal != principal) {
    return Status::DataLoss("idempotency record for another key (a hash collision?)");
  }
  if (etag) *etag = meta.etag;
  return std::optional<RequestRecord>(std::move(r));
}

Status RequestStore::Reserve(const RequestRecord& r) {
  return store_->PutIfAbsent(RequestKey(r.principal, r.key), EncodeRequestRecord(r)).status();
}

Status RequestStore::TakeOver(const RequestRecord& r, const std::string& etag) {
  return store_->PutIfMatch(RequestKey(r.principal, r.key), EncodeRequestRecord(r), etag).status();
}

Status RequestStore::Delete(const RequestRecord& r) {
  // Only while the key still names this run: once released (the sweeper),
  // the key may name a later request's run. (Read, then delete: without a
  // conditional delete in the store, a reservation made between the two is
  // removed too; the window is one round trip.)
  Result<std::string> text = store_->Get(RequestKey(r.principal, r.key));
  if (text.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(text.status());
  Result<RequestRecord> now = DecodeRequestRecord(*text);
  if (now.ok() && now->run_id != r.run_id) return Status::OK();
  return store_->Delete(RequestKey(r.principal, r.key));
}

Result<RequestStore::Page<RequestRecord>> RequestStore::RequestsPage(const std::string& after,
                                                                     size_t limit) const {
  ASSIGN_OR_RETURN(ListPage page, store_->List(Prefix("requests"), after, limit));
  Page<RequestRecord> out;
  for (const ObjectInfo& o : page.objects) {
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(RequestRecord r, DecodeRequestRecord(*text));
    out.records.push_back(std::move(r));
  }
  if (page.truncated) out.next = page.objects.back().key;
  return out;
}

Result<std::optional<SourceRecord>> RequestStore::FindSource(const std::string& pipeline_id,
                                                             const std::string& source_id,
                                                             const std::string& sha256,
                                                             std::string* etag) const {
  ObjectMeta meta;
  Result<std::string> text = store_->Get(SourceKey(pipeline_id, source_id, sha256), &meta);
  if (text.status().IsNotFound()) return std::optional<SourceRecord>();
  RETURN_NOT_OK(text.status());
  ASSIGN_OR_RETURN(SourceRecord r, DecodeSourceRecord(*text));
  if (r.source_id != source_id || r.sha256 != sha256) {
    return Status::DataLoss("source record for another source (a hash collision?)");
  }
  if (etag) *etag = meta.etag;
  return std::optional<SourceRecord>(std::move(r));
}

Status RequestStore::PutSource(const std::string& pipeline_id, const SourceRecord& r,
                               const std::string* etag) {
  const std::string key = SourceKey(pipeline_id, r.source_id, r.sha256);
  if (etag) return store_->PutIfMatch(key, EncodeSourceRecord(r), *etag).status();
  return store_->PutIfAbsent(key, EncodeSourceRecord(r)).status();
}

Status RequestStore::DeleteSource(const std::string& pipeline_id, const SourceRecord& r) {
  return store_->Delete(SourceKey(pipeline_id, r.source_id, r.sha256));
}

Result<RequestStore::Page<std::pair<std::string, SourceRecord>>> RequestStore::SourcesPage(
    const std::string& after, size_t limit) const {
  const std::string prefix = Prefix("sources");
  ASSIGN_OR_RETURN(ListPage page, store_->List(prefix, after, limit));
  Page<std::pair<std::string, SourceRecord>> out;
  for (const ObjectInfo& o : page.objects) {
    Result<std::string> text = store_->Get(o.key);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(SourceRecord r, DecodeSourceRecord(*text));
    const std::string rest = o.key.substr(prefix.size());
    out.records.emplace_back(rest.substr(0, rest.find('/')), std::move(r));
  }
  if (page.truncated) out.next = page.objects.back().key;
  return out;
}

}  // namespace loam::service
