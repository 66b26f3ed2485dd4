#include "server/http_server.h"

#include "common/status_macros.h"
#include "server/http_server_impl.h"

namespace loam::server {

Status HttpServer::Impl::Listen() {
  beast::error_code ec;
  const auto address = asio::ip::make_address(options_.address, ec);
  if (ec)
    return Status::InvalidArgument("listen address '" + options_.address + "': " + ec.message());
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Status::Unavailable("cannot listen on " + options_.address + ":" +
                               std::to_string(options_.port) + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  return Status::OK();
}

void HttpServer::Impl::Run() {
  Accept();
  for (int i = 0; i < std::max(1, options_.io_threads); ++i) {
    threads_.emplace_back([this] { ioc_.run(); });
  }
}

void HttpServer::Impl::Accept() {
  acceptor_.async_accept(asio::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || stopping()) return;
    if (ec) {  // e.g. out of file descriptors: retry shortly, never spin
      accept_retry_.expires_after(std::chrono::milliseconds(50));
      accept_retry_.async_wait([this](beast::error_code e) {
        if (!e && !stopping()) Accept();
      });
      return;
    }
    {
      std::shared_ptr<Session> session;
      beast::error_code peer_error;
      const asio::ip::address client = socket.remote_endpoint(peer_error).address();
      if (!peer_error) {
        std::lock_guard<std::mutex> lock(mu_);
        int& from_client = per_client_[client];
        if (static_cast<int>(sessions_.size()) < options_.max_connections &&
            from_client < options_.max_connections_per_client) {
          const uint64_t id = next_id_++;
          ++from_client;
          session = NewSession(std::move(socket), this, id, client);
          sessions_[id] = session;
        } else if (from_client == 0) {
          per_client_.erase(client);
        }
      }
      if (session) StartSession(*session);  // else the socket closes here
    }
    Accept();
  });
}

void HttpServer::Impl::RequestEnded() {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.fetch_sub(1);
  idle_.notify_all();
}

void HttpServer::Impl::Unregister(uint64_t id, const asio::ip::address& client) {
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.erase(id);
  if (auto it = per_client_.find(client); it != per_client_.end() && --it->second <= 0) {
    per_client_.erase(it);
  }
  idle_.notify_all();
}

void HttpServer::Impl::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_) return;
    shut_ = true;
  }
  stopping_ = true;
  asio::post(acceptor_.get_executor(), [this] {
    beast::error_code ignored;
    acceptor_.close(ignored);
  });
  std::vector<std::shared_ptr<Session>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  for (auto& s : live) CloseSessionWhenIdle(*s);
  live.clear();
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait_for(lock, options_.drain_timeout, [this] { return sessions_.empty(); });
    for (const auto& weak : pipes_) {
      if (auto pipe = weak.lock()) pipe->Fail(Status::Unavailable("the server is shutting down"));
    }
    streams_over_ = true;
    for (auto& [id, weak] : sessions_) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  // A chunked answer still being read is cut off: its pending write fails,
  // so its handler returns and the pool can be joined.
  for (auto& s : live) CloseSessionNow(*s);
  live.clear();
  pool_.join();  // handlers end: none waits on a body any more
  upload_pool_.join();
  work_.reset();
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() { Shutdown(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Bind(const HttpServerOptions& options,
                                                     HttpHandler* handler) {
  auto impl = std::make_unique<Impl>(options, handler);
  if (Status s = impl->Listen(); !s.ok()) return s;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Serve() { impl_->Run(); }

uint16_t HttpServer::port() const { return impl_->port(); }
int64_t HttpServer::in_flight() const { return impl_->in_flight(); }
void HttpServer::Shutdown() { impl_->Shutdown(); }

}  // namespace loam::server
