// Status: the outcome of an operation that can fail, with a canonical code.
//
// Every fallible Loam call returns a Status or a Result<T> (see result.h);
// no exception crosses a layer boundary. An OK status carries no allocation.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loam {

// Canonical codes. Callers branch on the code, never on the message.
enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,     // the caller passed something malformed
  kNotFound = 2,            // the named object does not exist
  kAlreadyExists = 3,       // create-only operation found the object present
  kAborted = 4,             // lost a compare-and-swap; re-read and retry
  kFailedPrecondition = 5,  // state does not allow the operation (e.g. stale version)
  kUnavailable = 6,         // transient I/O failure; safe to retry
  kDataLoss = 7,            // checksum mismatch or corruption
  kPermissionDenied = 8,
  kResourceExhausted = 9,  // a limit was hit
  kInternal = 10,          // an invariant broke; a bug
  kUnimplemented = 11,
  kUnauthenticated = 12,  // no valid credentials (the server: a missing or bad token)
};

std::string_view StatusCodeName(StatusCode code);

// Stable, machine-readable error codes (docs/errors.md). The StatusCode is the
// canonical category; the ErrorCode names the rule that failed. Callers,
// retries, exit codes and HTTP statuses branch on it, never on a message.
// The names (ErrorCodeName) are a contract: add codes, never rename one.
enum class ErrorCode : int {
  kNone = 0,              // OK
  kInvalidArgument,       // a malformed request, flag or value
  kValidationFailed,      // input data broke the table's schema or a format rule
  kDuplicateKey,          // a declared key would hold two rows
  kLimitExceeded,         // a documented limit was hit
  kNotFound,              // the named object does not exist
  kAlreadyExists,         // a create found the object present
  kPermissionDenied,      // a missing grant, or a refused policy
  kConflict,              // a concurrent change; retrying can succeed
  kSchemaConflict,        // the table's schema changed since validation
  kPreconditionFailed,    // the state forbids the operation; a retry will not help
  kIdempotencyKeyReused,  // the key belongs to a different request
  kRequestInFlight,       // the same request is running elsewhere; wait, then repeat
  kRunAlreadyCommitted,   // the run's commit is already in the journal
  kUnsupportedFormat,     // data written by a newer (or too old) Loam
  kUnavailable,           // transient I/O trouble; safe to retry
  kDataLoss,              // corruption: checksum, missing or inconsistent rows
  kInternal,              // a bug
  kUnimplemented,
  kIdempotencyKeyRequired,  // a submission without its Idempotency-Key
  kSourceAlreadyLoaded,     // a succeeded run already loaded this source identity
  kOverloaded,              // admission is full: repeat the same request after Retry-After
  kUnauthenticated,         // no valid credentials: a missing, expired or bad token
  kMigrationRequired,       // the workspace is in an older or half-migrated format: loam migrate
  kRevertBlocked,           // later commits touched the run's table: revert those first
  kMethodNotAllowed,        // the HTTP method is not one the route serves
  kVersionExpired,          // a version past the time-travel window was removed
  kPipelinePaused,          // the pipeline is paused: repeat after Retry-After, once resumed
  kMergeCheckFailed,        // a check a merge carries failed on the source: nothing merged
};
// The highest ErrorCode value (for iteration).
inline constexpr ErrorCode kLastErrorCode = ErrorCode::kMergeCheckFailed;

std::string_view ErrorCodeName(ErrorCode code);
// The code named `name` (as ErrorCodeName spells it); kInternal when unknown.
ErrorCode ErrorCodeFromName(std::string_view name);
// The code a status of category `code` carries unless it names another.
ErrorCode DefaultErrorCode(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() noexcept = default;  // OK
  Status(StatusCode code, std::string message);
  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status InvalidArgument(std::string msg);
  static Status NotFound(std::string msg);
  static Status AlreadyExists(std::string msg);
  static Status Aborted(std::string msg);
  static Status FailedPrecondition(std::string msg);
  static Status Unavailable(std::string msg);
  static Status DataLoss(std::string msg);
  static Status PermissionDenied(std::string msg);
  static Status ResourceExhausted(std::string msg);
  static Status Internal(std::string msg);
  static Status Unimplemented(std::string msg);
  static Status Unauthenticated(std::string msg);
  // FailedPrecondition that a retry against the latest state can fix.
  static Status Conflict(std::string msg);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // The stable error code: the one set by WithErrorCode, else the category's
  // default (DefaultErrorCode).
  ErrorCode error_code() const;
  bool Is(ErrorCode e) const { return error_code() == e; }
  // This status with `e` as its error code. No-op on OK.
  Status WithErrorCode(ErrorCode e) const&;
  Status WithErrorCode(ErrorCode e) &&;
  // This status with detail `key` set to `value` (e.g. "retryAfterMillis",
  // "limit", "run"): machine-readable facts next to the message. No-op on OK.
  Status WithDetail(std::string key, std::string value) const&;
  Status WithDetail(std::string key, std::string value) &&;
  // The detail `key`, or "" when absent.
  std::string_view detail(std::string_view key) const;
  // Same category, error code and context; another message.
  Status WithMessage(std::string message) const;
  // Empty for OK.
  const std::string& message() const;
  // Where the failure happened, outermost first ("opening table t; reading k").
  // Empty when no context was added.
  const std::string& context() const;

  bool IsInvalidArgument() const { return code() == StatusCode::kInvalidArgument; }
  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsAlreadyExists() const { return code() == StatusCode::kAlreadyExists; }
  bool IsAborted() const { return code() == StatusCode::kAborted; }
  bool IsFailedPrecondition() const { return code() == StatusCode::kFailedPrecondition; }
  bool IsUnavailable() const { return code() == StatusCode::kUnavailable; }
  bool IsDataLoss() const { return code() == StatusCode::kDataLoss; }
  bool IsPermissionDenied() const { return code() == StatusCode::kPermissionDenied; }
  bool IsResourceExhausted() const { return code() == StatusCode::kResourceExhausted; }
  bool IsInternal() const { return code() == StatusCode::kInternal; }
  bool IsUnimplemented() const { return code() == StatusCode::kUnimplemented; }
  bool IsUnauthenticated() const { return code() == StatusCode::kUnauthenticated; }

  // Returns this status with `where` prepended to its context. No-op on OK.
  Status WithContext(std::string_view where) const&;
  Status WithContext(std::string_view where) &&;

  // "NotFound: no object 'a/b' (reading manifest; opening workspace)", or "OK".
  std::string ToString() const;

  // Aborts the process with the status text if not OK. For tests and for
  // places where failure is a proven impossibility.
  void CheckOK() const;

 private:
  struct State {
    StatusCode code;
    std::string message;
    std::string context;
    ErrorCode error = ErrorCode::kNone;  // kNone: the category's default
    std::vector<std::pair<std::string, std::string>> details;
  };
  std::unique_ptr<State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);
std::ostream& operator<<(std::ostream& os, StatusCode c);

}  // namespace loam
