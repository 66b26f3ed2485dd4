// The JSON of a merge and of a merge's revert, as `POST /v1/branches/{name}/merge`
// and `POST /v1/merges/{id}/revert` answer them and `loam merge --json` prints them
// (docs/openapi.yaml, MergeResult and MergeRevertResult).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "loam/merge.h"

namespace loam::server {

nlohmann::json MergeJson(const std::string& branch, const std::string& into, const MergeResult& r);
nlohmann::json MergeRevertJson(const std::string& into, const MergeRevertResult& r);

}  // namespace loam::server
