// StrictObject: reads one JSON object strictly. Every field has the type it
// must have, and a field the reader was not asked for is an error (Finish),
// so nothing a client sends is silently dropped.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loam/status.h"

namespace loam {

class StrictObject {
 public:
  StrictObject(const nlohmann::json& j, std::string where) : j_(j), where_(std::move(where)) {}

  const nlohmann::json* Field(const char* key) {
    seen_.push_back(key);
    auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  Status String(const char* key, std::string* out, bool required = false) {
    const nlohmann::json* v = Field(key);
    if (v == nullptr) return required ? Missing(key) : Status::OK();
    if (!v->is_string()) return Bad(key, "a string");
    *out = v->get<std::string>();
    return Status::OK();
  }
  Status Strings(const char* key, std::vector<std::string>* out) {
    const nlohmann::json* v = Field(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_array()) return Bad(key, "an array of strings");
    out->clear();
    for (const nlohmann::json& e : *v) {
      if (!e.is_string()) return Bad(key, "an array of strings");
      out->push_back(e.get<std::string>());
    }
    return Status::OK();
  }
  Status Bool(const char* key, bool* out) {
    const nlohmann::json* v = Field(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_boolean()) return Bad(key, "true or false");
    *out = v->get<bool>();
    return Status::OK();
  }
  template <typename T>
  Status Int(const char* key, T* out, int64_t min, int64_t max) {
    const nlohmann::json* v = Field(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_number_integer() || v->get<int64_t>() < min || v->get<int64_t>() > max ||
        (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(max))) {
      return Bad(key, "an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    *out = static_cast<T>(v->get<int64_t>());
    return Status::OK();
  }
  Status Number(const char* key, double* out, double min, double max) {
    const nlohmann::json* v = Field(key);
    if (v == nullptr) return Status::OK();
    if (!v->is_number() || v->get<double>() < min || v->get<double>() > max) {
      return Bad(
          key, "a number from " + nlohmann::json(min).dump() + " to " + nlohmann::json(max).dump());
    }
    *out = v->get<double>();
    return Status::OK();
  }
  // InvalidArgument naming the first field this reader was not asked for.
  Status Finish() const {
    for (const auto& [key, value] : j_.items()) {
      if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) {
        return Status::InvalidArgument(where_ + ": unknown field '" + key + "'");
      }
    }
    return Status::OK();
  }
  Status Bad(const char* key, const std::string& expected) const {
    return Status::InvalidArgument(where_ + ": \"" + key + "\" must be " + expected);
  }

 private:
  Status Missing(const char* key) const {
    return Status::InvalidArgument(where_ + ": \"" + key + "\" is required");
  }
  const nlohmann::json& j_;
  std::string where_;
  std::vector<std::string> seen_;
};

}  // namespace loam
