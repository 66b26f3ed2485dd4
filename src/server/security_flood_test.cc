// Floods and framing over real sockets: upload bodies that stall or
// trickle, idle sockets, bodies sent without a valid token, more body bytes
// than the server's room, unread row streams; and requests framed against
// RFC 9112 (smuggling through Transfer-Encoding, malformed chunks, Host).
// Each is refused at once, the other routes keep answering, nothing is lost.
#include <sys/socket.h>

#include <thread>

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

// A connection to the server from the loopback address `from` (all of
// 127/8 reaches the server, each a client of its own).
tcp::socket ConnectFrom(asio::io_context& ioc, uint16_t port, const char* from = "127.0.0.1") {
  tcp::socket s(ioc);
  s.open(tcp::v4());
  // A small receive window: an answer the client does not read stays on
  // the server's side (not in this socket's buffer).
  s.set_option(asio::socket_base::receive_buffer_size(64 << 10));
  s.bind({asio::ip::make_address(from), 0});
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  BoundReads(s);
  return s;
}

// What a GET on `s` answers (status 0 when none came before the bounded read ended).
int GetStatus(tcp::socket& s, const std::string& target, const std::string& token = "") {
  std::string head = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!token.empty()) head += "Authorization: Bearer " + token + "\r\n";
  beast::error_code ec;
  asio::write(s, asio::buffer(head + "\r\n"), ec);
  beast::flat_buffer buffer;
  beast::http::response_parser<beast::http::string_body> parser;
  parser.body_limit(1ull << 30);
  beast::http::read(s, buffer, parser, ec);
  return ec ? 0 : static_cast<int>(parser.get().result_int());
}

// How a connection the client keeps silent ends: eof when the server
// closed it, would_block when the bounded read gave up first.
beast::error_code WaitForClose(tcp::socket& s) {
  char c;
  beast::error_code ec;
  s.read_some(asio::buffer(&c, 1), ec);
  return ec;
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
  // The server has answered (bytes wait to be read).
  bool Answered() { return socket_.available() > 0; }
  // Sends `n` more bytes of the body; false when the server closed.
  bool Send(size_t n) {
    n = std::min(n, body_.size() - sent_);
    beast::error_code ec;
    asio::write(socket_, asio::buffer(body_.data() + sent_, n), ec);
    sent_ += n;
    return !ec;
  }
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
    return ec ? HttpResult() : ResultOf(parser.get());
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
  // Returns once `n` upload bodies hold their slots in the service (bounded).
  bool UploadsReceiving(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (Srv().service().UploadsReceiving() != n) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::yield();
    }
    return true;
  }
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
  ASSERT_TRUE(UploadsReceiving(2));  // both handlers hold their tickets
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
  ASSERT_TRUE(UploadsReceiving(3));
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

// One client (a source address) holds at most maxConnectionsPerClient
// connections: more are closed at once while other clients are served; a
// socket that never sends a request goes after firstRequestTimeout; and the
// health listener answers probes whatever the main listener carries.
TEST_F(FloodTest, IdleSocketsOfOneClientAreCappedAndProbesKeepTheirOwnListener) {
  config_.http.max_connections_per_client = 4;
  config_.http.first_request_timeout = std::chrono::hours(1);
  config_.health_listen = "127.0.0.1:0";
  asio::io_context ioc;
  std::vector<tcp::socket> idle;
  for (int i = 0; i < 4; ++i) idle.push_back(ConnectFrom(ioc, Port()));
  tcp::socket fifth = ConnectFrom(ioc, Port());
  EXPECT_EQ(WaitForClose(fifth), asio::error::eof);
  tcp::socket other = ConnectFrom(ioc, Port(), "127.0.0.2");
  EXPECT_EQ(GetStatus(other, "/healthz"), 200);
  for (const char* probe : {"/healthz", "/readyz", "/metrics"}) {
    tcp::socket s = ConnectFrom(ioc, Srv().health_port());
    EXPECT_EQ(GetStatus(s, probe), 200) << probe;
  }
  tcp::socket s = ConnectFrom(ioc, Srv().health_port());
  EXPECT_EQ(GetStatus(s, "/v1/tables", Token("ada")), 404);  // probes only there
}

TEST_F(FloodTest, SocketsThatNeverSendARequestAreClosedEarly) {
  config_.http.first_request_timeout = std::chrono::milliseconds(200);
  asio::io_context ioc;
  tcp::socket silent = ConnectFrom(ioc, Port());
  EXPECT_EQ(WaitForClose(silent), asio::error::eof);  // long before the 30 s header timeout
}

// A body slower than minTransferRate (after the grace) is answered 408 and
// stores nothing, whether it trickles or stalls (a stalled one as soon as the
// rate says so, not at the 30 s body timeout); the same ticket then takes its
// body at a normal pace.
TEST_F(FloodTest, UploadBodiesBelowTheMinimumRateAreCutOff) {
  config_.http.min_transfer_rate = 1 << 20;
  config_.http.rate_grace = std::chrono::milliseconds(100);
  const std::string pipeline = MakePipeline();
  const std::string data = Csv(0, 2000);
  const auto refused_then_taken = [&](const json& ticket, const HttpResult& answer) {
    EXPECT_EQ(answer.status, 408) << answer.body;
    EXPECT_EQ(answer.Json()["code"], "limit_exceeded");
    const std::string id = ticket["uploadId"];
    EXPECT_EQ(Call("ada", "GET", "/v1/uploads/" + id, "/v1/uploads/{uploadId}").Json()["received"],
              false);
    EXPECT_EQ(Put(Target(ticket), data).status, 200);
  };
  const json ticket = Ticket(pipeline, data);
  StalledRequest slow(Port(), Head("PUT", Target(ticket)), data, 100, true);
  ASSERT_TRUE(slow.continued());
  HttpResult answer;
  // The client's pace: 100 bytes every 30 ms (about 3 KB/s).
  for (size_t sent = 100; answer.status == 0 && sent + 100 < data.size(); sent += 100) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    if (!slow.Send(100) || slow.Answered()) answer = slow.ReadAnswer();
  }
  if (answer.status == 0) answer = slow.ReadAnswer();
  refused_then_taken(ticket, answer);

  const json other = Ticket(pipeline, data);
  StalledRequest stalled(Port(), Head("PUT", Target(other)), data, 100, true);
  ASSERT_TRUE(stalled.continued());
  refused_then_taken(other, stalled.ReadAnswer());  // no byte more is sent
}

// A principal reads at most maxStreamsPerPrincipal streamed answers at
// once (429 beyond, with the limit named), while another principal's
// stream is served; a reader slower than the minimum rate is cut off.
TEST_F(FloodTest, RowStreamsAreCappedPerPrincipalAndSlowReadersCutOff) {
  const std::string pipeline = MakePipeline();
  for (int i = 0; i < 2; ++i) {  // about 9 MB of rows: more than a socket's buffers hold
    EXPECT_EQ(LoadInline(pipeline, "k" + std::to_string(i), Csv(i * 100'000, 100'000))["state"],
              "succeeded");
  }
  config_.http.min_transfer_rate = 4 << 20;
  config_.http.rate_grace = std::chrono::milliseconds(100);
  server_.reset();
  asio::io_context ioc;
  const std::string rows = "/v1/tables/orders/rows";
  // Two streams begun (their heads read) and left unread.
  std::vector<tcp::socket> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(ConnectFrom(ioc, Port()));
    const std::string head = "GET " + rows + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                             Token("ada") + "\r\n\r\n";
    asio::write(held.back(), asio::buffer(head));
    beast::flat_buffer buffer;
    beast::http::response_parser<beast::http::string_body> parser;
    beast::error_code ec;
    beast::http::read_header(held.back(), buffer, parser, ec);
    ASSERT_FALSE(ec);
    ASSERT_EQ(parser.get().result_int(), 200u);
  }
  HttpResult third = Call("ada", "GET", rows, "/v1/tables/{name}/rows");
  EXPECT_EQ(third.status, 429) << third.body;
  EXPECT_EQ(third.Json()["limit"], "maxRowStreamsPerPrincipal");
  EXPECT_FALSE(third.Header("retry-after").empty());
  tcp::socket rex = ConnectFrom(ioc, Port());
  EXPECT_EQ(GetStatus(rex, rows, Token("rex")), 200);  // read whole at once
  // rex again, reading 16 KiB every 20 ms (at most 800 KiB/s): the
  // answer stops before its last chunk (the client still reads what the
  // sockets' buffers hold first).
  tcp::socket slow = ConnectFrom(ioc, Port());
  asio::write(slow, asio::buffer("GET " + rows + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                 Token("rex") + "\r\n\r\n"));
  // Raw reads: the answer is complete only if its last chunk came.
  std::string tail;
  std::vector<char> chunk(16 << 10);
  beast::error_code ec;
  size_t got = 0;
  while (!ec) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const size_t n = slow.read_some(asio::buffer(chunk), ec);
    got += n;
    tail = (tail + std::string(chunk.data(), n));
    if (tail.size() > 16) tail = tail.substr(tail.size() - 16);
  }
  for (tcp::socket& h : held) h.close();  // their writes fail: the server drains at once
  EXPECT_TRUE(ec == asio::error::eof || ec == asio::error::connection_reset) << ec.message();
  EXPECT_FALSE(tail.ends_with("\r\n0\r\n\r\n")) << "read " << got << " bytes whole, slowly";
}

// Everything the server sends on `s` until it closes (or the bounded read ends).
std::string ReadUntilClosed(tcp::socket& s) {
  std::string out;
  char buf[4096];
  beast::error_code ec;
  for (size_t n; (n = s.read_some(asio::buffer(buf), ec)), !ec;) out.append(buf, n);
  return out;
}

// The status lines in `answers`, in order.
std::vector<std::string> StatusLines(const std::string& answers) {
  std::vector<std::string> out;
  for (size_t at = answers.find("HTTP/1."); at != std::string::npos;
       at = answers.find("HTTP/1.", at + 1)) {
    if (at == 0 || answers.compare(at - 2, 2, "\r\n") == 0) out.push_back(answers.substr(at, 12));
  }
  return out;
}

// A Transfer-Encoding other than exactly "chunked" is refused (501 for a
// coding Loam does not take, 400 for a malformed one) and the connection
// closes: what follows is never read as another request.
TEST_F(FloodTest, TransferEncodingsOtherThanChunkedAreRefusedAndNothingIsSmuggled) {
  const std::string auth = "Authorization: Bearer " + Token("ada") + "\r\n";
  const std::string smuggled = "GET /v1/tables HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n";
  const std::vector<std::pair<std::string, int>> cases = {
      {"Transfer-Encoding: gzip\r\n", 501},
      {"Transfer-Encoding: identity\r\n", 501},
      {"Transfer-Encoding: chunked, gzip\r\n", 501},
      {"Transfer-Encoding: gzip, chunked\r\n", 501},
      {"Transfer-Encoding: \r\n", 400},
      {"Transfer-Encoding: \"chunked\"\r\n", 400},
      {"Transfer-Encoding: chunked, chunked\r\n", 400},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
  };
  asio::io_context ioc;
  for (const auto& [field, status] : cases) {
    tcp::socket s = ConnectFrom(ioc, Port());
    asio::write(s, asio::buffer("POST /v1/pipelines HTTP/1.1\r\nHost: x\r\n" + auth +
                                "Content-Type: application/json\r\n" + field + "\r\n" + smuggled));
    const std::vector<std::string> lines = StatusLines(ReadUntilClosed(s));
    ASSERT_EQ(lines.size(), 1u) << field;
    EXPECT_EQ(lines[0], "HTTP/1.1 " + std::to_string(status)) << field;
  }
  EXPECT_EQ(Call("ada", "GET", "/v1/pipelines", "/v1/pipelines").Json()["pipelines"].size(), 0u);
}

// Chunk sizes that are not plain hex within range are 400, not a silent close.
TEST_F(FloodTest, MalformedChunkSizesAre400) {
  asio::io_context ioc;
  for (const std::string size : {"11111111111111111", "-2", "0x2", " 2", "zz"}) {
    tcp::socket s = ConnectFrom(ioc, Port());
    asio::write(s, asio::buffer("POST /v1/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                Token("ada") +
                                "\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                                "chunked\r\n\r\n" +
                                size + "\r\n{}\r\n0\r\n\r\n"));
    const std::vector<std::string> lines = StatusLines(ReadUntilClosed(s));
    ASSERT_EQ(lines.size(), 1u) << size;
    EXPECT_EQ(lines[0], "HTTP/1.1 400") << size;
  }
}

// Host: exactly one in HTTP/1.1 (none is fine in HTTP/1.0); absolute-form
// targets are served; an HTTP/1.0 keep-alive answer says so and keeps the
// connection.
TEST_F(FloodTest, HostAbsoluteTargetsAndHttp10KeepAliveFollowTheRfc) {
  asio::io_context ioc;
  const auto once = [&](const std::string& request) {
    tcp::socket s = ConnectFrom(ioc, Port());
    asio::write(s, asio::buffer(request));
    const std::vector<std::string> lines = StatusLines(ReadUntilClosed(s));
    return lines.empty() ? std::string() : lines[0];
  };
  EXPECT_EQ(once("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n"), "HTTP/1.1 400");
  EXPECT_EQ(once("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n"),
            "HTTP/1.1 400");
  EXPECT_EQ(once("GET /healthz HTTP/1.0\r\n\r\n"), "HTTP/1.1 200");
  EXPECT_EQ(once("GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Connection: close\r\n\r\n"),
            "HTTP/1.1 200");
  tcp::socket s = ConnectFrom(ioc, Port());
  beast::flat_buffer buffer;
  for (int i = 0; i < 2; ++i) {
    asio::write(
        s, asio::buffer(std::string("GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")));
    beast::http::response_parser<beast::http::string_body> parser;
    beast::error_code ec;
    beast::http::read(s, buffer, parser, ec);
    ASSERT_FALSE(ec) << "request " << i << ": " << ec.message();
    EXPECT_EQ(parser.get().result_int(), 200u);
    EXPECT_TRUE(beast::iequals(parser.get()[beast::http::field::connection], "keep-alive"));
  }
}

}  // namespace
}  // namespace loam::server
