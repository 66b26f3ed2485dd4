// Early-return helpers for Status and Result<T>.
//
//   RETURN_NOT_OK(store->Delete(key));
//   ASSIGN_OR_RETURN(auto bytes, store->Get(key));
//   ASSIGN_OR_RETURN(meta, store->Head(key));          // existing variable
#pragma once

#include <utility>

#include "loam/result.h"
#include "loam/status.h"

#define LOAM_CONCAT_INNER(a, b) a##b
#define LOAM_CONCAT(a, b) LOAM_CONCAT_INNER(a, b)

#define RETURN_NOT_OK(expr)                                  \
  do {                                                       \
    ::loam::Status _loam_status = ::loam::ToStatus((expr));  \
    if (!_loam_status.ok()) return _loam_status;             \
  } while (false)

// As RETURN_NOT_OK, adding `where` to the status context on failure.
#define RETURN_NOT_OK_CTX(expr, where)                                     \
  do {                                                                     \
    ::loam::Status _loam_status = ::loam::ToStatus((expr));                \
    if (!_loam_status.ok()) return std::move(_loam_status).WithContext(where); \
  } while (false)

#define LOAM_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return std::move(tmp).status();   \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) \
  LOAM_ASSIGN_OR_RETURN_IMPL(LOAM_CONCAT(_loam_result_, __LINE__), lhs, expr)

namespace loam {

inline const Status& ToStatus(const Status& s) { return s; }
inline Status ToStatus(Status&& s) { return std::move(s); }
template <typename T>
Status ToStatus(const Result<T>& r) {
  return r.status();
}
template <typename T>
Status ToStatus(Result<T>&& r) {
  return std::move(r).status();
}

}  // namespace loam
