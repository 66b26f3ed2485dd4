// HttpServer's internals (http_server.cc: the acceptor and shutdown;
// http_session.cc: one connection). Not part of the server's interface.
#pragma once

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "server/body_pipe.h"
#include "server/http_server.h"

namespace loam::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using SteadyClock = std::chrono::steady_clock;

// One connection (http_session.cc), known to the server only through these.
class Session;
std::shared_ptr<Session> NewSession(tcp::socket socket, HttpServer::Impl* server, uint64_t id,
                                    asio::ip::address client);
void StartSession(Session& session);
// Closes once the request in progress is answered (or at once when idle).
void CloseSessionWhenIdle(Session& session);
void CloseSessionNow(Session& session);

class HttpServer::Impl {
 public:
  Impl(const HttpServerOptions& options, HttpHandler* handler)
      : options_(options),
        handler_(handler),
        acceptor_(asio::make_strand(ioc_)),
        pool_(std::max(1, options.handler_threads)),
        upload_pool_(std::max(1, options.upload_threads)) {}

  Status Listen();
  void Run();
  void Shutdown();

  const HttpServerOptions& options() const { return options_; }
  HttpHandler& handler() { return *handler_; }
  asio::thread_pool& pool() { return pool_; }
  asio::thread_pool& upload_pool() { return upload_pool_; }
  bool stopping() const { return stopping_.load(); }
  // Shutdown's drain has ended: chunked answers still going stop.
  bool streams_over() const { return streams_over_.load(); }
  // A chunked answer holds a handler thread while a client reads it: at most
  // max_chunked_answers at once, so slow readers cannot take every thread.
  bool AcquireStream() {
    const int cap = options_.max_chunked_answers > 0 ? options_.max_chunked_answers
                                                     : std::max(1, options_.handler_threads / 2);
    if (streams_.fetch_add(1) < cap) return true;
    streams_.fetch_sub(1);
    return false;
  }
  void ReleaseStream() { streams_.fetch_sub(1); }
  // A thread of the upload pool for one streamed body, or none free.
  bool AcquireUploadThread() {
    if (uploads_.fetch_add(1) < std::max(1, options_.upload_threads)) return true;
    uploads_.fetch_sub(1);
    return false;
  }
  void ReleaseUploadThread() { uploads_.fetch_sub(1); }
  // `bytes` more of the room for bodies read whole, or false (none taken).
  bool ReserveBody(uint64_t bytes) {
    if (buffered_.fetch_add(bytes) + bytes <= options_.max_buffered_bytes) return true;
    buffered_.fetch_sub(bytes);
    return false;
  }
  void ReleaseBody(uint64_t bytes) { buffered_.fetch_sub(bytes); }
  uint16_t port() const { return port_; }
  int64_t in_flight() const { return in_flight_.load(); }

  void RequestStarted() { in_flight_.fetch_add(1); }
  void RequestEnded();
  void Unregister(uint64_t id, const asio::ip::address& client);
  // Streamed bodies still open at the end of Shutdown's drain are failed,
  // so no handler waits on a client forever.
  void RegisterPipe(std::weak_ptr<BodyPipe> pipe) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(pipes_, [](const std::weak_ptr<BodyPipe>& p) { return p.expired(); });
    pipes_.push_back(std::move(pipe));
  }

 private:
  void Accept();

  // Declared first so that sessions destroyed with the io_context's
  // pending handlers can still unregister.
  std::mutex mu_;
  std::condition_variable idle_;
  std::map<uint64_t, std::weak_ptr<Session>> sessions_;
  std::map<asio::ip::address, int> per_client_;  // open connections by source address
  std::vector<std::weak_ptr<BodyPipe>> pipes_;
  uint64_t next_id_ = 0;
  bool shut_ = false;

  const HttpServerOptions options_;
  HttpHandler* handler_;
  asio::io_context ioc_;
  // Keeps the I/O threads running while no socket operation is pending (a
  // handler may still post its answer) until Shutdown has drained.
  asio::executor_work_guard<asio::io_context::executor_type> work_{ioc_.get_executor()};
  tcp::acceptor acceptor_;
  asio::steady_timer accept_retry_{acceptor_.get_executor()};
  asio::thread_pool pool_;
  asio::thread_pool upload_pool_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> streams_over_{false};
  std::atomic<int> streams_{0};
  std::atomic<int> uploads_{0};
  std::atomic<uint64_t> buffered_{0};
  std::atomic<int64_t> in_flight_{0};

  friend class Session;
};

}  // namespace loam::server
