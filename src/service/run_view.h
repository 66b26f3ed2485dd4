// A run as the service shows it to its callers (the HTTP routes, metrics, an
// embedder): the public RunInfo (loam/run.h) of the loader's run record,
// without its lease, request text or inline input. The service's API
// returns RunInfo only, so its callers never depend on the loader's record.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "ingest/run_record.h"
#include "loam/run.h"

namespace loam::service {

RunInfo ViewOf(const ingest::RunRecord& run);
std::vector<RunInfo::Error> ErrorsOf(const std::vector<ingest::RunError>& errors);
// One error as the HTTP API and `loam runs errors --json` show it: file,
// reason, and code, line, offset and column when known.
nlohmann::json RunErrorJson(const RunInfo::Error& error);

// A run state's name (as RunInfo::state), or InvalidArgument naming the
// states for an unknown one.
Result<ingest::RunState> ParseRunState(std::string_view name);

}  // namespace loam::service
