#include "loam/status.h"

#include <cstdio>
#include <cstdlib>

#include "loam/result.h"

namespace loam {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kAborted:
      return "Aborted";
    case StatusCode::kFailedPrecondition:
      return "FailedPrecondition";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kDataLoss:
      return "DataLoss";
    case StatusCode::kPermissionDenied:
      return "PermissionDenied";
    case StatusCode::kResourceExhausted:
      return "ResourceExhausted";
    case StatusCode::kInternal:
      return "Internal";
    case StatusCode::kUnimplemented:
      return "Unimplemented";
    case StatusCode::kUnauthenticated:
      return "Unauthenticated";
  }
  return "Unknown";
}

ErrorCode ErrorCodeFromName(std::string_view name) {
  for (int c = 0; c <= static_cast<int>(kLastErrorCode); ++c) {
    if (ErrorCodeName(static_cast<ErrorCode>(c)) == name) return static_cast<ErrorCode>(c);
  }
  return ErrorCode::kInternal;
}

ErrorCode DefaultErrorCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return ErrorCode::kNone;
    case StatusCode::kInvalidArgument:
      return ErrorCode::kInvalidArgument;
    case StatusCode::kNotFound:
      return ErrorCode::kNotFound;
    case StatusCode::kAlreadyExists:
      return ErrorCode::kAlreadyExists;
    case StatusCode::kAborted:
      return ErrorCode::kConflict;  // a lost compare-and-swap
    case StatusCode::kFailedPrecondition:
      return ErrorCode::kPreconditionFailed;
    case StatusCode::kUnavailable:
      return ErrorCode::kUnavailable;
    case StatusCode::kDataLoss:
      return ErrorCode::kDataLoss;
    case StatusCode::kPermissionDenied:
      return ErrorCode::kPermissionDenied;
    case StatusCode::kResourceExhausted:
      return ErrorCode::kLimitExceeded;
    case StatusCode::kInternal:
      return ErrorCode::kInternal;
    case StatusCode::kUnimplemented:
      return ErrorCode::kUnimplemented;
    case StatusCode::kUnauthenticated:
      return ErrorCode::kUnauthenticated;
  }
  return ErrorCode::kInternal;
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_unique<State>(State{code, std::move(message), {}});
  }
}

Status::Status(const Status& other)
    : state_(other.state_ ? std::make_unique<State>(*other.state_) : nullptr) {}

Status& Status::operator=(const Status& other) {
  if (this != &other) state_ = other.state_ ? std::make_unique<State>(*other.state_) : nullptr;
  return *this;
}

#define LOAM_STATUS_FACTORY(Name) \
  Status Status::Name(std::string msg) { return Status(StatusCode::k##Name, std::move(msg)); }
LOAM_STATUS_FACTORY(InvalidArgument)
LOAM_STATUS_FACTORY(NotFound)
LOAM_STATUS_FACTORY(AlreadyExists)
LOAM_STATUS_FACTORY(Aborted)
LOAM_STATUS_FACTORY(FailedPrecondition)
LOAM_STATUS_FACTORY(Unavailable)
LOAM_STATUS_FACTORY(DataLoss)
LOAM_STATUS_FACTORY(PermissionDenied)
LOAM_STATUS_FACTORY(ResourceExhausted)
LOAM_STATUS_FACTORY(Internal)
LOAM_STATUS_FACTORY(Unimplemented)
LOAM_STATUS_FACTORY(Unauthenticated)
#undef LOAM_STATUS_FACTORY

Status Status::Conflict(std::string msg) {
  return FailedPrecondition(std::move(msg)).WithErrorCode(ErrorCode::kConflict);
}

ErrorCode Status::error_code() const {
  if (!state_) return ErrorCode::kNone;
  return state_->error != ErrorCode::kNone ? state_->error : DefaultErrorCode(state_->code);
}

Status Status::WithErrorCode(ErrorCode e) const& { return Status(*this).WithErrorCode(e); }

Status Status::WithErrorCode(ErrorCode e) && {
  if (state_) state_->error = e;
  return std::move(*this);
}

Status Status::WithDetail(std::string key, std::string value) const& {
  return Status(*this).WithDetail(std::move(key), std::move(value));
}

Status Status::WithDetail(std::string key, std::string value) && {
  if (!state_) return std::move(*this);
  for (auto& [k, v] : state_->details) {
    if (k == key) {
      v = std::move(value);
      return std::move(*this);
    }
  }
  state_->details.emplace_back(std::move(key), std::move(value));
  return std::move(*this);
}

std::string_view Status::detail(std::string_view key) const {
  if (!state_) return {};
  for (const auto& [k, v] : state_->details) {
    if (k == key) return v;
  }
  return {};
}

Status Status::WithMessage(std::string message) const {
  Status out(*this);
  if (out.state_) out.state_->message = std::move(message);
  return out;
}

namespace {
const std::string& EmptyString() {
  static const std::string* empty = new std::string();
  return *empty;
}
}  // namespace

const std::string& Status::message() const { return state_ ? state_->message : EmptyString(); }
const std::string& Status::context() const { return state_ ? state_->context : EmptyString(); }

Status Status::WithContext(std::string_view where) const& {
  return Status(*this).WithContext(where);
}

Status Status::WithContext(std::string_view where) && {
  if (state_ && !where.empty()) {
    std::string& ctx = state_->context;
    ctx = ctx.empty() ? std::string(where) : std::string(where) + "; " + ctx;
  }
  return std::move(*this);
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code()));
  out += ": ";
  out += state_->message;
  if (!state_->context.empty()) out += " (" + state_->context + ")";
  return out;
}

void Status::CheckOK() const {
  if (!ok()) {
    std::fprintf(stderr, "loam: unexpected error: %s\n", ToString().c_str());
    std::abort();
  }
}

std::ostream& operator<<(std::ostream& os, const Status& s) { return os << s.ToString(); }
std::ostream& operator<<(std::ostream& os, StatusCode c) { return os << StatusCodeName(c); }

namespace internal {
void DieOnBadResultAccess(const Status& status) {
  std::fprintf(stderr, "loam: value() on a failed Result: %s\n", status.ToString().c_str());
  std::abort();
}
}  // namespace internal

}  // namespace loam
