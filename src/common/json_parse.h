// ParseJson: JSON text to a value under one rule nlohmann's parser does not
// keep: an object names each key once. Parsers disagree on which of two
// values wins (the first, the last, or an error), so text that a proxy or
// another service in front of Loam reads one way must not be read another
// way here. Every JSON Loam parses (requests, tokens, configuration, control
// records) goes through it; JSON Lines data has its own parser, which keeps
// the same rule.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "loam/result.h"

namespace loam {

// The value `text` holds, or a discarded value (is_discarded()) when `text`
// is not JSON or an object in it names a key twice; *problem (if given) then
// says which, e.g. `key "sub" appears twice in one object`.
nlohmann::json ParseJson(std::string_view text, std::string* problem = nullptr);

// The JSON object `text` holds, else InvalidArgument "<what>: <problem>".
Result<nlohmann::json> ParseJsonObject(std::string_view text, std::string_view what);

// Member `key` of object `j` as an int64: nullopt when it is absent, not an
// integer JSON number, or outside int64. (nlohmann's get<int64_t>() converts
// a float, which is undefined past int64's range.)
std::optional<int64_t> IntegerAt(const nlohmann::json& j, std::string_view key);

// Member `key` of `j` as a string: `fallback` when `j` is not an object or
// the member is absent or not a string. Unlike nlohmann's value(), it never
// throws, so a decoder of stored or received bytes cannot be crashed by a
// field of the wrong type.
std::string StringAt(const nlohmann::json& j, std::string_view key, std::string_view fallback = {});

// Member `key` of `j` as a string: nullopt when it is absent or not a
// string (never throws), for decoders that refuse a missing field.
std::optional<std::string> OptionalStringAt(const nlohmann::json& j, std::string_view key);

// Member `key` of `j` is the JSON value true (never throws).
bool BoolAt(const nlohmann::json& j, std::string_view key);

// The same inside a decoder that reads a record's fields under one catch of
// nlohmann::json::exception: member `key` of `j` within [min, max], else
// json::out_of_range (absent) or json::type_error (anything else).
int64_t Int64At(const nlohmann::json& j, const char* key,
                int64_t min = std::numeric_limits<int64_t>::min(),
                int64_t max = std::numeric_limits<int64_t>::max());

}  // namespace loam
