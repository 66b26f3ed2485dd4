// Idempotency keys of run submissions and deletes: a key reserved before
// answers with its run (a replay), refuses another request, or tells the
// caller to wait for or finish the creation its first request began.
#include "common/status_macros.h"
#include "service/service.h"

namespace loam::service {

using ingest::RunRecord;

Result<Submission> Service::Replay(const RequestRecord& r, const std::string& fingerprint) {
  if (r.fingerprint != fingerprint) {
    return Status::FailedPrecondition("idempotency key '" + r.key + "' already belongs to run " +
                                      r.run_id +
                                      " with a different request; use a new key, or repeat that "
                                      "run's exact request")
        .WithErrorCode(ErrorCode::kIdempotencyKeyReused)
        .WithDetail("run", r.run_id);
  }
  ASSIGN_OR_RETURN(RunRecord run, loader_->runs().Get(r.run_id));
  return Submission{ViewOf(run), /*replayed=*/true};
}

Result<std::optional<Submission>> Service::AnswerKnownKey(const RequestRecord& known,
                                                          const std::string& fingerprint,
                                                          int64_t now, bool* expired) {
  Result<Submission> replay = Replay(known, fingerprint);
  if (replay.ok()) return std::optional<Submission>(*std::move(replay));
  if (!replay.status().IsNotFound()) return replay.status();
  if (now - known.created_micros < options_.in_flight_grace_micros) {
    return Status::FailedPrecondition("the first request with idempotency key '" + known.key +
                                      "' is still being accepted; repeat it shortly")
        .WithErrorCode(ErrorCode::kRequestInFlight)
        .WithDetail("run", known.run_id)
        .WithDetail("retryAfterMillis", "1000");
  }
  *expired = known.expires_micros < now;
  // Past its retention the key's run may have been swept (run records go
  // after their key): the request is a new one, as the retention says.
  if (*expired) RETURN_NOT_OK(requests_.Delete(known));
  return std::optional<Submission>();
}

}  // namespace loam::service
