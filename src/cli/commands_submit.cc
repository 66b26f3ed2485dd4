// `loam submit`: the C++ submit client (clients/cpp/) from the command line.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "clients/cpp/submit_client.h"
#include "common/json_parse.h"
#include "common/status_macros.h"

namespace loam::cli {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct SubmitFlags {
  std::string pipeline;
  std::vector<std::string> files;
  std::string server;
  std::string token_file;
  std::string source_id;
  bool wait = false;
  bool validate_first = false;
  bool resume = false;
  int64_t retry_for_seconds = 900;
};

Result<std::string> ReadToken(const std::string& file) {
  std::string token;
  if (!file.empty()) {
    std::ifstream in(file);
    if (!in) return Status::NotFound("cannot read the token file '" + file + "'");
    std::getline(in, token);
  } else if (const char* env = std::getenv("LOAM_TOKEN"); env != nullptr) {
    token = env;
  }
  if (token.empty()) return Status::InvalidArgument("give --token-file FILE or LOAM_TOKEN");
  return token;
}

// One progress line rewritten on a terminal; a line per change otherwise.
void ShowProgress(const std::string& run_id, const json& run, std::string* last) {
  const json& c = run["counters"];
  std::ostringstream line;
  line << "run " << run_id << ": " << StringAt(run, "state") << ", " << c["rowsRead"]
       << " rows read, " << c["inserted"] << " inserted, " << c["updated"] << " updated, "
       << c["rejected"] << " rejected";
  if (::isatty(2)) {
    std::cerr << "\r" << line.str() << "   " << std::flush;
  } else if (line.str() != *last) {
    std::cerr << line.str() << "\n";
  }
  *last = line.str();
}

// The exit code of a finished run.
int RunExitCode(const json& run) {
  const std::string state = StringAt(run, "state");
  if (state == "succeeded") return kExitOk;
  if (state == "partial") return kExitPartial;
  if (state == "cancelled") return kExitRunFailed;
  return ExitCodeFor(ErrorCodeFromName(StringAt(run, "errorCode", "internal")));
}

Status SubmitOne(const SubmitFlags& f, const fs::path& path, json state, int* exit) {
  ASSIGN_OR_RETURN(std::string token, ReadToken(StringAt(state, "tokenFile")));
  client::SubmitHooks hooks;
  hooks.failpoint = Context::CrashHook();
  hooks.log = [](const std::string& line) { std::cerr << "loam submit: " << line << "\n"; };
  client::Submitter s(path, state, token, hooks);
  ASSIGN_OR_RETURN(json run, s.Run(f.retry_for_seconds));
  const std::string id = run["id"];
  std::cerr << "run " << id << " " << run["state"].get<std::string>() << "\n";
  if (BoolAt(run, "validationOnly")) {  // --validate-first, and the data did not pass
    std::cout << run.dump() << "\n";
    *exit = RunExitCode(run);
    return Status::OK();
  }
  if (!f.wait && !BoolAt(state, "wait")) {
    std::cout << run.dump() << "\n";
    return Status::OK();
  }
  std::string last;
  ASSIGN_OR_RETURN(json done, s.Wait(id, [&](const json& r) { ShowProgress(id, r, &last); }));
  if (::isatty(2)) std::cerr << "\n";
  std::cout << done.dump() << "\n";
  *exit = RunExitCode(done);
  return Status::OK();
}

Status Submit(const SubmitFlags& f, int* exit) {
  if (f.resume) {
    std::error_code ec;
    int left = 0;
    for (const auto& entry : fs::directory_iterator(client::SubmissionStateDir(), ec)) {
      if (entry.path().extension() != ".json") continue;
      std::ifstream in(entry.path());
      const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
      json state = ParseJson(text);
      if (!state.is_object()) continue;
      std::cerr << "loam submit: resuming " << entry.path().filename().string() << "\n";
      Status s = SubmitOne(f, entry.path(), state, exit);
      if (!s.ok()) {
        std::cerr << "loam submit: " << s.message() << "\n";
        ++left;
      }
    }
    if (left > 0) return Status::Unavailable(std::to_string(left) + " submissions remain");
    return Status::OK();
  }
  if (f.pipeline.empty() || f.files.empty() || f.server.empty()) {
    return Status::InvalidArgument("submit takes PIPELINE FILE... --server URL (or --resume)");
  }
  json state;
  ASSIGN_OR_RETURN(fs::path path,
                   client::PrepareSubmission({f.server, f.pipeline, f.files, f.source_id,
                                              f.token_file, f.wait, f.validate_first},
                                             client::SubmissionStateDir(), &state));
  return SubmitOne(f, path, state, exit);
}

}  // namespace

void AddSubmitCommands(CLI::App& app, Context& ctx, int* exit) {
  auto run = ctx.Runner(exit);
  auto f = std::make_shared<SubmitFlags>();
  auto* submit = app.add_subcommand(
      "submit", "submit files to a pipeline of a loam serve server, retrying per the contract");
  submit->add_option("PIPELINE", f->pipeline, "pipeline id");
  submit->add_option("FILE", f->files, "files to load");
  submit->add_option("--server", f->server, "the server's URL, e.g. http://127.0.0.1:8080");
  submit->add_option("--token-file", f->token_file, "bearer token file (else LOAM_TOKEN)");
  submit->add_option("--source-id", f->source_id, "the source identity (one load per source)");
  submit->add_option("--retry-for", f->retry_for_seconds, "seconds of retrying before giving up");
  submit->add_flag("--wait", f->wait, "follow the run to its end; exit with the run's code");
  submit->add_flag("--validate-first", f->validate_first,
                   "validate the uploads in a run of their own; load them only if it succeeds");
  submit->add_flag("--resume", f->resume, "finish submissions a stopped client left");
  submit->callback([f, run, exit] {
    int code = kExitOk;
    Status s = Submit(*f, &code);
    run(s);
    if (s.ok()) *exit = code;
  });
}

}  // namespace loam::cli
