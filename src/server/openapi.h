// The API's OpenAPI 3.1 document: docs/openapi.yaml, compiled into the
// binary and served as JSON at /v1/openapi.json.
#pragma once

#include <string>

#include "loam/result.h"

namespace loam::server {

// The embedded YAML.
const std::string& OpenApiYaml();
// The document as JSON (plain YAML scalars that read as booleans, null or
// numbers become those; quoted ones stay strings).
Result<std::string> OpenApiJson();
// Any YAML text as JSON, by the same rules.
Result<std::string> YamlToJson(const std::string& yaml);

}  // namespace loam::server
