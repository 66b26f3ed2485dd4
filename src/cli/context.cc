#include "cli/context.h"

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>

#include "api/workspace_access.h"
#include "common/error_codes.h"
#include "common/principal.h"
#include "common/status_macros.h"

namespace loam::cli {

int ExitCodeFor(ErrorCode code) { return InfoOf(code).exit_code; }

int ExitCodeFor(const Status& s) { return ExitCodeFor(s.error_code()); }

namespace {
TestHooks& Hooks() {
  static TestHooks hooks;
  return hooks;
}
}  // namespace

void SetTestHooks(TestHooks hooks) { Hooks() = std::move(hooks); }

Result<std::shared_ptr<ObjectStore>> Context::Store() const {
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenObjectStore(root));
  if (Hooks().wrap_store) return Hooks().wrap_store(std::move(store));
  return store;
}

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoll(v) : fallback;
}

std::function<Status(std::string_view)> Context::CrashHook() {
  const char* at = std::getenv("LOAM_CRASH_AT");
  if (at == nullptr || *at == '\0') return {};
  // "<failpoint>#<n>": the n-th time the process reaches the failpoint.
  std::string point = at;
  int64_t nth = 1;
  if (const size_t hash = point.rfind('#'); hash != std::string::npos) {
    const std::string count = point.substr(hash + 1);
    nth = count.empty() || count.size() > 9 ||
                  count.find_first_not_of("0123456789") != std::string::npos
              ? 0
              : std::atoll(count.c_str());
    if (nth < 1) {
      std::cerr << "LOAM_CRASH_AT: '" << count << "' is not a count of 1 or more; no crash\n";
      return {};
    }
    point.resize(hash);
  }
  // One count per process, however many hooks its commands make.
  static std::atomic<int64_t> reached{0};
  return [point, nth](std::string_view p) {
    if (p != point || reached.fetch_add(1) + 1 != nth) return Status::OK();
    if (Hooks().before_crash) Hooks().before_crash();
    std::raise(SIGKILL);
    return Status::OK();
  };
}

Result<WorkspaceOptions> Context::Options() const {
  if (Status valid = CheckPrincipal(principal); !valid.ok()) {
    return Status::InvalidArgument(
        "LOAM_PRINCIPAL (or USER) " +
        nlohmann::json(principal).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
        " is not a valid principal: " + valid.message());
  }
  WorkspaceOptions options;
  options.owner = principal;  // read by Init only
  options.actor = principal;
  options.failpoint = CrashHook();
  options.sidecar_lease_micros =
      EnvInt("LOAM_SIDECAR_LEASE_MILLIS", options.sidecar_lease_micros / 1000) * 1000;
  options.recovery_grace_micros =
      EnvInt("LOAM_RECOVERY_GRACE_MILLIS", options.recovery_grace_micros / 1000) * 1000;
  return options;
}

std::function<void(Status)> Context::Runner(int* exit) const {
  return [this, exit](Status s) { *exit = s.ok() ? kExitOk : Report(*this, s); };
}

Result<std::shared_ptr<WorkspaceEngine>> Context::Open(bool recover) const {
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, Store());
  ASSIGN_OR_RETURN(WorkspaceOptions options, Options());
  options.recover_on_open = recover;
  Result<std::shared_ptr<WorkspaceEngine>> ws = WorkspaceEngine::Open(store, "", options);
  if (ws.status().IsNotFound()) {
    return Status::NotFound("no Loam workspace at '" + root +
                            "'; create one with 'loam init', or point --root / LOAM_ROOT at one");
  }
  return ws;
}

Result<std::unique_ptr<Workspace>> Context::OpenPublic(bool recover) const {
  ASSIGN_OR_RETURN(std::shared_ptr<WorkspaceEngine> engine, Open(recover));
  return internal::WorkspaceAccess::Wrap(std::move(engine), principal);
}

std::unique_ptr<Workspace> Context::Public(std::shared_ptr<WorkspaceEngine> engine) const {
  return internal::WorkspaceAccess::Wrap(std::move(engine), principal);
}

Result<std::shared_ptr<WorkspaceEngine>> Context::Init() const {
  ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, Store());
  ASSIGN_OR_RETURN(WorkspaceOptions options, Options());
  Result<std::shared_ptr<WorkspaceEngine>> ws = WorkspaceEngine::Init(store, "", options);
  if (ws.status().IsAlreadyExists()) {
    return Status::AlreadyExists("a workspace already exists at '" + root + "'");
  }
  return ws;
}

Result<std::unique_ptr<Workspace>> Context::InitPublic() const {
  ASSIGN_OR_RETURN(std::shared_ptr<WorkspaceEngine> engine, Init());
  return internal::WorkspaceAccess::Wrap(std::move(engine), principal);
}

int Report(const Context& ctx, const Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  const int code = ExitCodeFor(s);
  if (ctx.json) {
    nlohmann::json error = {{"code", std::string(ErrorCodeName(s.error_code()))},
                            {"category", std::string(StatusCodeName(s.code()))},
                            {"message", s.message()},
                            {"exitCode", code}};
    if (const std::string_view oldest = s.detail("oldestVersion"); !oldest.empty()) {
      error["oldestVersion"] = std::stoll(std::string(oldest));
    }
    std::cout << nlohmann::json{{"error", error}}.dump() << "\n";
  }
  return code;
}

}  // namespace loam::cli
