// The C++ client of `loam serve` submissions (behind `loam submit`), beside
// the JavaScript client in clients/js/: it follows the retry contract of
// docs/server.md. A submission's state (its files' sizes and SHA-256, its
// idempotency key, upload tickets, the exact request) is written durably
// before each step, so a stopped client resumes it into exactly one run.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "io/http_client.h"
#include "loam/result.h"

namespace loam::client {

// Where submissions keep their state: $XDG_STATE_HOME/loam/submissions,
// else ~/.local/state/loam/submissions.
std::filesystem::path SubmissionStateDir();

struct NewSubmission {
  std::string server;  // e.g. http://127.0.0.1:8080
  std::string pipeline;
  std::vector<std::string> files;
  std::string source_id;   // one load per source identity; "" for none
  std::string token_file;  // recorded for a resume; "" = LOAM_TOKEN
  bool wait = false;       // recorded for a resume
  // A validationOnly run of the same uploads first; the load is submitted
  // only when it succeeds (docs/service.md, "Validate, then load").
  bool validate_first = false;
};

// Records `s` in `dir` (files hashed, a fresh idempotency key) before
// anything is sent; returns the state file, and the state in *state.
Result<std::filesystem::path> PrepareSubmission(const NewSubmission& s,
                                                const std::filesystem::path& dir,
                                                nlohmann::json* state);

// Whether a failed submission keeps its state for a resume: retries ran out,
// or the token was refused (a new one may finish it; the run may exist).
bool KeepState(const Status& s);

struct SubmitHooks {
  // Named failpoints (submit.after_upload_put, submit.after_send): crash
  // tests stop the process there, as if the answer were lost.
  std::function<Status(std::string_view)> failpoint;
  std::function<void(const std::string&)> log;  // one line per retry
};

class Submitter {
 public:
  Submitter(std::filesystem::path state_file, nlohmann::json state, std::string token,
            SubmitHooks hooks = {});

  // Uploads what is not uploaded, builds and persists the request once,
  // submits it until answered; returns the run (its state file is removed
  // once the submission is settled either way, or kept when KeepState).
  // With validateFirst, a validation that does not succeed is returned
  // (terminal) instead, and nothing is loaded.
  Result<nlohmann::json> Run(int64_t retry_for_seconds);
  // Follows the run until it is terminal through GET /v1/runs/{id}?wait=20
  // (`on_poll` sees every answer); returns its last document.
  Result<nlohmann::json> Wait(const std::string& run_id,
                              const std::function<void(const nlohmann::json& run)>& on_poll);

 private:
  Status UploadAll();
  // The validationOnly run of the uploads (its own key: the load's plus
  // ":validate"), followed to its end.
  Result<nlohmann::json> Validate();
  // Sends the exact request persisted under `field` with `key`; the 202 run.
  Result<nlohmann::json> SendRequest(const std::string& field, const std::string& key);
  // After a PUT answered "already received" (`refused`): OK when the upload
  // says its bytes arrived; otherwise an error that keeps the state.
  Status ConfirmReceived(const std::string& upload_id, const HttpResponse& refused);
  // One request with retries per the contract; the final answer.
  Result<HttpResponse> SendWithRetries(const HttpRequest& req);
  Status Fail(std::string_view point) const;
  std::string Url(const std::string& route) const {
    return state_["server"].get<std::string>() + route;
  }
  std::vector<std::pair<std::string, std::string>> Auth() const {
    return {{"Authorization", "Bearer " + token_}};
  }

  std::filesystem::path path_;
  nlohmann::json state_;
  std::string token_;
  SubmitHooks hooks_;
  HttpClient client_;
  std::chrono::steady_clock::time_point deadline_;
  std::mt19937_64 rng_{std::random_device{}()};
};

}  // namespace loam::client
