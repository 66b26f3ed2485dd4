#include "common/error_codes.h"

#include <array>

namespace loam {
namespace {

// Indexed by ErrorCode's value, in its order. Exit codes: 0 ok, 1 a run
// failed, 2 usage, 3 conflict, 4 not found, 5 denied, 6 limit, 7 corrupt,
// 9 format, 10 internal (8, a partial run, is no error code's).
constexpr std::array<ErrorCodeInfo, static_cast<size_t>(kLastErrorCode) + 1> kErrorCodes = {{
    {ErrorCode::kNone, "ok", 200, 0},
    {ErrorCode::kInvalidArgument, "invalid_argument", 400, 2},
    {ErrorCode::kValidationFailed, "validation_failed", 422, 1},
    {ErrorCode::kDuplicateKey, "duplicate_key", 422, 1},
    {ErrorCode::kLimitExceeded, "limit_exceeded", 422, 6},
    {ErrorCode::kNotFound, "not_found", 404, 4},
    {ErrorCode::kAlreadyExists, "already_exists", 409, 3},
    {ErrorCode::kPermissionDenied, "permission_denied", 403, 5},
    {ErrorCode::kConflict, "conflict", 409, 3},
    {ErrorCode::kSchemaConflict, "schema_conflict", 409, 3},
    {ErrorCode::kPreconditionFailed, "precondition_failed", 412, 3},
    {ErrorCode::kIdempotencyKeyReused, "idempotency_key_reused", 422, 3},
    {ErrorCode::kRequestInFlight, "request_in_flight", 409, 3},
    {ErrorCode::kRunAlreadyCommitted, "run_already_committed", 409, 3},
    {ErrorCode::kUnsupportedFormat, "unsupported_format", 500, 9},
    {ErrorCode::kUnavailable, "unavailable", 503, 10},
    {ErrorCode::kDataLoss, "data_loss", 500, 7},
    {ErrorCode::kInternal, "internal", 500, 10},
    {ErrorCode::kUnimplemented, "unimplemented", 501, 10},
    {ErrorCode::kIdempotencyKeyRequired, "idempotency_key_required", 400, 2},
    {ErrorCode::kSourceAlreadyLoaded, "source_already_loaded", 409, 3},
    {ErrorCode::kOverloaded, "overloaded", 429, 3},
    {ErrorCode::kUnauthenticated, "unauthenticated", 401, 5},
    {ErrorCode::kMigrationRequired, "migration_required", 500, 9},
    {ErrorCode::kRevertBlocked, "revert_blocked", 409, 3},
    {ErrorCode::kMethodNotAllowed, "method_not_allowed", 405, 2},
    {ErrorCode::kVersionExpired, "version_expired", 410, 4},
    {ErrorCode::kPipelinePaused, "pipeline_paused", 429, 3},
    {ErrorCode::kMergeCheckFailed, "merge_check_failed", 422, 1},
}};

constexpr bool InEnumOrder() {
  for (size_t i = 0; i < kErrorCodes.size(); ++i) {
    if (static_cast<size_t>(kErrorCodes[i].code) != i) return false;
  }
  return true;
}
static_assert(InEnumOrder(), "kErrorCodes must list every ErrorCode in its order");

}  // namespace

const ErrorCodeInfo& InfoOf(ErrorCode code) {
  const auto i = static_cast<size_t>(code);
  return i < kErrorCodes.size() ? kErrorCodes[i]
                                : kErrorCodes[static_cast<size_t>(ErrorCode::kInternal)];
}

std::string_view ErrorCodeName(ErrorCode code) { return InfoOf(code).name; }

}  // namespace loam
