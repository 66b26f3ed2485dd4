// Status: the outcome of an operation that can fail, with a canonical code.
//
// Every fallible Loam call returns a Status or a Result<T> (see result.h);
// no exception crosses a layer boundary. An OK status carries no allocation.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <string_view>

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
};

std::string_view StatusCodeName(StatusCode code);

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

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
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
  };
  std::unique_ptr<State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& s);
std::ostream& operator<<(std::ostream& os, StatusCode c);

}  // namespace loam
