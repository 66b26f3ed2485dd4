// One connection of HttpServer (http_server_impl.h).
#include <functional>
#include <future>
#include <optional>

#include "common/status_macros.h"
#include "server/http_framing.h"
#include "server/http_server_impl.h"

namespace loam::server {
namespace {

// Fewer than min_transfer_rate bytes a second over `waited` (the time spent
// waiting on the client), once that is past the grace.
bool BelowRate(const HttpServerOptions& o, SteadyClock::duration waited, uint64_t bytes) {
  return waited > o.rate_grace &&
         static_cast<double>(bytes) < std::chrono::duration<double>(waited).count() *
                                          static_cast<double>(o.min_transfer_rate);
}

}  // namespace

// One connection: read a header, read (or stream) its body, hand the request
// to the handler pool, write the answer, and again while keep-alive holds.
// Every step runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::Impl* server, uint64_t id, asio::ip::address client)
      : stream_(std::move(socket)), server_(server), id_(id), client_(std::move(client)) {}
  ~Session() {
    ReleaseBody();
    server_->Unregister(id_, client_);
  }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }
  // From Shutdown, after the drain: closes whatever is still open.
  void CloseNow() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }
  // From Shutdown: an idle connection closes; a busy one closes after its answer.
  void CloseWhenIdle() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      self->close_after_ = true;
      if (!self->busy_) self->Close();
    });
  }

 private:
  const HttpServerOptions& options() const { return server_->options(); }
  HttpHandler& handler() { return server_->handler(); }

  void ReadHeader() {
    if (server_->stopping()) return Close();
    parser_.emplace();
    parser_->header_limit(options().header_limit);
    parser_->body_limit(boost::none);  // each route's limit is set once its header is read
    body_.clear();
    body_waited_ = {};
    body_read_ = 0;
    pipe_.reset();
    body_complete_ = false;
    responded_ = false;
    chunked_ = false;
    chunked_complete_ = false;
    stream_.expires_after(first_request_ ? options().first_request_timeout
                                         : options().header_timeout);
    http::async_read_header(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      return Refuse(http::status::request_header_fields_too_large,
                    OverLimit("the request header is over " +
                              std::to_string(options().header_limit) + " bytes"));
    }
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return Close();
    }
    if (ec) {
      return Refuse(http::status::bad_request,
                    Status::InvalidArgument("malformed request: " + ec.message()));
    }
    first_request_ = false;
    if (std::optional<FramingRefusal> f = CheckFraming(parser_->get())) {
      return Refuse(f->status, f->why);
    }
    busy_ = true;
    server_->RequestStarted();
    const RequestHeader& header = parser_->get().base();
    plan_ = handler().PlanBody(header);
    parser_->body_limit(plan_.limit);
    if (plan_.answer) {
      // The body, if any, is never read: the connection closes after the
      // answer unless there is none.
      if (parser_->is_done()) body_complete_ = true;  // nothing to drain on close
      if (!plan_.answer_keeps_connection || !body_complete_) close_after_ = true;
      return Write(std::move(*plan_.answer));
    }
    const boost::optional<uint64_t> length = parser_->content_length();
    if (length && *length > plan_.limit) return RefuseOverLimit();
    if (plan_.stream) {
      if (!server_->AcquireUploadThread()) {
        return Refuse(http::status::service_unavailable,
                      Busy("all " + std::to_string(options().upload_threads) +
                           " upload slots are receiving bodies"));
      }
      pipe_ = std::make_shared<BodyPipe>(options().stream_buffer);
      server_->RegisterPipe(pipe_);
      asio::post(
          server_->upload_pool(), [self = shared_from_this(), header = RequestHeader(header)] {
            Response r = self->handler().HandleStream(header, *self->pipe_, self->plan_.context);
            self->server_->ReleaseUploadThread();
            asio::post(self->stream_.get_executor(),
                       [self, r = std::move(r)]() mutable { self->OnStreamHandled(std::move(r)); });
          });
    } else if (length && *length > options().max_buffered_bytes) {
      // It could never fit the room: 413, not a retry.
      return Refuse(
          http::status::payload_too_large,
          OverLimit("the request body is over the " + std::to_string(options().max_buffered_bytes) +
                    " bytes this server holds for bodies at once"));
    } else if (length && !Reserve(*length)) {
      return RefuseBuffersFull();
    }
    if (http::token_list(header[http::field::expect]).exists("100-continue") &&
        !parser_->is_done()) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      stream_.expires_after(options().write_timeout);
      writing_continue_ = true;
      return http::async_write(stream_, *cont,
                               [self = shared_from_this(), cont](beast::error_code e, size_t) {
                                 self->writing_continue_ = false;
                                 if (e) return self->Abort();
                                 if (self->deferred_) {  // answered meanwhile
                                   Response r = std::move(*self->deferred_);
                                   self->deferred_.reset();
                                   return self->Write(std::move(r));
                                 }
                                 self->ReadBody();
                               });
    }
    ReadBody();
  }

  void ReadBody() {
    if (responded_) return;
    if (parser_->is_done()) return BodyDone();
    parser_->get().body().data = chunk_;
    parser_->get().body().size = sizeof(chunk_);
    stream_.expires_after(options().body_timeout);
    read_began_ = SteadyClock::now();
    reading_ = true;
    ArmRateTimer();
    // Each arrival is seen (not only a full buffer), so the rate is checked
    // as the body trickles in.
    http::async_read_some(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  // A body that stalls is answered 408 as soon as it falls below the
  // minimum rate, not cut off unanswered at the body timeout: the timer fires
  // when, with no byte arriving before it, the body would be below the rate.
  void ArmRateTimer() {
    const HttpServerOptions& o = options();
    if (o.min_transfer_rate == 0) return;
    const auto at_rate = std::chrono::duration_cast<SteadyClock::duration>(
        std::chrono::duration<double>(static_cast<double>(body_read_) / o.min_transfer_rate));
    const SteadyClock::duration due = std::max<SteadyClock::duration>(o.rate_grace, at_rate) -
                                      body_waited_ + std::chrono::milliseconds(1);
    if (due >= o.body_timeout) return;  // the body timeout comes first
    rate_timer_.expires_after(due);
    rate_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || !self->reading_ || self->responded_ || self->pending_) return;
      const auto waited = self->body_waited_ + (SteadyClock::now() - self->read_began_);
      if (!BelowRate(self->options(), waited, self->body_read_)) return;
      self->Refuse(http::status::request_timeout,
                   OverLimit("the request body arrived slower than the minimum rate of " +
                             std::to_string(self->options().min_transfer_rate) + " bytes/s"));
    });
  }

  void OnBody(beast::error_code ec) {
    rate_timer_.cancel();
    reading_ = false;
    if (ec == http::error::need_buffer) ec = {};
    if (responded_) {
      if (lingering_) ec ? Close() : Linger();  // the read was in flight when it began
      return;
    }
    if (ec == http::error::body_limit) return RefuseOverLimit();
    if (ec && ec.category() == beast::error_code(http::error::bad_chunk).category() &&
        ec != http::error::partial_message) {
      return Refuse(http::status::bad_request,
                    Status::InvalidArgument("malformed request body: " + ec.message()));
    }
    if (ec) return Abort();
    const size_t got = sizeof(chunk_) - parser_->get().body().size;
    body_read_ += got;
    body_waited_ += SteadyClock::now() - read_began_;
    if (!parser_->is_done() && BelowRate(options(), body_waited_, body_read_)) {
      return Refuse(http::status::request_timeout,
                    OverLimit("the request body arrived slower than the minimum rate of " +
                              std::to_string(options().min_transfer_rate) + " bytes/s"));
    }
    if (!pipe_) {
      // A body of unknown length (chunked) takes its room as it arrives.
      if (body_.size() + got > reserved_ && !Reserve(body_.size() + got - reserved_)) {
        return RefuseBuffersFull();
      }
      body_.append(chunk_, got);
      return ReadBody();
    }
    if (got > 0) {
      // Weak: the pipe (owned by this session) must not keep it alive.
      auto resume = [weak = weak_from_this()] {
        if (auto self = weak.lock()) {
          asio::post(self->stream_.get_executor(), [self] { self->ReadBody(); });
        }
      };
      if (!pipe_->Push(std::string(chunk_, got), resume)) return;  // resumed when drained
    }
    ReadBody();
  }

  void BodyDone() {
    body_complete_ = true;
    if (pipe_) return pipe_->Finish();  // the handler answers when it has read it
    auto request = std::make_shared<Request>(parser_->get().base());
    request->body() = std::move(body_);
    asio::post(server_->pool(), [self = shared_from_this(), request] {
      ChunkWriter out(self.get(), request);
      Response r = self->handler().Handle(*request, out, self->plan_.context);
      if (out.deferred()) return;  // its LaterAnswer writes the answer
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(r)]() mutable { self->Write(std::move(r)); });
    });
  }

  // A parked request's answer: holds the session (not a thread) until sent.
  class ParkedAnswer : public LaterAnswer {
   public:
    ParkedAnswer(std::shared_ptr<Session> session, std::shared_ptr<const Request> request)
        : session_(std::move(session)), request_(std::move(request)) {}
    ~ParkedAnswer() override {
      if (!sent_.exchange(true)) {
        Post(session_->handler().Refuse(request_->base(), http::status::internal_server_error,
                                        Status::Internal("a parked request was never answered")));
      }
    }
    void Send(Response r) override {
      if (!sent_.exchange(true)) Post(std::move(r));
    }

   private:
    void Post(Response r) {
      asio::post(session_->stream_.get_executor(),
                 [s = session_, r = std::move(r)]() mutable { s->Write(std::move(r)); });
    }
    std::shared_ptr<Session> session_;
    std::shared_ptr<const Request> request_;
    std::atomic<bool> sent_{false};
  };

  // ChunkedBody for a handler thread: each call runs its write on the
  // session's strand and waits for it. The handler holds the session alive,
  // and nothing else reads or writes the socket while it runs (the request
  // body is complete).
  class ChunkWriter : public ChunkedBody {
   public:
    ChunkWriter(Session* session, std::shared_ptr<const Request> request)
        : session_(session), request_(std::move(request)) {}
    ~ChunkWriter() override { Release(); }
    std::shared_ptr<LaterAnswer> Defer() override {
      if (begun_ || deferred_) return nullptr;
      deferred_ = true;
      return std::make_shared<ParkedAnswer>(session_->shared_from_this(), request_);
    }
    bool deferred() const { return deferred_; }
    Status Begin(const Response& head) override {
      if (begun_) return Status::Internal("a chunked answer began twice");
      if (!session_->server_->AcquireStream()) {
        return Status::Unavailable("too many streamed answers at once; try again shortly");
      }
      holds_stream_ = true;
      begun_ = true;
      return Run([&](auto done) { session_->WriteChunkedHead(head, std::move(done)); });
    }
    Status Write(std::string_view chunk) override {
      if (!begun_ || ended_) return Status::Internal("a chunk outside a chunked answer");
      if (chunk.empty()) return Status::OK();  // a zero-size chunk would end the body
      const auto start = SteadyClock::now();
      RETURN_NOT_OK(Run([&](auto done) {
        const auto bytes = asio::buffer(chunk.data(), chunk.size());
        if (session_->unframed_) return session_->WriteBuffers(bytes, std::move(done));
        session_->WriteBuffers(http::make_chunk(bytes), std::move(done));
      }));
      // The client's pace: bytes over the time spent waiting for it to
      // take them (the producer's own time is not counted).
      written_ += chunk.size();
      waited_ += SteadyClock::now() - start;
      const HttpServerOptions& o = session_->options();
      if (BelowRate(o, waited_, written_)) {
        failed_ = true;
        Release();
        return Status::Unavailable("the client reads slower than the minimum rate of " +
                                   std::to_string(o.min_transfer_rate) + " bytes/s");
      }
      return Status::OK();
    }
    Status End() override {
      if (!begun_ || ended_) return Status::Internal("a chunked answer ended twice");
      ended_ = true;
      Status s = Run([&](auto done) {
        session_->chunked_complete_ = true;
        if (session_->unframed_) return done({});  // the close ends the body
        session_->WriteBuffers(http::make_chunk_last(), std::move(done));
      });
      Release();
      return s;
    }
    bool begun() const override { return begun_; }

   private:
    // The slot among max_chunked_answers, once the answer ended or failed.
    void Release() {
      if (holds_stream_) session_->server_->ReleaseStream();
      holds_stream_ = false;
    }
    using Done = std::function<void(beast::error_code)>;
    // The operation and the promise are owned by the strand's side: Run may
    // return (its frame gone) while the completion is still unwinding.
    Status Run(std::function<void(Done)> op) {
      if (failed_) return Status::Unavailable("the answer could not be sent");
      if (session_->server_->streams_over()) {
        failed_ = true;  // Shutdown's drain has ended: stop producing
        return Status::Unavailable("the server is shutting down");
      }
      auto result = std::make_shared<std::promise<beast::error_code>>();
      std::future<beast::error_code> answer = result->get_future();
      asio::post(session_->stream_.get_executor(), [op = std::move(op), result] {
        op([result](beast::error_code ec) { result->set_value(ec); });
      });
      const beast::error_code ec = answer.get();
      if (!ec) return Status::OK();
      failed_ = true;
      Release();  // before the handler hears of it: its slot is free
      return Status::Unavailable("the answer could not be sent: " + ec.message());
    }
    Session* session_;
    std::shared_ptr<const Request> request_;
    uint64_t written_ = 0;
    SteadyClock::duration waited_{};
    bool begun_ = false;
    bool ended_ = false;
    bool failed_ = false;
    bool holds_stream_ = false;
    bool deferred_ = false;
  };

  void WriteChunkedHead(const Response& head, std::function<void(beast::error_code)> done) {
    responded_ = true;
    chunked_ = true;
    auto res = std::make_shared<http::response<http::empty_body>>(head.result(), 11);
    for (const auto& field : head) res->insert(field.name_string(), field.value());
    // HTTP/1.0 has no chunks: the body ends when the connection closes.
    unframed_ = parser_->get().version() < 11;
    if (unframed_) close_after_ = true;
    res->keep_alive(!close_after_ && !server_->stopping() && parser_->get().keep_alive());
    res->chunked(!unframed_);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    stream_.expires_after(options().write_timeout);
    http::async_write_header(
        stream_, *sr,
        [res, sr, done = std::move(done)](beast::error_code ec, size_t) { done(ec); });
  }

  template <class Buffers>
  void WriteBuffers(const Buffers& buffers, std::function<void(beast::error_code)> done) {
    stream_.expires_after(options().write_timeout);
    asio::async_write(stream_, buffers,
                      [done = std::move(done)](beast::error_code ec, size_t) { done(ec); });
  }

  // After a chunked answer's handler returned: the next request, or a close
  // when the answer was cut short or the connection does not persist.
  void FinishChunked() {
    busy_ = false;
    server_->RequestEnded();
    if (!chunked_complete_ || close_after_ || server_->stopping() || !parser_->get().keep_alive()) {
      return Close();
    }
    ReadHeader();
  }

  void OnStreamHandled(Response r) {
    stream_answered_ = true;
    pipe_->Abandon();  // nothing more is read into it
    if (body_complete_) return Write(std::move(r));
    // Answered before the body ended (a refusal): the rest of the body is
    // never read, so the connection closes after the answer.
    close_after_ = true;
    Write(pending_ ? std::move(*pending_) : std::move(r));
  }

  static Status OverLimit(std::string message) {
    return Status::ResourceExhausted(std::move(message)).WithErrorCode(ErrorCode::kLimitExceeded);
  }
  // `unavailable` with a Retry-After of a second: the server's room is full now.
  static Status Busy(const std::string& what) {
    return Status::Unavailable(what + "; try again shortly").WithDetail("retryAfterMillis", "1000");
  }
  void RefuseOverLimit() {
    Refuse(http::status::payload_too_large,
           OverLimit("the request body is over the limit of " + std::to_string(plan_.limit) +
                     " bytes for this route"));
  }
  void RefuseBuffersFull() {
    Refuse(http::status::service_unavailable,
           Busy("the server holds " + std::to_string(options().max_buffered_bytes) +
                " bytes of request bodies already"));
  }
  // Room for `more` bytes of this request's body; released with its answer.
  bool Reserve(uint64_t more) {
    if (!server_->ReserveBody(more)) return false;
    reserved_ += more;
    return true;
  }
  void ReleaseBody() {
    server_->ReleaseBody(reserved_);
    reserved_ = 0;
  }

  void Refuse(http::status status, const Status& why) {
    if (!busy_) {
      busy_ = true;
      server_->RequestStarted();
    }
    close_after_ = true;
    if (pipe_) pipe_->Fail(Status::InvalidArgument(why.message()));
    Response r = handler().Refuse(parser_->get().base(), status, why);
    if (pipe_) {
      pending_ = std::move(r);  // after the handler gives up on the body
      return;
    }
    Write(std::move(r));
  }

  void Write(Response r) {
    ReleaseBody();  // the handler is done with the body
    if (chunked_) return FinishChunked();
    if (responded_) return;
    if (writing_continue_) {  // one write at a time: after the interim 100
      deferred_ = std::move(r);
      return;
    }
    responded_ = true;
    auto res = std::make_shared<Response>(std::move(r));
    res->version(11);
    res->keep_alive(!close_after_ && !server_->stopping() && parser_->get().keep_alive());
    // An HTTP/1.0 client keeps the connection only when told so.
    if (res->keep_alive() && parser_->get().version() < 11) {
      res->set(http::field::connection, "keep-alive");
    }
    res->prepare_payload();
    stream_.expires_after(options().write_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res](beast::error_code ec, size_t) {
                        self->busy_ = false;
                        self->server_->RequestEnded();
                        if (ec) return self->Close();
                        if (!res->keep_alive()) return self->CloseAfterAnswer();
                        self->ReadHeader();
                      });
  }

  // The connection broke or timed out mid-request.
  void Abort() {
    if (pipe_) pipe_->Fail(Status::Unavailable("the client's connection ended mid-body"));
    // A stream handler still running ends the request when it answers.
    if (pipe_ && !stream_answered_) {
      Close();
      return;
    }
    if (busy_ && !responded_) {
      responded_ = true;
      busy_ = false;
      server_->RequestEnded();
    }
    Close();
  }

  // After an answer: when the client may still be sending a body we did not
  // read, stop sending and discard what arrives for a moment before closing
  // (a lingering close), so that its TCP stack does not reset the
  // connection before the client has read the answer.
  void CloseAfterAnswer() {
    if (body_complete_ || !parser_) return Close();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    lingered_ = 0;
    lingering_ = true;
    if (!reading_) Linger();  // else OnBody continues it: one read at a time
  }

  void Linger() {
    stream_.expires_after(std::chrono::seconds(2));
    stream_.async_read_some(asio::buffer(chunk_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->lingered_ += n;
                              if (ec || self->lingered_ > (4u << 20)) return self->Close();
                              self->Linger();
                            });
  }

  void Close() {
    rate_timer_.cancel();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  asio::steady_timer rate_timer_{stream_.get_executor()};  // ArmRateTimer
  HttpServer::Impl* server_;
  const uint64_t id_;
  const asio::ip::address client_;
  bool first_request_ = true;  // no request header has arrived yet
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  HttpHandler::BodyPlan plan_;
  char chunk_[64 * 1024];
  std::string body_;
  // Time spent waiting for this request's body to arrive (not while the
  // handler held it back), and when the read in flight began.
  SteadyClock::duration body_waited_{};
  SteadyClock::time_point read_began_;
  uint64_t body_read_ = 0;
  uint64_t reserved_ = 0;  // of the server's room for bodies, held by body_
  std::shared_ptr<BodyPipe> pipe_;
  std::optional<Response> pending_;   // a refusal, sent once the handler gives up the body
  std::optional<Response> deferred_;  // an answer waiting for the interim 100 to be written
  bool writing_continue_ = false;
  size_t lingered_ = 0;
  bool lingering_ = false;
  bool reading_ = false;  // a body read is in flight
  bool stream_answered_ = false;
  bool busy_ = false;
  bool body_complete_ = false;
  bool responded_ = false;
  bool close_after_ = false;
  bool chunked_ = false;           // the answer is going out in chunks
  bool chunked_complete_ = false;  // ... and its last chunk was sent
  bool unframed_ = false;          // ... to an HTTP/1.0 client: without chunk framing
};

std::shared_ptr<Session> NewSession(tcp::socket socket, HttpServer::Impl* server, uint64_t id,
                                    asio::ip::address client) {
  return std::make_shared<Session>(std::move(socket), server, id, std::move(client));
}
void StartSession(Session& session) { session.Start(); }
void CloseSessionWhenIdle(Session& session) { session.CloseWhenIdle(); }
void CloseSessionNow(Session& session) { session.CloseNow(); }

}  // namespace loam::server
