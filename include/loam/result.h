// Result<T>: either a value of type T or a non-OK Status.
#pragma once

#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

#include "loam/status.h"

namespace loam {

namespace internal {
[[noreturn]] void DieOnBadResultAccess(const Status& status);
}  // namespace internal

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::decay_t<T>, Status>, "Result<Status> is meaningless");

 public:
  // A Result built from a status must carry an error: Result(Status::OK())
  // becomes Internal, so a caller cannot get an "ok" result without a value.
  Result(Status status)  // NOLINT(google-explicit-constructor)
      : v_(status.ok() ? Status::Internal("Result constructed from OK status")
                       : std::move(status)) {}
  Result(const T& value) : v_(value) {}        // NOLINT(google-explicit-constructor)
  Result(T&& value) : v_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, T> &&
                                                    !std::is_same_v<std::decay_t<U>, Status> &&
                                                    !std::is_same_v<std::decay_t<U>, Result<T>>>>
  Result(U&& value) : v_(T(std::forward<U>(value))) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 1; }

  // OK when a value is held.
  Status status() const& { return ok() ? Status::OK() : std::get<0>(v_); }
  Status status() && { return ok() ? Status::OK() : std::get<0>(std::move(v_)); }

  const T& value() const& { return CheckedValue(); }
  T& value() & { return CheckedValue(); }
  // By value, so `for (auto& x : F().value())` never dangles.
  T value() && { return std::move(CheckedValue()); }

  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

  T value_or(T fallback) const& { return ok() ? std::get<1>(v_) : std::move(fallback); }

 private:
  T& CheckedValue() {
    if (!ok()) internal::DieOnBadResultAccess(std::get<0>(v_));
    return std::get<1>(v_);
  }
  const T& CheckedValue() const {
    if (!ok()) internal::DieOnBadResultAccess(std::get<0>(v_));
    return std::get<1>(v_);
  }

  std::variant<Status, T> v_;
};

}  // namespace loam
