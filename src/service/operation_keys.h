// Idempotency keys of requests other than run submissions (pipeline
// creation, upload creation, cancel, revert): the first request's answer is
// kept with its fingerprint and replayed to a retry with the same key and
// bytes for the runs' retention. Records are
// "<root>/_control/operation-keys/<xxh3-128 of workspace, principal, key>.json"
// (docs/format/control.md); docs/service.md, "Idempotency beyond runs".
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "loam/object_store.h"
#include "loam/result.h"

namespace loam::service {

// An answer as the HTTP API gave it.
struct KeptAnswer {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // those a replay repeats (Location, ETag, …)
};

struct OperationKeyRecord {
  std::string principal;
  std::string key;
  std::string fingerprint;  // hex SHA-256 of the request (method, route, ids, body)
  int64_t created_micros = 0;
  int64_t expires_micros = 0;
  std::optional<KeptAnswer> answer;  // absent while the first request runs
};

// What Claim found: an answer to replay, or this request's reservation.
struct OperationClaim {
  std::optional<KeptAnswer> replay;
  OperationKeyRecord record;
  std::string etag;  // of the reservation
};

struct OperationKeyTimes {
  int64_t now_micros = 0;
  int64_t in_flight_grace_micros = 0;  // a reservation older than this is taken over
  int64_t retention_micros = 0;        // an answer is replayed this long
};

class OperationKeyStore {
 public:
  OperationKeyStore(std::shared_ptr<ObjectStore> store, std::string workspace_root,
                    std::string workspace_id);

  // The first request with (principal, key) reserves it. A later one with
  // the same fingerprint gets the kept answer, or request_in_flight while
  // the first runs; past the grace the first is taken to have died and the
  // reservation passes to this one. Another fingerprint:
  // idempotency_key_reused. An expired record counts as none.
  [[nodiscard]] Result<OperationClaim> Claim(const std::string& principal, const std::string& key,
                                             const std::string& fingerprint,
                                             const OperationKeyTimes& times);
  // Keeps `answer` for replays (over the reservation only).
  [[nodiscard]] Status Settle(const OperationClaim& claim, KeptAnswer answer);
  // Gives the key up (an answer a retry should not replay: 429, 5xx).
  [[nodiscard]] Status Release(const OperationClaim& claim);
  // One page of the retention sweep from `*cursor` ("" = the start; "" again
  // once the listing ended): removes expired records and reservations
  // abandoned for `abandoned_micros`. Returns how many went.
  [[nodiscard]] Result<int64_t> SweepPage(std::string* cursor, size_t limit, int64_t now_micros,
                                          int64_t abandoned_micros);

 private:
  std::string Prefix() const;
  std::string Key(const std::string& principal, const std::string& key) const;
  Status Reserve(OperationClaim* claim, const std::string* over_etag);

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::string workspace_id_;
};

}  // namespace loam::service
