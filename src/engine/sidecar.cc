#include "engine/sidecar.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/json_parse.h"

namespace loam {
namespace {
using json = nlohmann::json;
constexpr int kSidecarFormat = 1;
constexpr int kGroupSidecarFormat = 2;   // format 1 plus "group"
constexpr int kJoinedSidecarFormat = 3;  // a group whose runs' rows were joined: "rows"

int SidecarFormat(const Sidecar& s) {
  if (s.group.empty()) return kSidecarFormat;
  return s.group.front().rows > 0 ? kJoinedSidecarFormat : kGroupSidecarFormat;
}
}  // namespace

std::string SidecarPrefix(const std::string& workspace) {
  return (workspace.empty() ? std::string() : workspace + "/") + "_recovery/";
}

bool IsSidecarKey(const std::string& workspace, const std::string& key) {
  const std::string prefix = SidecarPrefix(workspace);
  return key.starts_with(prefix) && key.ends_with(".json") &&
         key.find('/', prefix.size()) == std::string::npos;
}

std::string UnreadableSidecarKey(const std::string& workspace, const std::string& key) {
  return SidecarPrefix(workspace) + "unreadable/" + key.substr(SidecarPrefix(workspace).size());
}

std::string SidecarKey(const std::string& workspace, const std::string& operation_id) {
  return SidecarPrefix(workspace) + operation_id + ".json";
}

bool Sidecar::Records(const std::string& run) const {
  if (run.empty()) return false;
  if (run_id == run) return true;
  for (const SidecarRun& r : group) {
    if (r.id == run) return true;
  }
  return false;
}

int64_t SidecarDueAt(const Sidecar& s, int64_t grace_micros) {
  const int64_t aged = s.created_micros + grace_micros;
  return s.lease_until_micros > 0 ? std::min(s.lease_until_micros, aged) : aged;
}

std::string EncodeSidecar(const Sidecar& s) {
  json j = {{"format", SidecarFormat(s)},
            {"operation_id", s.operation_id},
            {"branch", s.branch},
            {"commit_id", s.commit_id},
            {"rollback_commit_id", s.rollback_commit_id},
            {"run_id", s.run_id},
            {"actor", s.actor},
            {"created_micros", s.created_micros},
            {"sid", s.sid},
            {"inc", s.inc},
            {"fork", s.fork},
            {"owner_branch", s.owner_branch},
            {"expected_version", s.expected_version},
            {"expected_owner_ref", s.expected_owner_ref},
            {"new_table_def", s.new_table_def},
            {"planned_txn", s.planned_txn}};
  if (s.lease_until_micros > 0) j["lease_until_micros"] = s.lease_until_micros;
  if (!s.group.empty()) {
    json group = json::array();
    for (const SidecarRun& r : s.group) {
      json run = {{"id", r.id}, {"fragments", r.fragments}};
      if (r.rows > 0) run["rows"] = r.rows;
      group.push_back(std::move(run));
    }
    j["group"] = std::move(group);
  }
  return j.dump(2);
}

Result<Sidecar> DecodeSidecar(std::string_view text, const std::string& key) {
  json j = ParseJson(text);
  if (j.is_discarded() || !j.is_object() || !j.contains("format")) {
    return Status::DataLoss("sidecar '" + key + "' is not valid JSON");
  }
  if (j["format"] != kSidecarFormat && j["format"] != kGroupSidecarFormat &&
      j["format"] != kJoinedSidecarFormat) {
    return Status::FailedPrecondition("sidecar '" + key + "' has format " + j["format"].dump() +
                                      "; this build reads formats 1 to 3")
        .WithErrorCode(ErrorCode::kUnsupportedFormat);
  }
  for (const char* field : {"created_micros", "sid", "inc", "expected_version"}) {
    if (!IntegerAt(j, field)) {
      return Status::DataLoss("sidecar '" + key + "' needs an integer \"" + field + "\"");
    }
  }
  try {
    Sidecar s;
    s.operation_id = j.at("operation_id").get<std::string>();
    s.branch = j.at("branch").get<std::string>();
    s.commit_id = j.at("commit_id").get<std::string>();
    s.rollback_commit_id = j.at("rollback_commit_id").get<std::string>();
    s.run_id = j.at("run_id").get<std::string>();
    s.actor = j.at("actor").get<std::string>();
    s.created_micros = j.at("created_micros").get<int64_t>();
    s.sid = j.at("sid").get<int64_t>();
    s.inc = j.at("inc").get<int64_t>();
    s.fork = j.at("fork").get<std::string>();
    s.owner_branch = j.at("owner_branch").get<std::string>();
    s.expected_version = j.at("expected_version").get<int64_t>();
    s.expected_owner_ref = j.at("expected_owner_ref").get<std::string>();
    s.new_table_def = j.at("new_table_def").get<std::string>();
    s.planned_txn = j.at("planned_txn").get<std::string>();
    // A malformed lease is ignored (due after the grace period): the rest
    // of the sidecar may be a live writer's, which moving it aside as torn
    // would not respect.
    const std::optional<int64_t> lease = IntegerAt(j, "lease_until_micros");
    if (lease && *lease > 0) s.lease_until_micros = *lease;
    if (j["format"] != kSidecarFormat) {
      for (const json& r : j.at("group")) {
        const std::optional<int64_t> fragments =
            r.is_object() ? IntegerAt(r, "fragments") : std::nullopt;
        if (!fragments) {
          return Status::DataLoss("sidecar '" + key + "' has a group run without \"fragments\"");
        }
        const std::optional<int64_t> rows = IntegerAt(r, "rows");
        if (r.contains("rows") != (rows && *rows > 0 && *fragments == 0)) {
          return Status::DataLoss("sidecar '" + key + "' has a group run with malformed \"rows\"");
        }
        s.group.push_back({r.at("id").get<std::string>(), *fragments, rows.value_or(0)});
      }
      // Format 3 gives every run its rows; format 2 none.
      const bool joined = j["format"] == kJoinedSidecarFormat;
      if (!std::all_of(s.group.begin(), s.group.end(),
                       [&](const SidecarRun& r) { return (r.rows > 0) == joined; })) {
        return Status::DataLoss("sidecar '" + key + "' has format " + j["format"].dump() +
                                (joined ? " with a run without" : " with a run with") +
                                " \"rows\"");
      }
      if (s.group.empty() || s.group.front().id != s.run_id) {
        return Status::DataLoss("sidecar '" + key +
                                "' has a group that does not start with its run");
      }
    }
    return s;
  } catch (const json::exception& e) {  // nlohmann's typed getters throw; contained here
    return Status::DataLoss("sidecar '" + key + "' is malformed: " + e.what());
  }
}

}  // namespace loam
