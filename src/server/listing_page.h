// ListingPage: one page of a listing answer (limit and cursor), shared by
// the routes that list tables, pipelines and branches.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status_macros.h"
#include "server/router.h"

namespace loam::server {

// One page of a listing: the items after `cursor` (by `key`, ascending) up
// to `limit`, as JSON under `field`, with "nextCursor" (null on the last
// page). Without `limit` the whole listing, as before pagination.
template <class T, class KeyFn, class JsonFn>
Result<nlohmann::json> ListingPage(std::vector<T> items, const Target& target, const char* field,
                                   const KeyFn& key, const JsonFn& to_json) {
  std::optional<int64_t> limit;
  std::string cursor;
  for (const auto& [name, value] : target.query) {
    if (name == "cursor") cursor = value;
    if (name == "limit") {
      ASSIGN_OR_RETURN(int64_t n, ParseQueryInt(name, value, 1, 1000));
      limit = n;
    }
  }
  std::sort(items.begin(), items.end(), [&](const T& a, const T& b) { return key(a) < key(b); });
  nlohmann::json page = nlohmann::json::array();
  nlohmann::json next;  // null: no page after this one
  std::string last;
  for (const T& item : items) {
    const std::string k = key(item);
    if (!cursor.empty() && k <= cursor) continue;
    if (limit && static_cast<int64_t>(page.size()) == *limit) {
      next = last;
      break;
    }
    page.push_back(to_json(item));
    last = k;
  }
  return nlohmann::json{{field, page}, {"nextCursor", next}};
}

}  // namespace loam::server
