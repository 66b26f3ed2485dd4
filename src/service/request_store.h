// The durable halves of two of the three identities (docs/service.md, "Submitting a run: three
// identities"), both under "<root>/_control/" (docs/format/control.md):
//
//   requests/<hash>.json               idempotency key -> fingerprint, run id
//   sources/<pipeline>/<hash>.json     source identity -> the run that loaded it
//
// Both are created with put-if-absent, so exactly one request binds a key
// and exactly one run claims a source; later changes are put-if-match.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loam/object_store.h"

namespace loam::service {

struct RequestRecord {
  std::string key;          // the client's idempotency key
  std::string principal;    // its scope, with the workspace
  std::string fingerprint;  // SHA-256 of body, pipeline and operation
  std::string run_id;       // the run it creates (minted before the run exists)
  int64_t created_micros = 0;
  int64_t expires_micros = 0;  // kept at least until then
  // An inline request: the uploads it staged its data in before reserving
  // the key; a retry that finishes its creation uses them, not a new copy.
  std::vector<std::string> staged_uploads;
};

struct SourceRecord {
  std::string source_id;  // the client's source.id
  std::string sha256;     // the server's digest of the uploaded bytes
  std::string run_id;     // the run that claimed it
  bool loaded = false;    // that run succeeded
  int64_t created_micros = 0;
  int64_t expires_micros = 0;  // loaded records: kept at least until then
};

// The records' JSON (docs/format/control.md). A decoder refuses, with
// DataLoss, anything but format 1 with every field of its type.
std::string EncodeRequestRecord(const RequestRecord& r);
Result<RequestRecord> DecodeRequestRecord(std::string_view text);
std::string EncodeSourceRecord(const SourceRecord& r);
Result<SourceRecord> DecodeSourceRecord(std::string_view text);

class RequestStore {
 public:
  RequestStore(std::shared_ptr<ObjectStore> store, std::string workspace_root,
               std::string workspace_id);

  Result<std::optional<RequestRecord>> Find(const std::string& principal, const std::string& key,
                                            std::string* etag = nullptr) const;
  // AlreadyExists when the key is bound.
  Status Reserve(const RequestRecord& r);
  // Replaces a reservation whose request never created its run (Aborted on a race).
  Status TakeOver(const RequestRecord& r, const std::string& etag);
  // Removes the reservation while it still names `r.run_id`.
  Status Delete(const RequestRecord& r);
  // A page of records for the retention sweep: at most `limit` with keys
  // after the cursor `after` ("" = from the first); `next` continues the
  // listing, "" once it ended.
  template <typename T>
  struct Page {
    std::vector<T> records;
    std::string next;
  };
  Result<Page<RequestRecord>> RequestsPage(const std::string& after, size_t limit) const;

  Result<std::optional<SourceRecord>> FindSource(const std::string& pipeline_id,
                                                 const std::string& source_id,
                                                 const std::string& sha256,
                                                 std::string* etag = nullptr) const;
  // AlreadyExists when another run claimed it; with `etag`, replaces that claim.
  Status PutSource(const std::string& pipeline_id, const SourceRecord& r,
                   const std::string* etag = nullptr);
  Status DeleteSource(const std::string& pipeline_id, const SourceRecord& r);
  // A page of source records (as RequestsPage), each with its pipeline id.
  Result<Page<std::pair<std::string, SourceRecord>>> SourcesPage(const std::string& after,
                                                                 size_t limit) const;

 private:
  std::string RequestKey(const std::string& principal, const std::string& key) const;
  std::string SourceKey(const std::string& pipeline_id, const std::string& source_id,
                        const std::string& sha256) const;
  std::string Prefix(const char* what) const;

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::string workspace_id_;
};

}  // namespace loam::service
