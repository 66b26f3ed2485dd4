#include "service/operation_keys.h"

#include <nlohmann/json.hpp>

#include "common/hash.h"
#include "common/json_parse.h"
#include "common/logging.h"
#include "common/status_macros.h"

namespace loam::service {
namespace {

using json = nlohmann::json;

std::string Encode(const OperationKeyRecord& r) {
  json j = {{"format", 1},
            {"key", r.key},
            {"principal", r.principal},
            {"fingerprint", r.fingerprint},
            {"createdMicros", r.created_micros},
            {"expiresMicros", r.expires_micros}};
  if (r.answer) {
    j["answer"] = {
        {"status", r.answer->status}, {"body", r.answer->body}, {"headers", r.answer->headers}};
  }
  return j.dump();
}

Result<OperationKeyRecord> Decode(std::string_view text) {
  const std::string what = "operation key record";
  Result<json> j = ParseJsonObject(text, what);
  if (!j.ok()) return Status::DataLoss("malformed " + what + ": " + j.status().message());
  if (IntegerAt(*j, "format") != 1) return Status::DataLoss("unknown " + what + " format");
  OperationKeyRecord r;
  try {
    r.key = j->at("key");
    r.principal = j->at("principal");
    r.fingerprint = j->at("fingerprint");
    r.created_micros = j->at("createdMicros");
    r.expires_micros = j->at("expiresMicros");
    if (auto a = j->find("answer"); a != j->end()) {
      r.answer = KeptAnswer{a->at("status"), a->at("body"),
                            a->at("headers").get<std::map<std::string, std::string>>()};
    }
  } catch (const json::exception& e) {
    return Status::DataLoss("malformed " + what + ": " + e.what());
  }
  return r;
}

}  // namespace

OperationKeyStore::OperationKeyStore(std::shared_ptr<ObjectStore> store, std::string workspace_root,
                                     std::string workspace_id)
    : store_(std::move(store)),
      root_(std::move(workspace_root)),
      workspace_id_(std::move(workspace_id)) {}

std::string OperationKeyStore::Prefix() const {
  return (root_.empty() ? "" : root_ + "/") + "_control/operation-keys/";
}

std::string OperationKeyStore::Key(const std::string& principal, const std::string& key) const {
  return Prefix() + Hash128Hex(workspace_id_ + '\0' + principal + '\0' + key) + ".json";
}

Status OperationKeyStore::Reserve(OperationClaim* claim, const std::string* over_etag) {
  const std::string key = Key(claim->record.principal, claim->record.key);
  const std::string text = Encode(claim->record);
  ASSIGN_OR_RETURN(ObjectMeta meta, over_etag ? store_->PutIfMatch(key, text, *over_etag)
                                              : store_->PutIfAbsent(key, text));
  claim->etag = meta.etag;
  return Status::OK();
}

Result<OperationClaim> OperationKeyStore::Claim(const std::string& principal,
                                                const std::string& key,
                                                const std::string& fingerprint,
                                                const OperationKeyTimes& times) {
  OperationClaim claim;
  claim.record = {
      principal,   key, fingerprint, times.now_micros, times.now_micros + times.retention_micros,
      std::nullopt};
  for (int attempt = 0; attempt < 4; ++attempt) {
    ObjectMeta meta;
    Result<std::string> text = store_->Get(Key(principal, key), &meta);
    if (text.status().IsNotFound()) {
      Status reserved = Reserve(&claim, nullptr);
      if (reserved.IsAlreadyExists()) continue;  // a twin reserved it first: look again
      RETURN_NOT_OK(reserved);
      return claim;
    }
    RETURN_NOT_OK(text.status());
    ASSIGN_OR_RETURN(OperationKeyRecord known, Decode(*text));
    if (known.key != key || known.principal != principal) {
      return Status::DataLoss("operation key record for another key (a hash collision?)");
    }
    const bool expired = known.answer && known.expires_micros < times.now_micros;
    const bool abandoned =
        !known.answer && times.now_micros - known.created_micros > times.in_flight_grace_micros;
    if (!expired && known.fingerprint != fingerprint) {
      return Status::FailedPrecondition("idempotency key '" + key +
                                        "' already belongs to a different request; use a new "
                                        "key, or repeat that request exactly")
          .WithErrorCode(ErrorCode::kIdempotencyKeyReused);
    }
    if (!expired && known.answer) {
      claim.replay = std::move(known.answer);
      return claim;
    }
    if (!expired && !abandoned) {
      return Status::FailedPrecondition("the first request with idempotency key '" + key +
                                        "' is still being answered; repeat it shortly")
          .WithErrorCode(ErrorCode::kRequestInFlight)
          .WithDetail("retryAfterMillis", "1000");
    }
    Status taken = Reserve(&claim, &meta.etag);
    if (taken.IsAborted() || taken.IsAlreadyExists()) continue;  // changed meanwhile
    RETURN_NOT_OK(taken);
    return claim;
  }
  return Status::Conflict("idempotency key '" + key + "' keeps changing; repeat the request");
}

Status OperationKeyStore::Settle(const OperationClaim& claim, KeptAnswer answer) {
  OperationKeyRecord r = claim.record;
  r.answer = std::move(answer);
  return store_->PutIfMatch(Key(r.principal, r.key), Encode(r), claim.etag).status();
}

Status OperationKeyStore::Release(const OperationClaim& claim) {
  // Only while it is still this reservation (read, then delete: the window
  // is one round trip, as for run reservations).
  ObjectMeta meta;
  Result<std::string> text = store_->Get(Key(claim.record.principal, claim.record.key), &meta);
  if (text.status().IsNotFound()) return Status::OK();
  RETURN_NOT_OK(text.status());
  if (meta.etag != claim.etag) return Status::OK();
  return store_->Delete(Key(claim.record.principal, claim.record.key));
}

Result<int64_t> OperationKeyStore::SweepPage(std::string* cursor, size_t limit, int64_t now_micros,
                                             int64_t abandoned_micros) {
  ASSIGN_OR_RETURN(ListPage page, store_->List(Prefix(), *cursor, limit));
  int64_t removed = 0;
  for (const ObjectInfo& o : page.objects) {
    ObjectMeta meta;
    Result<std::string> text = store_->Get(o.key, &meta);
    if (text.status().IsNotFound()) continue;
    RETURN_NOT_OK(text.status());
    Result<OperationKeyRecord> decoded = Decode(*text);
    if (!decoded.ok()) {  // left for an operator; the sweep goes on
      LOAM_LOG_WARN("operation key sweep: {}: {}", o.key, decoded.status().ToString());
      continue;
    }
    const OperationKeyRecord& r = *decoded;
    const bool gone =
        r.answer ? r.expires_micros < now_micros : now_micros - r.created_micros > abandoned_micros;
    if (!gone) continue;
    RETURN_NOT_OK(Release({std::nullopt, r, meta.etag}));
    ++removed;
  }
  *cursor = page.truncated ? page.objects.back().key : "";
  return removed;
}

}  // namespace loam::service
