// Api: Idempotency-Key on requests other than run submissions. The first
// answer is kept (with the headers a client acts on) and a retry with the
// same key and the same request gets it again, marked Idempotency-Replayed.
// Only a success is kept: a refusal did nothing, so a retry is checked
// afresh (and a 429 or 5xx retried does the work then).
#include "common/crypto.h"
#include "common/logging.h"
#include "server/api.h"

namespace loam::server {

Response Api::WithOperationKey(Call& c, RouteFn fn) {
  Result<std::string> key = OneHeader(c.header, "Idempotency-Key");
  if (!key.ok()) return Problem(key.status());
  if (key->empty()) return (this->*fn)(c);
  std::string request(c.header.method_string());
  request += '\0';
  request += c.target.path;
  request += '\0';
  request += c.body;
  Result<service::OperationClaim> claim = svc_->ClaimOperationKey(c.ctx, *key, Sha256Hex(request));
  if (!claim.ok()) return Problem(claim.status());
  if (claim->replay) {
    const service::KeptAnswer& kept = *claim->replay;
    Response r{static_cast<http::status>(kept.status), 11};
    for (const auto& [name, value] : kept.headers) r.set(name, value);
    r.body() = kept.body;
    r.prepare_payload();
    r.set("Idempotency-Replayed", "true");
    return r;
  }
  Response r = (this->*fn)(c);
  const int status = r.result_int();
  Status kept;
  if (status < 200 || status > 299) {
    kept = svc_->ReleaseOperationKey(*claim);
  } else {
    service::KeptAnswer answer{status, r.body(), {}};
    for (http::field f : {http::field::content_type, http::field::location, http::field::etag}) {
      if (auto it = r.find(f); it != r.end()) {
        answer.headers[std::string(it->name_string())] = std::string(it->value());
      }
    }
    kept = svc_->SettleOperationKey(*claim, std::move(answer));
  }
  // The work is done either way: a retry after a lost record repeats it.
  if (!kept.ok()) LOAM_LOG_WARN("idempotency key '{}': {}", *key, kept.ToString());
  return r;
}

}  // namespace loam::server
