// HttpServer on real sockets with a small handler: keep-alive, limits,
// timeouts against slow clients, 100-continue, streamed bodies and a
// graceful shutdown that answers the request in flight.
#include <future>

#include "server/server_test_util.h"

namespace loam::server {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

// Answers with the body's size; streams PUT bodies.
class CountingHandler : public HttpHandler {
 public:
  BodyPlan PlanBody(const RequestHeader& h) override {
    return {h.method() == http::verb::put, 1 << 20};
  }
  // GET /chunks/N: N chunks "chunk i\n"; GET /cut: one chunk, then stops
  // without the last; GET /flood: 1 MiB chunks until a write fails.
  Response Handle(const Request& r, ChunkedBody& out, const std::any&) override {
    const std::string_view target = r.target();
    if (target.substr(0, 8) == "/chunks/" || target == "/cut" || target == "/flood") {
      Response head{http::status::ok, 11};
      head.set(http::field::content_type, "text/plain");
      if (!out.Begin(head).ok()) return Response{http::status::service_unavailable, 11};
      if (target == "/flood") {
        flood_begun.set_value();
        const std::string mib(1 << 20, 'x');
        Status s;
        for (int i = 0; i < 4096 && s.ok(); ++i) s = out.Write(mib);
        flood.set_value(s);
        return head;
      }
      const int n = target == "/cut" ? 1 : std::stoi(std::string(target.substr(8)));
      for (int i = 0; i < n; ++i) {
        if (!out.Write("chunk " + std::to_string(i) + "\n").ok()) return head;
      }
      if (target != "/cut") (void)out.End();
      return head;
    }
    return Answer(r.body().size());
  }
  Response HandleStream(const RequestHeader&, ByteSource& body, const std::any&) override {
    started.set_value();
    size_t total = 0;
    char buf[4096];
    for (;;) {
      Result<size_t> n = body.Read(buf, sizeof(buf));
      if (!n.ok()) return Answer(0, http::status::bad_request);
      if (*n == 0) break;
      total += *n;
    }
    return Answer(total);
  }
  Response Refuse(const RequestHeader&, http::status status, const Status& why) override {
    Response r{status, 11};
    r.body() = std::string(ErrorCodeName(why.error_code()));
    return r;
  }
  std::promise<void> started;
  std::promise<Status> flood;  // how /flood ended
  std::promise<void> flood_begun;

 private:
  static Response Answer(size_t n, http::status s = http::status::ok) {
    Response r{s, 11};
    r.body() = std::to_string(n);
    return r;
  }
};

class HttpServerTest : public ::testing::Test {
 protected:
  void Start() {
    server_ = HttpServer::Bind(options_, &handler_).value();
    server_->Serve();
  }
  tcp::socket Connect() {
    tcp::socket s(ioc_);
    s.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
    return s;
  }
  // Everything the server sends until it closes the connection.
  static std::string ReadToClose(tcp::socket& s) {
    std::string out;
    char buf[4096];
    boost::system::error_code ec;
    for (;;) {
      const size_t n = s.read_some(asio::buffer(buf), ec);
      if (ec) break;
      out.append(buf, n);
    }
    return out;
  }

  HttpServerOptions options_{.address = "127.0.0.1", .port = 0};
  CountingHandler handler_;
  std::unique_ptr<HttpServer> server_;
  asio::io_context ioc_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  Start();
  tcp::socket s = Connect();
  const std::string two =
      "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc"
      "POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
  asio::write(s, asio::buffer(two));
  const std::string out = ReadToClose(s);
  EXPECT_NE(out.find("\r\n\r\n3"), std::string::npos) << out;
  EXPECT_NE(out.find("\r\n\r\n5"), std::string::npos) << out;
}

TEST_F(HttpServerTest, HeadersOverTheLimitAre431) {
  options_.header_limit = 1024;
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer("GET / HTTP/1.1\r\nX-Big: " + std::string(4096, 'a') + "\r\n\r\n"));
  EXPECT_EQ(ReadToClose(s).substr(0, 12), "HTTP/1.1 431");
}

TEST_F(HttpServerTest, SlowHeadersAreCutOffAtTheDeadline) {
  options_.header_timeout = std::chrono::milliseconds(300);
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string("GET / HTTP/1.1\r\nX-Slow: ")));
  // The header never ends: the server closes the connection, answering nothing.
  EXPECT_EQ(ReadToClose(s), "");
  // Meanwhile and after, other clients are served.
  EXPECT_EQ(HttpCall(server_->port(), "POST", "/x", "abcd").body, "4");
}

TEST_F(HttpServerTest, StalledBodiesAreCutOffAndTheHandlerSeesAnError) {
  options_.body_timeout = std::chrono::milliseconds(300);
  Start();
  tcp::socket s = Connect();
  asio::write(
      s, asio::buffer(std::string("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")));
  EXPECT_EQ(ReadToClose(s), "");  // no answer for a body that never came
}

TEST_F(HttpServerTest, ExpectContinueAndBodyLimit) {
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string(
                     "POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nExpect: 100-continue\r\n"
                     "Connection: close\r\n\r\n")));
  char buf[64];
  const size_t n = s.read_some(asio::buffer(buf));
  EXPECT_EQ(std::string(buf, n).substr(0, 12), "HTTP/1.1 100");
  asio::write(s, asio::buffer(std::string("abcd")));
  std::string rest = ReadToClose(s);
  EXPECT_EQ(rest.substr(0, 12), "HTTP/1.1 200") << rest;

  tcp::socket big = Connect();
  asio::write(big, asio::buffer("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                std::to_string(2 << 20) + "\r\n\r\n"));
  EXPECT_EQ(ReadToClose(big).substr(0, 12), "HTTP/1.1 413");
}

// Answered before the body (a refused upload): one answer, after the interim
// 100 if one was being written, and the connection closes; nothing leaks.
class RefusingHandler : public CountingHandler {
 public:
  Response HandleStream(const RequestHeader&, ByteSource&, const std::any&) override {
    Response r{http::status::forbidden, 11};
    r.body() = "no";
    return r;
  }
};

TEST(HttpServerEarlyAnswer, StreamsRefusedBeforeTheirBodyCloseCleanly) {
  RefusingHandler handler;
  HttpServerOptions options{.address = "127.0.0.1", .port = 0};
  options.stream_buffer = 1024;  // the pipe fills at once
  // A leaked session would hold Shutdown for this long (ctest's timeout fails it first).
  options.drain_timeout = std::chrono::hours(1);
  auto server = HttpServer::Bind(options, &handler).value();
  server->Serve();
  asio::io_context ioc;
  for (int i = 0; i < 20; ++i) {
    tcp::socket s(ioc);
    s.connect({asio::ip::make_address("127.0.0.1"), server->port()});
    const std::string expect = i % 2 ? "Expect: 100-continue\r\n" : "";
    boost::system::error_code ec;  // the server may close before all is sent
    asio::write(s,
                asio::buffer("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n" + expect +
                             "\r\n" + std::string(64 * 1024, 'x')),
                ec);
    std::string out;
    char buf[4096];
    for (size_t n; (n = s.read_some(asio::buffer(buf), ec)), !ec;) out.append(buf, n);
    EXPECT_NE(out.find("HTTP/1.1 403"), std::string::npos) << out;
    EXPECT_EQ(out.find("HTTP/1.1 403", out.find("HTTP/1.1 403") + 1), std::string::npos) << out;
  }
  server->Shutdown();  // returns once every session is gone
  EXPECT_EQ(server->in_flight(), 0);
}

TEST_F(HttpServerTest, ChunkedAnswersArriveWholeAndKeepTheConnection) {
  Start();
  boost::beast::tcp_stream s(Connect());
  boost::beast::flat_buffer buffer;
  for (const char* target : {"/chunks/3", "/chunks/0", "/a"}) {
    http::request<http::string_body> req{http::verb::get, target, 11};
    req.set(http::field::host, "x");
    http::write(s, req);
    http::response<http::string_body> res;
    http::read(s, buffer, res);  // the same connection each time
    ASSERT_EQ(res.result_int(), 200) << target;
    if (std::string_view(target) == "/chunks/3") {
      EXPECT_TRUE(res.chunked());
      EXPECT_EQ(res.body(), "chunk 0\nchunk 1\nchunk 2\n");
    } else if (std::string_view(target) == "/chunks/0") {
      EXPECT_TRUE(res.chunked());
      EXPECT_EQ(res.body(), "");
    } else {
      EXPECT_FALSE(res.chunked());
      EXPECT_EQ(res.body(), "0");
    }
  }
}

TEST_F(HttpServerTest, ChunkedAnswerCutShortEndsWithoutTheLastChunk) {
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string("GET /cut HTTP/1.1\r\nHost: x\r\n\r\n")));
  const std::string out = ReadToClose(s);  // the server closes the connection
  EXPECT_NE(out.find("Transfer-Encoding: chunked"), std::string::npos) << out;
  EXPECT_NE(out.find("chunk 0\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("\r\n0\r\n\r\n"), std::string::npos) << "a last chunk was sent: " << out;
  // A client's parser sees an incomplete message.
  boost::beast::tcp_stream c(Connect());
  http::request<http::empty_body> req{http::verb::get, "/cut", 11};
  req.set(http::field::host, "x");
  http::write(c, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  boost::beast::error_code ec;
  http::read(c, buffer, res, ec);
  EXPECT_EQ(ec, http::error::partial_message) << ec.message();
}

TEST_F(HttpServerTest, ChunkedAnswerToHttp10IsUnframedAndClosed) {
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string("GET /chunks/2 HTTP/1.0\r\n\r\n")));
  const std::string out = ReadToClose(s);
  EXPECT_EQ(out.find("chunked"), std::string::npos) << out;
  ASSERT_GE(out.size(), 16u) << out;
  EXPECT_EQ(out.substr(out.size() - 16), "chunk 0\nchunk 1\n") << out;
}

// A client that never reads: the producer's writes stop at the socket
// buffers and fail at the write deadline; memory holds one chunk, not 4 GiB.
TEST_F(HttpServerTest, ChunkedAnswerToAStalledReaderFailsTheProducer) {
  options_.write_timeout = std::chrono::milliseconds(300);
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")));
  const Status ended = handler_.flood.get_future().get();
  EXPECT_TRUE(ended.Is(ErrorCode::kUnavailable)) << ended.ToString();
  EXPECT_LT(ReadToClose(s).size(), size_t{1} << 30);
  // Others are still served.
  EXPECT_EQ(HttpCall(server_->port(), "POST", "/x", "abcd").body, "4");
}

// Chunked answers hold a handler thread each: past the limit the next one
// is refused before its first byte, and the slot frees when one ends.
TEST_F(HttpServerTest, ChunkedAnswersBeyondTheLimitAreRefused) {
  options_.max_chunked_answers = 1;
  Start();
  auto reader = std::make_unique<tcp::socket>(Connect());
  asio::write(*reader, asio::buffer(std::string("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")));
  handler_.flood_begun.get_future().wait();
  EXPECT_EQ(HttpCall(server_->port(), "GET", "/chunks/2").status, 503);
  reader.reset();  // the stalled reader leaves: its producer's write fails
  EXPECT_TRUE(handler_.flood.get_future().get().Is(ErrorCode::kUnavailable));
  HttpResult after = HttpCall(server_->port(), "GET", "/chunks/2");
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, "chunk 0\nchunk 1\n");
}

// A client that stops reading a chunked answer does not hold Shutdown past
// its drain: the connection is closed and the producer stops.
TEST_F(HttpServerTest, ShutdownCutsOffAStalledChunkedAnswerAfterTheDrain) {
  options_.drain_timeout = std::chrono::milliseconds(300);
  Start();
  tcp::socket s = Connect();
  asio::write(s, asio::buffer(std::string("GET /flood HTTP/1.1\r\nHost: x\r\n\r\n")));
  handler_.flood_begun.get_future().wait();
  server_->Shutdown();  // returns: ctest's timeout fails a hang
  EXPECT_TRUE(handler_.flood.get_future().get().Is(ErrorCode::kUnavailable));
}

TEST_F(HttpServerTest, ShutdownAnswersTheRequestInFlight) {
  Start();
  tcp::socket s = Connect();
  asio::write(
      s, asio::buffer(std::string("PUT /u HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nabc")));
  handler_.started.get_future().wait();  // the handler is reading the body
  tcp::socket idle = Connect();
  auto stopped = std::async(std::launch::async, [&] { server_->Shutdown(); });
  EXPECT_EQ(ReadToClose(idle), "");  // an idle connection is closed
  asio::write(s, asio::buffer(std::string("def")));
  const std::string out = ReadToClose(s);
  EXPECT_EQ(out.substr(0, 12), "HTTP/1.1 200") << out;
  EXPECT_NE(out.find("Connection: close"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.size() - 1), "6");
  stopped.get();
  boost::system::error_code ec;
  tcp::socket after(ioc_);
  after.connect({asio::ip::make_address("127.0.0.1"), server_->port()}, ec);
  EXPECT_TRUE(ec) << "still accepting after shutdown";
}

}  // namespace
}  // namespace loam::server
