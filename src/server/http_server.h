// HttpServer: HTTP/1.1 over TCP on Boost.Beast (docs/server.md). A fixed
// pool of I/O threads runs every socket operation asynchronously, each under
// a deadline, so a slow or stalled client holds no thread; handlers (which
// block on the object store) run on a separate fixed pool, and streamed
// bodies (uploads, which wait on their client) on a third. Keep-alive,
// header and body limits, `Expect: 100-continue`, streamed request bodies
// with backpressure, and a graceful Shutdown that finishes in-flight
// requests. Knows nothing of the API: an HttpHandler answers.
#pragma once

#include <any>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "loam/object_store.h"
#include "loam/result.h"

namespace loam::server {

namespace http = boost::beast::http;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;
using RequestHeader = http::request_header<>;

struct HttpServerOptions {
  std::string address = "127.0.0.1";
  uint16_t port = 8080;  // 0: an ephemeral port (see HttpServer::port)
  int io_threads = 2;
  int handler_threads = 8;
  // Streamed request bodies run on their own pool of this many threads, one
  // body each; a body beyond them is refused (503 + Retry-After) before it
  // is read, so slow uploads never hold the threads of other routes.
  int upload_threads = 8;
  int max_connections = 1024;  // more are accepted and closed at once
  // Connections from one source address at once; more are closed at once,
  // so one client cannot fill the server.
  int max_connections_per_client = 64;
  uint32_t header_limit = 16 * 1024;
  // The whole request header must arrive within this (also the keep-alive
  // idle time between requests).
  std::chrono::milliseconds header_timeout{30'000};
  // A new connection's first request header must arrive within this: a
  // socket opened and left silent goes sooner than a keep-alive one.
  std::chrono::milliseconds first_request_timeout{10'000};
  // Each read of the body must progress within this.
  std::chrono::milliseconds body_timeout{30'000};
  std::chrono::milliseconds write_timeout{60'000};
  // A request body, and a chunked answer, must move at least this many
  // bytes per second on average once `rate_grace` has passed since it
  // began: a slower body is answered 408 and its connection closed; a
  // slower reader's answer is cut off.
  uint32_t min_transfer_rate = 1024;
  std::chrono::milliseconds rate_grace{10'000};
  // Streamed bodies: bytes held between the socket and the handler.
  size_t stream_buffer = 1 << 20;
  // Bodies read whole before their handler runs (JSON, inline data), summed
  // over every connection: a request that would take more is refused (503 +
  // Retry-After) before its body is read.
  uint64_t max_buffered_bytes = 256 << 20;
  // Chunked answers at once (each holds a handler thread while its client
  // reads); more are refused with `unavailable` before their first byte.
  // 0: half the handler threads (at least one).
  int max_chunked_answers = 0;
  // Shutdown waits this long for in-flight requests.
  std::chrono::milliseconds drain_timeout{60'000};
};

// An answer's body sent in chunks (Transfer-Encoding: chunked) while the
// handler produces it, from the handler's thread. Each call blocks until its
// bytes are written, so a slow reader slows the producer and nothing piles
// up in memory. An error means the client is gone or read nothing within the
// write timeout: the handler stops producing.
// An answer sent later, from any thread, by a handler that parked its
// request (ChunkedBody::Defer) instead of holding its thread while it waits.
class LaterAnswer {
 public:
  virtual ~LaterAnswer() = default;
  // Sends `r`; only the first call counts. An object destroyed unsent
  // answers 500, so a request is never left without an answer.
  virtual void Send(Response r) = 0;
};

class ChunkedBody {
 public:
  virtual ~ChunkedBody() = default;
  // Parks the request: Handle returns at once (its return value ignored)
  // and the answer goes through the returned object whenever it is ready,
  // holding no thread meanwhile. nullptr where answers cannot wait (then
  // the handler answers now). Not after Begin.
  virtual std::shared_ptr<LaterAnswer> Defer() { return nullptr; }
  // Sends the status line and fields of `head` (its body is ignored).
  [[nodiscard]] virtual Status Begin(const Response& head) = 0;
  // After Begin; an empty chunk sends nothing.
  [[nodiscard]] virtual Status Write(std::string_view chunk) = 0;
  // The last chunk: the answer is complete. A handler that began and returns
  // without End truncates the answer: the connection closes before the last
  // chunk, which tells the client the body is incomplete.
  [[nodiscard]] virtual Status End() = 0;
  virtual bool begun() const = 0;
};

class HttpHandler {
 public:
  virtual ~HttpHandler() = default;
  struct BodyPlan {
    bool stream = false;  // HandleStream consumes the body as it arrives
    uint64_t limit = 0;   // larger bodies are refused with 413
    // Set: the request's answer, sent before any of its body is read (a
    // refused token); the connection then closes.
    std::optional<Response> answer;
    // With `answer`: the connection stays open for the next request when the
    // request has no body (a GET of fixed bytes answered on the I/O thread).
    bool answer_keeps_connection = false;
    // What the handler learned from the header (a verified caller), handed
    // back to Handle or HandleStream so that nothing is worked out twice.
    std::any context;
  };
  // Decided from the header alone, before any of the body is read; runs on
  // an I/O thread, so it never waits on storage.
  virtual BodyPlan PlanBody(const RequestHeader& header) = 0;
  // The answer; or, once `out` has begun, nothing more (the return value is
  // ignored): the body went out in chunks.
  virtual Response Handle(const Request& request, ChunkedBody& out, const std::any& context) = 0;
  virtual Response HandleStream(const RequestHeader& header, ByteSource& body,
                                const std::any& context) = 0;
  // The answer to a request refused before a handler saw it (malformed,
  // headers or body over the limit, the server's room for bodies full):
  // `why` carries the stable code and, for a busy server, the detail
  // "retryAfterMillis".
  virtual Response Refuse(const RequestHeader& header, http::status status, const Status& why) = 0;
};

class HttpServer {
 public:
  // Binds the listening socket (port() is known from here on); `handler`
  // must outlive the server. Nothing is accepted before Serve.
  static Result<std::unique_ptr<HttpServer>> Bind(const HttpServerOptions& options,
                                                  HttpHandler* handler);
  void Serve();
  ~HttpServer();  // Shutdown()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Requests being read, handled or answered now.
  int64_t in_flight() const;
  // Stops accepting, closes idle connections, waits for in-flight requests
  // to be answered (up to drain_timeout), then stops the threads.
  void Shutdown();

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace loam::server
