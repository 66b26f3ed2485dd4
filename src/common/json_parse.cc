#include "common/json_parse.h"

#include <limits>
#include <set>
#include <vector>

namespace loam {
namespace {

using nlohmann::json;
using Event = json::parse_event_t;

// Parses `text`, setting *repeated when an object in it names a key twice:
// such an object ends with fewer members than the keys it was given. One
// counter per open object, so the common case allocates almost nothing.
json ParseCounting(std::string_view text, bool* repeated) {
  std::vector<size_t> keys;
  json::parser_callback_t count = [&](int, Event e, json& parsed) {
    if (e == Event::object_start) {
      keys.push_back(0);
    } else if (e == Event::key) {
      ++keys.back();
    } else if (e == Event::object_end) {
      *repeated = *repeated || parsed.size() != keys.back();
      keys.pop_back();
    }
    return true;
  };
  return json::parse(text.begin(), text.end(), count, /*allow_exceptions=*/false);
}

// The first key some object in `text` names twice (only called when one does).
std::string FirstRepeatedKey(std::string_view text) {
  std::vector<std::set<std::string>> open;
  std::string first;
  json::parser_callback_t find = [&](int, Event e, json& parsed) {
    if (e == Event::object_start) {
      open.emplace_back();
    } else if (e == Event::key) {
      const std::string& key = parsed.get_ref<const std::string&>();
      if (!open.back().insert(key).second && first.empty()) first = key;
    } else if (e == Event::object_end) {
      open.pop_back();
    }
    return true;
  };
  const json ignored = json::parse(text.begin(), text.end(), find, /*allow_exceptions=*/false);
  return first;
}

}  // namespace

json ParseJson(std::string_view text, std::string* problem) {
  bool repeated = false;
  json j = ParseCounting(text, &repeated);
  if (j.is_discarded()) {
    if (problem != nullptr) *problem = "not valid JSON";
    return j;
  }
  if (repeated) {
    if (problem != nullptr) {
      *problem = "key " + json(FirstRepeatedKey(text)).dump() + " appears twice in one object";
    }
    return json(json::value_t::discarded);
  }
  return j;
}

std::optional<int64_t> IntegerAt(const json& j, std::string_view key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() &&
      it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return std::nullopt;
  }
  return it->get<int64_t>();
}

std::string StringAt(const json& j, std::string_view key, std::string_view fallback) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::string(fallback);
  return it->get<std::string>();
}

std::optional<std::string> OptionalStringAt(const json& j, std::string_view key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool BoolAt(const json& j, std::string_view key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

int64_t Int64At(const json& j, const char* key, int64_t min, int64_t max) {
  const json& member = j.at(key);
  const std::optional<int64_t> v = IntegerAt(j, key);
  if (!v || *v < min || *v > max) {
    throw json::type_error::create(302,
                                   std::string("\"") + key + "\" must be an integer from " +
                                       std::to_string(min) + " to " + std::to_string(max),
                                   &member);
  }
  return *v;
}

Result<json> ParseJsonObject(std::string_view text, std::string_view what) {
  std::string problem;
  json j = ParseJson(text, &problem);
  if (j.is_discarded()) return Status::InvalidArgument(std::string(what) + ": " + problem);
  if (!j.is_object()) return Status::InvalidArgument(std::string(what) + ": not a JSON object");
  return j;
}

}  // namespace loam
