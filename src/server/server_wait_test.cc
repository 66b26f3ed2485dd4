// GET /v1/runs/{id}?wait=N over real HTTP: a parked request is answered when
// its run ends in this process, when a cancel ends it, when another process
// ends it (the poll), when its wait runs out, and at shutdown.

#include <future>
#include <thread>

#include "server/server_test_util.h"

namespace loam::server {
namespace {

using nlohmann::json;

class RunWaitTest : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    config_.workers = 0;  // runs stay queued until the test works them
  }

  // A queued run of one row; its id.
  std::string QueuedRun(const std::string& key) {
    if (pipeline_.empty()) {
      HttpResult p = Call("ada", "POST", "/v1/pipelines", "/v1/pipelines",
                          R"({"name":"w","table":"orders","mode":"upsert","format":"csv"})");
      EXPECT_EQ(p.status, 201) << p.body;
      pipeline_ = p.Json()["id"];
    }
    const std::string upload = Upload(pipeline_, "id,amount,note\n1,1.00,a\n");
    HttpResult r = Submit(pipeline_, key, json{{"uploads", {upload}}}.dump());
    EXPECT_EQ(r.status, 202) << r.body;
    return r.Json()["id"];
  }

  // GET ?wait=N on its own connection; answered whenever the server answers.
  std::future<HttpResult> Wait(const std::string& run_id, int seconds) {
    Port();  // the server starts on this thread
    return std::async(std::launch::async, [this, run_id, seconds] {
      return Call("ada", "GET", "/v1/runs/" + run_id + "?wait=" + std::to_string(seconds),
                  "/v1/runs/{id}");
    });
  }

  // Until `n` requests are parked (each is parked once its run was read);
  // a park that never happens fails the test instead of hanging it.
  void UntilParked(size_t n) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (Srv().parked_requests() != n) {
      ASSERT_LT(std::chrono::steady_clock::now(), give_up) << "never parked";
      std::this_thread::yield();
    }
  }
  // Answered long before a 60 s wait ran out: woken, not timed out.
  static HttpResult Woken(std::future<HttpResult>& f) {
    EXPECT_EQ(f.wait_for(std::chrono::seconds(20)), std::future_status::ready)
        << "the answer waited for its deadline";
    return f.get();
  }

  std::string pipeline_;
};

TEST_F(RunWaitTest, AnsweredWhenItsRunEndsInThisProcess) {
  config_.run_wait_poll_millis = 3'600'000;  // only the run's end can wake it
  const std::string id = QueuedRun("k1");
  std::future<HttpResult> waiting = Wait(id, 60);
  std::future<HttpResult> second = Wait(id, 60);
  UntilParked(2);
  // Parked requests hold no handler thread: other requests are answered.
  EXPECT_EQ(Call("ada", "GET", "/v1/runs/" + id, "/v1/runs/{id}").Json()["state"], "queued");
  ASSERT_TRUE(Srv().service().RunWorkerOnce().value());
  for (std::future<HttpResult>* f : {&waiting, &second}) {
    const HttpResult r = Woken(*f);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.Json()["state"], "succeeded") << r.body;
    EXPECT_EQ(r.Json()["counters"]["inserted"], 1);
    EXPECT_FALSE(r.Header("request-id").empty());
  }
  EXPECT_EQ(Srv().parked_requests(), 0u);
}

TEST_F(RunWaitTest, ACancelEndsTheWait) {
  config_.run_wait_poll_millis = 3'600'000;
  const std::string id = QueuedRun("k1");
  std::future<HttpResult> waiting = Wait(id, 60);
  UntilParked(1);
  ASSERT_EQ(Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel").status, 200);
  const HttpResult r = Woken(waiting);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["state"], "cancelled");
}

TEST_F(RunWaitTest, ARunAnotherProcessEndsIsSeenByThePoll) {
  config_.run_wait_poll_millis = 20;
  const std::string id = QueuedRun("k1");
  std::future<HttpResult> waiting = Wait(id, 60);
  UntilParked(1);
  // A second service on the same workspace, as another `loam serve` would be.
  service::ServiceOptions other;
  other.upload_secret = std::string(kTestSecret) + "-other-process";
  std::unique_ptr<service::Service> svc = service::Service::Open(ws_, other).value();
  ASSERT_TRUE(svc->RunWorkerOnce().value());
  const HttpResult r = Woken(waiting);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["state"], "succeeded");
}

TEST_F(RunWaitTest, AWaitThatRunsOutAnswersTheRunAsItIs) {
  config_.run_wait_poll_millis = 3'600'000;  // only deadlines end these waits
  const std::string id = QueuedRun("k1");
  std::future<HttpResult> longer = Wait(id, 60);  // parked first, with the later deadline
  UntilParked(1);
  const auto asked = std::chrono::steady_clock::now();
  std::future<HttpResult> shorter = Wait(id, 1);
  // It waited (its one second), then answered the run as it was, before the
  // longer wait parked ahead of it.
  const HttpResult r = Woken(shorter);
  EXPECT_GE(std::chrono::steady_clock::now() - asked, std::chrono::milliseconds(900));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["state"], "queued");
  EXPECT_EQ(r.Json()["queuePosition"], 0);
  EXPECT_EQ(Srv().parked_requests(), 1u);
  server_->Shutdown();
  EXPECT_EQ(Woken(longer).Json()["state"], "queued");
}

TEST_F(RunWaitTest, ShutdownAnswersEveryParkedRequest) {
  config_.run_wait_poll_millis = 3'600'000;
  const std::string id = QueuedRun("k1");
  std::future<HttpResult> waiting = Wait(id, 60);
  UntilParked(1);
  server_->Shutdown();
  const HttpResult r = Woken(waiting);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.Json()["state"], "queued");
  EXPECT_EQ(Srv().parked_requests(), 0u);
}

TEST_F(RunWaitTest, TerminalRunsAndBadWaitsAnswerAtOnce) {
  const std::string id = QueuedRun("k1");
  ASSERT_EQ(Call("ada", "POST", "/v1/runs/" + id + "/cancel", "/v1/runs/{id}/cancel").status, 200);
  const HttpResult done = Wait(id, 60).get();  // terminal: not parked
  EXPECT_EQ(done.Json()["state"], "cancelled");
  for (const std::string bad : {"61", "-1", "soon", ""}) {
    const HttpResult r = Call("ada", "GET", "/v1/runs/" + id + "?wait=" + bad, "/v1/runs/{id}");
    EXPECT_EQ(r.status, 400) << bad << ": " << r.body;
    EXPECT_EQ(r.Json()["code"], "invalid_argument") << r.body;
    EXPECT_NE(r.Json()["detail"].get<std::string>().find("wait"), std::string::npos) << r.body;
  }
  // Another caller's wait is refused as its read would be, before any park.
  const HttpResult hidden = Call("nobody", "GET", "/v1/runs/" + id + "?wait=30", "/v1/runs/{id}");
  EXPECT_EQ(hidden.status, 403) << hidden.body;
  EXPECT_EQ(hidden.Json()["code"], "permission_denied") << hidden.body;
  EXPECT_EQ(Srv().parked_requests(), 0u);
}

}  // namespace
}  // namespace loam::server
