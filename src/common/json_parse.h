// ParseJson: JSON text to a value under one rule nlohmann's parser does not
// keep: an object names each key once. Parsers disagree on which of two
// values wins (the first, the last, or an error), so text that a proxy or
// another service in front of Loam reads one way must not be read another
// way here. Every JSON Loam parses (requests, tokens, configuration, control
// records) goes through it; JSON Lines data has its own parser, which keeps
// the same rule.
#pragma once

#include <nlohmann/json.hpp>
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

}  // namespace loam
