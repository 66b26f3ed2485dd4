// Upload records: "<root>/_control/uploads/<upload_id>.json", one per upload
// capability handed out, binding the upload to its pipeline, principal,
// exact staging key, declared size and checksum (docs/format/control.md).
#pragma once

#include <memory>
#include <string>

#include "loam/object_store.h"

namespace loam::service {

struct UploadRecord {
  std::string id;  // ULID
  std::string pipeline_id;
  std::string principal;
  int64_t table_sid = 0;
  std::string key;     // the staging object
  std::string prefix;  // its upload prefix (what cleanup deletes)
  uint64_t size = 0;   // declared
  std::string sha256;  // declared ("" = not declared)
  std::string content_type;
  std::string file_name;  // the client's name for the data ("" = none given)
  int64_t created_micros = 0;
  int64_t expires_micros = 0;
  // Set when the server saw the bytes (local workspaces: AcceptUpload).
  std::string received_sha256;
  // The run that loads it, once submitted ("" = none yet).
  std::string run_id;
  // The one validationOnly run that checked it ("" = none): an upload is
  // validated at most once and loaded at most once, in that order.
  std::string validated_by;

  std::string ToJson() const;
  static Result<UploadRecord> FromJson(std::string_view text);
};

// A principal's outstanding uploads (handed out, not yet submitted).
struct OutstandingUploads {
  int64_t count = 0;                   // unexpired, up to the limit asked for
  int64_t earliest_expiry_micros = 0;  // of those counted (0 = none)
};

class UploadStore {
 public:
  UploadStore(std::shared_ptr<ObjectStore> store, std::string workspace_root);
  // The record and its entry in the principal's outstanding index,
  // "<root>/_control/upload-index/<xxh3-128 of the principal>/<expiry µs,
  // 20 digits>-<id>", written first: a crash leaves at most an entry that
  // expires.
  Status Create(const UploadRecord& r);
  // The record alone, no index entry: an upload the service staged itself,
  // submitted by the same request, is never outstanding.
  Status CreateRecord(const UploadRecord& r);
  // Unexpired entries of `principal`'s index at `now`, counting at most
  // `limit` + 1 (one LIST request for limits up to 999).
  Result<OutstandingUploads> CountOutstanding(const std::string& principal, int64_t now_micros,
                                              int64_t limit) const;
  // Drops `r`'s index entry (it was submitted); a lost delete only counts
  // it until it expires.
  Status ForgetOutstanding(const UploadRecord& r);
  // Through the index (which holds only uploads not yet submitted, so its
  // size is bounded by the outstanding cap): removes the records never
  // submitted whose expiry is more than `grace_micros` past, and the index
  // entries as old. Returns the records removed.
  Result<int64_t> SweepExpired(int64_t now_micros, int64_t grace_micros);
  // NotFound for ids that are not ULIDs too: an id never reaches a key unchecked.
  Result<UploadRecord> Get(const std::string& id, std::string* etag = nullptr) const;
  // Aborted when it changed since `etag` was read.
  Status Update(const UploadRecord& r, const std::string& etag);
  Status Delete(const std::string& id);
  std::string Key(const std::string& id) const;

 private:
  std::string IndexPrefix(const std::string& principal) const;
  std::string IndexKey(const UploadRecord& r) const;

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
};

}  // namespace loam::service
