// Floods over real sockets: upload bodies that stall, bodies sent without a
// valid token, and more body bytes than the server's room. Each is refused
// at once, the other routes keep answering, and nothing is lost.
#include <sys/socket.h>

#include "server/security_test_util.h"

namespace loam::server {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using nlohmann::json;

// Every blocking read of these tests ends within this: a server that holds
// a request fails the test instead of hanging it.
constexpr auto kPatience = std::chrono::seconds(5);

void BoundReads(tcp::socket& s) {
  const timeval tv{static_cast<time_t>(kPatience.count()), 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

// A request whose body stops part-way: its header, then the first `sent`
// bytes of its body, the rest held back until Finish.
class StalledRequest {
 public:
  // With `expect_continue`, returns once the server sent its interim 100:
  // the request is being handled.
  StalledRequest(uint16_t port, const std::string& head, std::string body, size_t sent,
                 bool expect_continue)
      : socket_(ioc_), body_(std::move(body)), sent_(sent) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    BoundReads(socket_);
    asio::write(socket_,
                asio::buffer(head + "Content-Length: " + std::to_string(body_.size()) + "\r\n" +
                             (expect_continue ? "Expect: 100-continue\r\n" : "") + "\r\n"));
    if (expect_continue) {
      beast::http::response_parser<beast::http::empty_body> interim;
      beast::error_code ec;
      beast::http::read_header(socket_, buffer_, interim, ec);
      continued_ = !ec && interim.get().result() == beast::http::status::continue_;
    }
    asio::write(socket_, asio::buffer(body_.data(), sent_));
  }
  bool continued() const { return continued_; }
  // Sends the rest of the body; the answer.
  HttpResult Finish() {
    beast::error_code ec;
    asio::write(socket_, asio::buffer(body_.data() + sent_, body_.size() - sent_), ec);
    return ReadAnswer();
  }
  // The answer the server gave without waiting for the rest (status 0 if none).
  HttpResult ReadAnswer() {
    beast::http::response_parser<beast::http::string_body> parser;
    beast::error_code ec;
    beast::http::read(socket_, buffer_, parser, ec);
    HttpResult out;
    if (ec) return out;
    out.status = static_cast<int>(parser.get().result_int());
    for (const auto& f : parser.get()) {
      std::string name(f.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    out.body = parser.get().body();
    return out;
  }

 private:
  asio::io_context ioc_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
  std::string body_;
  size_t sent_;
  bool continued_ = false;
};

class FloodTest : public SecurityTest {
 protected:
  std::string Head(const std::string& method, const std::string& target,
                   const std::string& sub = "", const std::string& type = "") {
    std::string head = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    if (!sub.empty()) head += "Authorization: Bearer " + Token(sub) + "\r\n";
    if (!type.empty()) head += "Content-Type: " + type + "\r\n";
    return head;
  }
  // `n` rows of CSV for the orders table, ids from `first`.
  static std::string Csv(int first, int n) {
    std::string csv = "id,amount,note\n";
    for (int i = first; i < first + n; ++i) csv += std::to_string(i) + ",1.00,row\n";
    return csv;
  }
  // The routes every client needs answer now (each read bounded).
  void ExpectOtherRoutesAnswer() {
    for (const char* target : {"/healthz", "/readyz", "/metrics", "/v1/tables"}) {
      asio::io_context ioc;
      tcp::socket s(ioc);
      s.connect({asio::ip::make_address("127.0.0.1"), Port()});
      BoundReads(s);
      asio::write(s, asio::buffer(Head("GET", target, "ada") + "\r\n"));
      beast::flat_buffer buffer;
      beast::http::response_parser<beast::http::string_body> parser;
      beast::error_code ec;
      beast::http::read(s, buffer, parser, ec);
      EXPECT_FALSE(ec) << target << " did not answer within " << kPatience.count() << " s";
      if (!ec) {
        EXPECT_EQ(parser.get().result_int(), 200u) << target;
      }
    }
  }
};

// Uploads take threads of their own (uploadThreads), a ticket one body at a
// time, a principal maxReceivingUploadsPerPrincipal: stalled bodies leave
// every other route answering, and each refusal is immediate and loses
// nothing. Two handler threads, so two stalled uploads on them would freeze
// the server.
TEST_F(FloodTest, StalledUploadsHoldOnlyUploadSlotsAndEveryExtraBodyIsRefusedAtOnce) {
  config_.http.handler_threads = 2;
  config_.http.upload_threads = 3;
  config_.limits.max_receiving_uploads_per_principal = 2;
  ASSERT_TRUE(ws_->SetGrant("orders", "bob", Role::kWriter).ok());
  const std::string pipeline = MakePipeline();
  std::vector<std::string> data;
  std::vector<json> tickets;
  for (int i = 0; i < 4; ++i) {
    data.push_back(Csv(i * 100, 50));
    tickets.push_back(Ticket(pipeline, data.back(), i < 3 ? "ada" : "bob"));
  }
  // ada's two bodies stall half-way, holding two of the three upload slots.
  std::vector<std::unique_ptr<StalledRequest>> stalled;
  for (int i = 0; i < 2; ++i) {
    stalled.push_back(std::make_unique<StalledRequest>(Port(), Head("PUT", Target(tickets[i])),
                                                       data[i], data[i].size() / 2, true));
    ASSERT_TRUE(stalled.back()->continued());
  }
  ExpectOtherRoutesAnswer();
  // The same ticket again while its body arrives: 409, at once.
  HttpResult twice = Put(Target(tickets[0]), data[0]);
  EXPECT_EQ(twice.status, 409) << twice.body;
  EXPECT_EQ(twice.Json()["code"], "conflict");
  // ada's third body: over her share of uploads, 429 with the limit named.
  HttpResult third = Put(Target(tickets[2]), data[2]);
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.Json()["limit"], "maxReceivingUploads") << third.body;
  EXPECT_FALSE(third.Header("retry-after").empty());
  // bob's body takes the last slot and stalls too; then every upload slot
  // is busy and a fourth body is refused from its header: 503.
  stalled.push_back(
      std::make_unique<StalledRequest>(Port(), Head("PUT", Target(tickets[3])), data[3], 10, true));
  ASSERT_TRUE(stalled.back()->continued());
  HttpResult full = Put(Target(tickets[2]), data[2]);
  EXPECT_EQ(full.status, 503) << full.body;
  EXPECT_EQ(full.Json()["code"], "unavailable");
  EXPECT_EQ(full.Header("retry-after"), "1");
  ExpectOtherRoutesAnswer();
  // The stalled bodies end; each was stored whole, and the refused ticket
  // takes its body now.
  for (auto& s : stalled) EXPECT_EQ(s->Finish().status, 200);
  EXPECT_EQ(Put(Target(tickets[2]), data[2]).status, 200);
  for (int i = 0; i < 4; ++i) {
    const std::string id = tickets[i]["uploadId"];
    HttpResult got =
        Call(i < 3 ? "ada" : "bob", "GET", "/v1/uploads/" + id, "/v1/uploads/{uploadId}");
    EXPECT_EQ(got.Json()["received"], true) << got.body;
  }
}

// A request without a valid token is answered from its header: the server
// never waits for (or holds) its body.
TEST_F(FloodTest, BodiesWithoutAValidTokenAreRefusedBeforeTheyAreRead) {
  const std::string pipeline = MakePipeline();
  const auto [version, rows] = TableState();
  const std::string target = "/v1/pipelines/" + pipeline + "/runs";
  const std::string bad_token = "Authorization: Bearer not.a.token\r\n";
  for (const std::string& auth : {std::string(), bad_token}) {
    std::string head = Head("POST", target, "", "text/csv") + auth + "Idempotency-Key: k-1\r\n";
    StalledRequest r(Port(), head, std::string(4 << 20, 'x'), 0, false);
    HttpResult answer = r.ReadAnswer();
    EXPECT_EQ(answer.status, 401) << answer.body;
    EXPECT_EQ(answer.Json()["code"], "unauthenticated");
    EXPECT_NE(answer.Header("www-authenticate").find("Bearer"), std::string::npos);
    EXPECT_EQ(answer.Header("connection"), "close");
  }
  EXPECT_EQ(TableState(), std::make_pair(version, rows));
}

// Bodies read whole share one room (maxBufferedBodyBytes): a request that
// would overfill it is refused with 503 + Retry-After before its body is
// read, and goes through once the room is free.
TEST_F(FloodTest, BodiesOverTheServersRoomAreRefusedUntilItFrees) {
  config_.http.max_buffered_bytes = 1 << 20;
  const std::string pipeline = MakePipeline();
  const std::string target = "/v1/pipelines/" + pipeline + "/runs";
  const std::string big = Csv(0, 45'000);  // ~0.65 MiB
  ASSERT_GT(big.size(), 600u << 10);
  StalledRequest held(Port(), Head("POST", target, "ada", "text/csv") + "Idempotency-Key: big\r\n",
                      big, big.size() / 2, true);
  ASSERT_TRUE(held.continued());
  const std::string small = Csv(100'000, 25'000);  // ~0.45 MiB: over what is left
  HttpResult refused = SubmitInline(pipeline, "small", small);
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_EQ(refused.Json()["code"], "unavailable");
  EXPECT_EQ(refused.Header("retry-after"), "1");
  ExpectOtherRoutesAnswer();  // bodiless requests need no room
  EXPECT_EQ(held.Finish().status, 202);
  // The room is free again: the same request is accepted, and both load.
  HttpResult again = SubmitInline(pipeline, "small", small);
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_EQ(WaitRun(again.Json()["id"])["state"], "succeeded");
  EXPECT_EQ(TableState().second, 70'000);
}

}  // namespace
}  // namespace loam::server
