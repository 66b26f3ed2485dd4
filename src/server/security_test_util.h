// Fixture of the hostile-input tests (security_test.cc,
// security_data_test.cc): ServerTest plus pipelines, uploads, submissions,
// and views of what the workspace holds (staging objects, upload records,
// files on disk) to show a refused request left nothing behind.
#pragma once

#include <set>
#include <utility>

#include "server/server_test_util.h"
#include "service/staging.h"

namespace loam::server {

inline constexpr char kCsvPipeline[] =
    R"({"name":"orders-in","table":"orders","mode":"upsert","format":"csv"})";

class SecurityTest : public ServerTest {
 protected:
  using json = nlohmann::json;

  std::string MakePipeline(const std::string& spec = kCsvPipeline, const std::string& sub = "ada") {
    HttpResult r = Call(sub, "POST", "/v1/pipelines", "/v1/pipelines", spec);
    EXPECT_EQ(r.status, 201) << r.body;
    const json j = r.Json();
    return j.is_object() ? j.value("id", "") : "";
  }

  // An upload ticket for `data` (its size and SHA-256 declared).
  json Ticket(const std::string& pipeline, const std::string& data, const std::string& sub = "ada",
              bool declare_sha = true) {
    json req = {{"size", data.size()}};
    if (declare_sha) req["sha256"] = Sha256Hex(data);
    HttpResult t = Call(sub, "POST", "/v1/pipelines/" + pipeline + "/uploads",
                        "/v1/pipelines/{id}/uploads", req.dump());
    EXPECT_EQ(t.status, 201) << t.body;
    return t.Json();
  }
  // The ticket's URL as a target on this server.
  std::string Target(const json& ticket) {
    return ticket["url"].get<std::string>().substr(Srv().url().size());
  }
  static std::string TokenOf(const json& ticket) {
    const std::string url = ticket["url"];
    return url.substr(url.find("token=") + 6);
  }
  HttpResult Put(const std::string& target, const std::string& data) {
    return Call("", "PUT", target, "/v1/uploads/{uploadId}", data);
  }
  // Creates an upload and PUTs `data` to it; the upload id.
  std::string Upload(const std::string& pipeline, const std::string& data,
                     const std::string& sub = "ada") {
    const json ticket = Ticket(pipeline, data, sub);
    HttpResult put = Put(Target(ticket), data);
    EXPECT_EQ(put.status, 200) << put.body;
    return ticket["uploadId"];
  }

  HttpResult SubmitInline(const std::string& pipeline, const std::string& key,
                          const std::string& data, const std::string& type = "text/csv",
                          Headers extra = {}) {
    extra.emplace_back("Content-Type", type);
    extra.emplace_back("Idempotency-Key", key);
    return Call("ada", "POST", "/v1/pipelines/" + pipeline + "/runs", "/v1/pipelines/{id}/runs",
                data, extra);
  }

  // The run once the queue is empty.
  json WaitRun(const std::string& run_id) {
    EXPECT_TRUE(Srv().service().WaitForEmptyQueue(std::chrono::seconds(120)).ok());
    HttpResult r = Call("ada", "GET", "/v1/runs/" + run_id, "/v1/runs/{id}");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.Json();
  }
  // Submits inline data and waits for its run to end.
  json LoadInline(const std::string& pipeline, const std::string& key, const std::string& data,
                  const std::string& type = "text/csv") {
    HttpResult r = SubmitInline(pipeline, key, data, type);
    EXPECT_EQ(r.status, 202) << r.body;
    const json j = r.Json();
    if (!j.is_object() || !j.contains("id")) return json();
    return WaitRun(j["id"]);
  }

  // (version, rowCount) of a table, as the owner sees it.
  std::pair<int64_t, int64_t> TableState(const std::string& name = "orders") {
    HttpResult r = Call("owner", "GET", "/v1/tables/" + name, "/v1/tables/{name}");
    EXPECT_EQ(r.status, 200) << r.body;
    const json j = r.Json();
    if (!j.is_object()) return {-1, -1};
    return {j.value("version", int64_t{-1}), j.value("rowCount", int64_t{-1})};
  }
  std::string Rows(const std::string& name = "orders") {
    HttpResult r = Call("owner", "GET", "/v1/tables/" + name + "/rows", "/v1/tables/{name}/rows");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.body;
  }

  // Object keys under `prefix` in the workspace's store.
  std::set<std::string> Keys(const std::string& prefix) {
    std::set<std::string> out;
    for (const ObjectInfo& o : store_->ListAll(prefix).value()) out.insert(o.key);
    return out;
  }
  // Staging objects and upload records left once the cleaner has run over
  // every terminal run (staging keys: src/service/staging.h).
  std::set<std::string> LeftBehind() {
    EXPECT_TRUE(Srv().service().RunCleanerOnce().ok());
    std::set<std::string> out = Keys("ingestion-staging/");
    for (const std::string& k : Keys("_control/uploads/")) out.insert(k);
    return out;
  }
  // Every file under the fixture's directory (the workspace and beside it).
  // The background cleaner may remove a directory mid-walk: walk again.
  std::set<std::string> FilesOnDisk() {
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::set<std::string> out;
      std::error_code ec;
      std::filesystem::recursive_directory_iterator it(dir_, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        out.insert(it->path().lexically_relative(dir_).string());
      }
      if (!ec) return out;
    }
    ADD_FAILURE() << "no complete walk of " << dir_;
    return {};
  }
};

// What `after` holds that `before` did not, one per line; "" when nothing
// was added (the background cleaner may still remove emptied directories).
inline std::string Added(const std::set<std::string>& before, const std::set<std::string>& after) {
  std::string out;
  for (const std::string& k : after) {
    if (!before.count(k)) out += k + "\n";
  }
  return out;
}

// A 4xx problem document: a refusal, not a crash or a server error.
inline ::testing::AssertionResult IsClientProblem(const HttpResult& r) {
  if (r.status < 400 || r.status > 499) {
    return ::testing::AssertionFailure() << "status " << r.status << ": " << r.body;
  }
  if (r.Header("content-type") != "application/problem+json") {
    return ::testing::AssertionFailure() << "content-type " << r.Header("content-type");
  }
  const nlohmann::json j = r.Json();
  if (!j.is_object() || !j.contains("code")) {
    return ::testing::AssertionFailure() << "not a problem: " << r.body;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace loam::server
