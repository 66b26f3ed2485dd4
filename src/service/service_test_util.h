// Test fixture for the service: a workspace with table "orders" (keys id),
// principals with roles, and helpers that upload, submit and drain runs.
// On the s3 backend uploads go through real presigned PUTs to Ceph RGW.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "common/status_macros.h"
#include "common/ulid.h"
#include "io/fault_injection_object_store.h"
#include "io/http_client.h"
#include "io/test_store.h"
#include "service/service.h"
#include "service/staging.h"

namespace loam::service {

inline Schema OrdersSchema() {
  return Schema{{{"id", DataType::Int64(), false},
                 {"amount", DataType::Decimal(10, 2)},
                 {"note", DataType::String()}}};
}

// Two rows of OrdersSchema() as CSV.
inline const std::string kRows = "id,amount,note\n1,1.50,a\n2,2.50,b\n";

inline constexpr char kSecret[] = "0123456789abcdef0123456789abcdef-test";

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = testing::NewTestStore();
    InitWorkspace("svc" + std::to_string(::getpid()) + "-" + NewUlidString());
    clock_.SetMicros(Clock::System()->NowMicros());
    options_.workers = 0;
    options_.upload_secret = kSecret;
    options_.clock = &clock_;
    options_.queue_view_micros = 0;
    options_.lease_micros = 0;              // a run left by a "crashed" worker is free at once
    options_.run_retry_backoff_micros = 0;  // and one that failed an attempt too
  }

  void TearDown() override {
    svc_.reset();
    if (testing::TestBackendName() == "s3") {
      for (const ObjectInfo& o : store_->ListAll(root_ + "/").value()) {
        static_cast<void>(store_->Delete(o.key));
      }
    }
  }

  // A new workspace at `root` with table "orders" and the principals' roles.
  void InitWorkspace(const std::string& root) {
    root_ = root;
    WorkspaceOptions o;
    o.owner = "owner";
    o.recovery_grace_micros = 0;
    ws_ = WorkspaceEngine::Init(store_, root_, o).value();
    ASSERT_TRUE(ws_->CreateTable("orders", OrdersSchema(), {"id"}).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "ada", Role::kWriter).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "bob", Role::kWriter).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "rex", Role::kReader).ok());
    ASSERT_TRUE(ws_->SetGrant("orders", "adm", Role::kAdmin).ok());
  }

  Service& Svc() {
    if (!svc_) svc_ = Service::Open(ws_, options_).value();
    return *svc_;
  }
  CallContext Ctx(const std::string& principal) { return {ws_->id(), principal}; }

  // A new process on the same workspace: the service gone, the workspace
  // reopened with `failpoint` for its writes and for the next service.
  // A new process (workspace, service, loader owner), on `store` if given.
  void Restart(std::function<Status(std::string_view)> failpoint,
               std::shared_ptr<ObjectStore> store = nullptr) {
    svc_.reset();
    WorkspaceOptions wo;
    wo.owner = "owner";
    wo.recovery_grace_micros = 0;
    wo.failpoint = failpoint;
    ws_ = WorkspaceEngine::Open(store ? store : store_, root_, wo).value();
    options_.failpoint = std::move(failpoint);
  }
  // The workspace reopened through a fault-injecting wrapper of the store.
  std::shared_ptr<FaultInjectionObjectStore> ReopenFaulty() {
    svc_.reset();
    auto faulty = std::make_shared<FaultInjectionObjectStore>(store_);
    WorkspaceOptions wo;
    wo.recovery_grace_micros = 0;
    ws_ = WorkspaceEngine::Open(faulty, root_, wo).value();
    return faulty;
  }

  std::string MakePipeline(const std::string& spec, const std::string& who = "ada") {
    Result<Pipeline> p = Svc().CreatePipeline(Ctx(who), spec);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->id : "";
  }
  std::string AppendPipeline(const std::string& name = "orders-append") {
    return MakePipeline(R"({"name":")" + name + R"(","table":"orders","format":"csv"})");
  }

  // Creates an upload and sends `data` the way a client would.
  Result<std::string> Upload(const std::string& pipeline, const std::string& data,
                             const std::string& who = "ada", bool declare_sha = true) {
    UploadRequest r;
    r.size = data.size();
    if (declare_sha) r.sha256 = Sha256Hex(data);
    ASSIGN_OR_RETURN(UploadTicket t, Svc().CreateUpload(Ctx(who), pipeline, r));
    if (!t.url.empty()) {
      static HttpClient client(HttpOptions{});
      ASSIGN_OR_RETURN(HttpResponse got,
                       client.Send(HttpRequest{t.method, t.url, t.headers, data}));
      if (got.status != 200) return Status::Internal("presigned PUT: " + got.body);
      return t.upload_id;
    }
    StringSource body(data);
    RETURN_NOT_OK(Svc().AcceptUpload(t.upload_id, t.token, body));
    return t.upload_id;
  }

  Result<Submission> Submit(const std::string& pipeline, const std::string& key,
                            const std::string& body, const std::string& who = "ada") {
    return Svc().SubmitRun(Ctx(who), pipeline, key, body);
  }
  static std::string Body(const std::string& upload, const std::string& extra = "") {
    return R"({"uploads":[")" + upload + "\"]" + (extra.empty() ? "" : "," + extra) + "}";
  }

  // Runs workers until nothing is due; returns how many runs they finished.
  int Drain() {
    int n = 0;
    for (;;) {
      Result<bool> worked = Svc().RunWorkerOnce();
      EXPECT_TRUE(worked.ok()) << worked.status();
      if (!worked.ok() || !*worked) return n;
      ++n;
    }
  }

  // The run's record as stored (the service shows callers a RunInfo of it).
  ingest::RunRecord Run(const std::string& id) {
    return ingest::RunStore(ws_->store(), ws_->root()).Get(id).value();
  }

  // Every row as "id:amount-in-cents", sorted by id.
  std::string Contents() {
    Snapshot snap = ws_->Current().value();
    RecordBatch all = ws_->OpenTable(snap, snap.tables.begin()->first).value().ReadAll().value();
    std::map<int64_t, int64_t> rows;
    for (int64_t r = 0; r < all.num_rows(); ++r) {
      rows[all.columns[0].GetInt64(r)] = static_cast<int64_t>(all.columns[1].GetInt128(r).lo);
    }
    std::string out;
    for (const auto& [id, cents] : rows)
      out += std::to_string(id) + ":" + std::to_string(cents) + " ";
    return out;
  }

  int64_t CountUnder(const std::string& sub) {
    return static_cast<int64_t>(store_->ListAll(root_ + "/" + sub).value().size());
  }
  // run_commit rows in main's journal.
  int64_t RunCommits() {
    int64_t n = 0;
    for (const GraphCommitInfo& c : ws_->Log().value()) n += static_cast<int64_t>(c.run_ids.size());
    return n;
  }

  std::shared_ptr<ObjectStore> store_;
  std::string root_;
  std::shared_ptr<WorkspaceEngine> ws_;
  ManualClock clock_;
  ServiceOptions options_;
  std::unique_ptr<Service> svc_;
};

}  // namespace loam::service
