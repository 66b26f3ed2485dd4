#include "service/upload_store.h"

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
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
              {"runId", run_id},
              {"validatedBy", validated_by}}
      .dump();
}

Result<UploadRecord> UploadRecord::FromJson(std::string_view text) {
  json j = ParseJson(text);
  UploadRecord r;
  try {
    if (j.at("format") != 1) return Status::DataLoss("unknown upload record format");
    r.id = j.at("id");
    r.pipeline_id = j.at("pipelineId");
    r.principal = j.at("principal");
    r.table_sid = Int64At(j, "tableId");
    r.key = j.at("key");
    r.prefix = j.at("prefix");
    r.size = static_cast<uint64_t>(Int64At(j, "size", 0));
    r.sha256 = j.at("sha256");
    r.content_type = j.at("contentType");
    r.file_name = StringAt(j, "fileName");  // records before 2026-12-03 have none
    r.created_micros = Int64At(j, "createdMicros");
    r.expires_micros = Int64At(j, "expiresMicros");
    r.received_sha256 = j.at("receivedSha256");
    r.run_id = j.at("runId");
    r.validated_by = StringAt(j, "validatedBy");  // records before 2026-12-06 have none
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

namespace {

std::string Micros20(int64_t micros) {
  std::string digits = std::to_string(std::max<int64_t>(micros, 0));
  return std::string(20 - std::min<size_t>(digits.size(), 20), '0') + digits;
}

}  // namespace

std::string UploadStore::IndexPrefix(const std::string& principal) const {
  return (root_.empty() ? "" : root_ + "/") + "_control/upload-index/" + Hash128Hex(principal) +
         "/";
}

std::string UploadStore::IndexKey(const UploadRecord& r) const {
  return IndexPrefix(r.principal) + Micros20(r.expires_micros) + "-" + r.id;
}

Status UploadStore::Create(const UploadRecord& r) {
  RETURN_NOT_OK(store_->PutIfAbsent(IndexKey(r), "").status());
  return store_->PutIfAbsent(Key(r.id), r.ToJson()).status();
}

Status UploadStore::CreateRecord(const UploadRecord& r) {
  return store_->PutIfAbsent(Key(r.id), r.ToJson()).status();
}

Result<OutstandingUploads> UploadStore::CountOutstanding(const std::string& principal,
                                                         int64_t now_micros, int64_t limit) const {
  OutstandingUploads out;
  const std::string prefix = IndexPrefix(principal);
  // Entries sort by expiry: start after every one expired at `now`.
  std::string after = prefix + Micros20(now_micros) + "-";
  while (out.count <= limit) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(prefix, after, static_cast<size_t>(limit + 1)));
    for (const ObjectInfo& o : page.objects) {
      if (out.count == 0) {
        out.earliest_expiry_micros = std::strtoll(o.key.c_str() + prefix.size(), nullptr, 10);
      }
      ++out.count;
    }
    if (!page.truncated || page.objects.empty()) break;
    after = page.objects.back().key;
  }
  return out;
}

Status UploadStore::ForgetOutstanding(const UploadRecord& r) {
  return store_->DeleteRelaxed(IndexKey(r));
}

Result<int64_t> UploadStore::SweepExpired(int64_t now_micros, int64_t grace_micros) {
  const std::string root = (root_.empty() ? "" : root_ + "/") + "_control/upload-index/";
  const std::string cutoff = Micros20(now_micros - grace_micros);
  int64_t removed = 0;
  std::string after;
  for (;;) {
    ASSIGN_OR_RETURN(ListPage page, store_->List(root, after, 1000));
    for (const ObjectInfo& o : page.objects) {
      const size_t slash = o.key.rfind('/');
      if (o.key.size() != slash + 1 + 20 + 1 + Ulid::kTextLength ||
          o.key.compare(slash + 1, 20, cutoff) >= 0) {
        continue;  // not expired long enough (or not an entry)
      }
      const std::string id = o.key.substr(slash + 22);
      Result<UploadRecord> r = Get(id);
      if (!r.ok() && !r.status().IsNotFound()) return r.status();
      // Never submitted (a validated one waits for its load: the staging
      // sweep removes it past the staging grace).
      if (r.ok() && r->run_id.empty() && r->validated_by.empty()) {
        RETURN_NOT_OK(Delete(id));
        ++removed;
      }
      RETURN_NOT_OK(store_->Delete(o.key));
    }
    if (!page.truncated || page.objects.empty()) return removed;
    after = page.objects.back().key;
  }
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
