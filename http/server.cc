#include "http/server.h"

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <map>
#include <mutex>
#include <optional>

#include "http/http_error.h"
#include "processor/base/listen_address.h"

namespace oncecount::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {
class Session;
}  // namespace

struct Server::Shared {
  net::io_context& io;
  tcp::acceptor acceptor;
  net::steady_timer accept_retry;  // on the acceptor's strand
  bool accept_failing = false;     // on the acceptor's strand
  Handler handler;
  ServerLimits limits;
  ServerEvents events;
  std::atomic<size_t> connections{0};
  std::atomic<size_t> response_bytes{0};  // of the responses being sent
  // The sessions waiting for a request (idle keep-alive, or not a whole request
  // yet), by the order they began to wait, and those whose response is being sent,
  // with when they last sent some of it: at the cap the longest waiting one is closed
  // to make room, or else the writing one whose client has read nothing for longest,
  // at least stalled_write_grace (EvictOne).
  struct Writer {
    std::weak_ptr<Session> session;
    std::chrono::steady_clock::time_point progress;
  };
  std::mutex evictable_mu;
  std::map<uint64_t, std::weak_ptr<Session>> waiting;
  std::map<uint64_t, Writer> writing;
  uint64_t next_ticket = 1;
  Shared(net::io_context& context, Handler h, ServerLimits l, ServerEvents e)
      : io(context),
        acceptor(net::make_strand(context)),
        accept_retry(acceptor.get_executor()),
        handler(std::move(h)),
        limits(l),
        events(std::move(e)) {}
  // Closes a session to make room for a new one; false when none may be closed.
  bool EvictOne();
  void CountRefused() const {
    if (events.refused != nullptr) events.refused->Add();
  }
};

namespace {

Response ErrorResponse(const HttpError& e) {
  Response r;
  r.status = static_cast<unsigned>(e.status);
  r.body = ErrorBody(e);
  r.allow = e.allow;
  return r;
}

// One connection: read a request, answer it, repeat while keep-alive holds.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<Server::Shared> shared, bool over_limit)
      : stream_(std::move(socket)), shared_(std::move(shared)), over_limit_(over_limit) {
    ++shared_->connections;
  }
  ~Session() {
    StopWaiting();
    StopWriting();
    --shared_->connections;
  }

  void Start() {
    // Waiting from the start: a connection that never sends a request can be
    // evicted as soon as the next one is accepted.
    if (!over_limit_) StartWaiting();
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      if (self->over_limit_) {
        self->Send(ErrorResponse({503, "overloaded", "too many open connections; retry later"}),
                   false, 11);
      } else {
        self->Read();
      }
    });
  }

  // Closes the connection on its own strand (another session's accept asks), unless
  // it has moved on from the wait or the write `ticket` meanwhile: a request that
  // arrived is answered, a response that went on is not cut.
  void Evict(uint64_t ticket) {
    net::dispatch(stream_.get_executor(), [self = shared_from_this(), ticket] {
      bool still = false;
      {
        std::lock_guard lock(self->shared_->evictable_mu);
        still = self->wait_ticket_ == ticket || self->write_ticket_ == ticket;
      }
      if (still) self->Close();
    });
  }

 private:
  void StartWaiting() {
    std::lock_guard lock(shared_->evictable_mu);
    if (wait_ticket_ != 0 && shared_->waiting.count(wait_ticket_) != 0) return;
    wait_ticket_ = shared_->next_ticket++;
    shared_->waiting.emplace(wait_ticket_, weak_from_this());
  }
  void StopWaiting() {
    std::lock_guard lock(shared_->evictable_mu);
    if (wait_ticket_ != 0) shared_->waiting.erase(wait_ticket_);
    wait_ticket_ = 0;
  }
  void StartWriting() {
    std::lock_guard lock(shared_->evictable_mu);
    write_ticket_ = shared_->next_ticket++;
    shared_->writing.emplace(
        write_ticket_, Server::Shared::Writer{weak_from_this(), std::chrono::steady_clock::now()});
  }
  // Some of the response went out: its client reads.
  void WriteProgressed() {
    std::lock_guard lock(shared_->evictable_mu);
    const auto it = shared_->writing.find(write_ticket_);
    if (it != shared_->writing.end()) it->second.progress = std::chrono::steady_clock::now();
  }
  void StopWriting() {
    std::lock_guard lock(shared_->evictable_mu);
    if (write_ticket_ != 0) shared_->writing.erase(write_ticket_);
    write_ticket_ = 0;
  }

  void Read() {
    StartWaiting();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(shared_->limits.header_limit));
    parser_->body_limit(shared_->limits.body_limit);
    stream_.expires_after(shared_->limits.read_timeout);
    bhttp::async_read(
        stream_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    StopWaiting();
    if (ec == bhttp::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted || ec == net::error::connection_reset ||
        ec == net::error::eof) {
      return Close();
    }
    const unsigned version = parser_->get().version() == 10 ? 10 : 11;
    if (ec == bhttp::error::header_limit) {
      return Send(ErrorResponse({431, "headers_too_large",
                                 "request headers exceed " +
                                     std::to_string(shared_->limits.header_limit) + " bytes"}),
                  false, version);
    }
    if (ec == bhttp::error::body_limit) {
      return Send(ErrorResponse({413, "body_too_large",
                                 "request bodies are limited to " +
                                     std::to_string(shared_->limits.body_limit) + " bytes"}),
                  false, version);
    }
    if (ec) {
      return Send(ErrorResponse({400, "bad_request", "malformed HTTP request: " + ec.message()}),
                  false, version);
    }
    const auto& req = parser_->get();
    if (req.find(bhttp::field::transfer_encoding) != req.end() && !parser_->chunked()) {
      // RFC 9112 §6.3: with a transfer coding other than chunked last, the body's
      // length cannot be known: 400, and the connection closes.
      return Send(ErrorResponse({400, "bad_request",
                                 "unsupported Transfer-Encoding: only chunked (last) is accepted"}),
                  false, version);
    }
    Response response;
    try {
      response =
          shared_->handler(Request{std::string(req.method_string()), std::string(req.target())});
    } catch (const std::exception& e) {
      // The module's edge: a handler bug must not take the connection's thread down.
      response = ErrorResponse({500, "internal", e.what()});
    }
    if (req.method() == bhttp::verb::head) head_only_ = true;
    Send(std::move(response), req.keep_alive(), req.version());
  }

  std::unique_ptr<bhttp::response<bhttp::string_body>> Message(Response r, bool keep_alive,
                                                               unsigned version) {
    auto res = std::make_unique<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version);
    res->set(bhttp::field::server, "oncecount");
    res->set(bhttp::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(bhttp::field::allow, r.allow);
    res->keep_alive(keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    if (head_only_) res->body().clear();  // Content-Length stays that of the GET
    return res;
  }

  // Takes `bytes` of the responses' bound; false when they would exceed it.
  bool ReserveResponseBytes(size_t bytes) {
    size_t held = shared_->response_bytes.load();
    do {
      if (held + bytes > shared_->limits.max_response_bytes) return false;
    } while (!shared_->response_bytes.compare_exchange_weak(held, held + bytes));
    return true;
  }

  void Send(Response r, bool keep_alive, unsigned version) {
    response_ = Message(std::move(r), keep_alive, version);
    if (!ReserveResponseBytes(response_->body().size())) {
      // Clients that do not read what they asked for must not hold the memory of
      // the process: the responses waiting to be sent are bounded. The error is
      // small, and taken whatever the bound.
      shared_->CountRefused();
      response_ =
          Message(ErrorResponse({503, "overloaded",
                                 "responses waiting to be sent exceed " +
                                     std::to_string(shared_->limits.max_response_bytes >> 20) +
                                     " MiB; retry later"}),
                  keep_alive, version);
      shared_->response_bytes += response_->body().size();
    }
    head_only_ = false;
    reserved_ = response_->body().size();
    serializer_.emplace(*response_);
    StartWriting();
    stream_.expires_after(shared_->limits.write_timeout);
    WriteSome(keep_alive);
  }

  // The response a piece at a time, so that a client reading slowly is told from one
  // that does not read at all (WriteProgressed).
  void WriteSome(bool keep_alive) {
    bhttp::async_write_some(stream_, *serializer_,
                            [self = shared_from_this(), keep_alive](beast::error_code ec, size_t) {
                              if (!ec && !self->serializer_->is_done()) {
                                self->WriteProgressed();
                                return self->WriteSome(keep_alive);
                              }
                              self->StopWriting();
                              self->shared_->response_bytes -= self->reserved_;
                              self->reserved_ = 0;
                              self->serializer_.reset();
                              self->response_.reset();
                              if (ec) return self->Close();
                              if (!keep_alive) return self->CloseAfterAnswer();
                              self->Read();
                            });
  }

  // An answer that ends the connection may come before the client has sent all of its
  // request (a 413 after the headers, a 503 to a connection over the limit). Closing
  // with its bytes unread makes the kernel send a reset, which can reach the client
  // before the answer: it would see a reset, not the 413 or 503. So stop sending
  // (the client reads the answer, then end of stream), read and discard what it still
  // sends, within a bound of time and bytes, and close.
  void CloseAfterAnswer() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(shared_->limits.close_linger);
    Discard();
  }
  void Discard() {
    stream_.async_read_some(net::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              self->discarded_ += n;
                              if (ec || self->discarded_ >= kLingerBytes) return self->Close();
                              self->Discard();
                            });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.socket().close(ignored);
  }

  static constexpr size_t kLingerBytes = size_t{64} << 20;

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::array<char, 16384> discard_;  // what a closing connection still receives
  size_t discarded_ = 0;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<Server::Shared> shared_;
  bool over_limit_;
  bool head_only_ = false;
  // The response being sent (on the strand), and its bytes counted in
  // shared_->response_bytes.
  std::unique_ptr<bhttp::response<bhttp::string_body>> response_;
  std::optional<bhttp::response_serializer<bhttp::string_body>> serializer_;
  size_t reserved_ = 0;
  // Their entries in shared_->waiting and shared_->writing (guarded by evictable_mu;
  // an entry EvictOne took is gone while its ticket is still set).
  uint64_t wait_ticket_ = 0;
  uint64_t write_ticket_ = 0;
};

// The address to listen on; a kBadConfig error (subject http.listen) says why not.
base::Result<tcp::endpoint> ParseEndpoint(const std::string& address) {
  const auto bad = [&address](const std::string& why) {
    return base::Error(base::Errc::kBadConfig, address + ": " + why, "http.listen");
  };
  base::Result<base::ListenAddress> parsed = base::ParseListenAddress(address);
  if (!parsed) return bad(parsed.message());
  beast::error_code ec;
  const auto ip = net::ip::make_address(parsed->ip, ec);
  if (ec) return bad("\"" + parsed->ip + "\" is not an IP address");
  return tcp::endpoint(ip, parsed->port);
}

}  // namespace

Server::Server(std::shared_ptr<Shared> shared) : shared_(std::move(shared)) {}

base::Result<std::shared_ptr<Server>> Server::Listen(net::io_context& io,
                                                     const std::string& address, Handler handler,
                                                     ServerLimits limits, ServerEvents events) {
  const base::Result<tcp::endpoint> endpoint = ParseEndpoint(address);
  if (!endpoint) return endpoint.error();
  auto shared = std::make_shared<Shared>(io, std::move(handler), limits, std::move(events));
  beast::error_code ec;
  shared->acceptor.open(endpoint->protocol(), ec);
  if (!ec) shared->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) shared->acceptor.bind(*endpoint, ec);
  if (!ec) shared->acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return base::Error(base::Errc::kIo, address + ": " + ec.message(), "http.listen");
  std::shared_ptr<Server> server(new Server(std::move(shared)));
  server->Accept();
  return server;
}

bool Server::Shared::EvictOne() {
  std::shared_ptr<Session> victim;
  uint64_t ticket = 0;
  {
    std::lock_guard lock(evictable_mu);
    while (!victim && !waiting.empty()) {
      ticket = waiting.begin()->first;
      victim = waiting.begin()->second.lock();
      waiting.erase(waiting.begin());
    }
    const auto stalled_since = std::chrono::steady_clock::now() - limits.stalled_write_grace;
    while (!victim) {
      // At most max_connections writers: the one whose client read last longest ago.
      auto stalled = std::min_element(
          writing.begin(), writing.end(),
          [](const auto& a, const auto& b) { return a.second.progress < b.second.progress; });
      if (stalled == writing.end() || stalled->second.progress > stalled_since) break;
      ticket = stalled->first;
      victim = stalled->second.session.lock();
      writing.erase(stalled);
    }
  }
  if (!victim) return false;
  victim->Evict(ticket);
  return true;
}

void Server::Accept() {
  auto shared = shared_;
  shared->acceptor.async_accept(
      net::make_strand(shared->io),
      [shared, self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !shared->acceptor.is_open()) return;
        if (ec) return self->AcceptAfterError(ec);
        if (shared->accept_failing) {
          shared->accept_failing = false;
          if (shared->events.warn) shared->events.warn("http: accepting connections again");
        }
        const size_t open = shared->connections.load();
        if (open >= 2 * shared->limits.max_connections) {
          // Past twice the cap even a 503 and its linger would hold a descriptor
          // each: a flood of connections must not run the process out of them.
          shared->CountRefused();
          beast::error_code ignored;
          socket.close(ignored);
        } else {
          // At the cap, a connection waiting for a request makes room, or one
          // whose client has not read its response for a while: neither idle nor
          // non-reading connections can lock out the probes (or anyone) for as
          // long as they are held. Only when every connection is busy is the new
          // one answered 503.
          const bool over = open >= shared->limits.max_connections && !shared->EvictOne();
          if (over) shared->CountRefused();
          std::make_shared<Session>(std::move(socket), shared, over)->Start();
        }
        self->Accept();
      });
}

// Accepting again at once after an error that persists (out of file descriptors:
// the connection stays queued) would spin the HTTP thread; so wait a little. Other
// errors concern one connection, which is gone: the next one is accepted at once.
void Server::AcceptAfterError(const boost::system::error_code& error) {
  if (shared_->events.accept_errors != nullptr) shared_->events.accept_errors->Add();
  const bool out_of_resources =
      error == net::error::no_descriptors || error == net::error::no_buffer_space ||
      error == net::error::no_memory || error == std::errc::too_many_files_open_in_system;
  if (!out_of_resources) return Accept();
  if (!shared_->accept_failing) {
    shared_->accept_failing = true;
    if (shared_->events.warn) {
      shared_->events.warn("http: cannot accept connections (" + error.message() +
                           "); retrying every " +
                           std::to_string(shared_->limits.accept_retry_delay.count()) + " ms");
    }
  }
  shared_->accept_retry.expires_after(shared_->limits.accept_retry_delay);
  shared_->accept_retry.async_wait(
      [shared = shared_, self = shared_from_this()](beast::error_code ec) {
        if (ec || !shared->acceptor.is_open()) return;
        self->Accept();
      });
}

tcp::endpoint Server::local_endpoint() const {
  beast::error_code ec;
  return shared_->acceptor.local_endpoint(ec);
}

void Server::Stop() {
  net::dispatch(shared_->acceptor.get_executor(), [shared = shared_] {
    beast::error_code ignored;
    shared->acceptor.close(ignored);
    shared->accept_retry.cancel();
  });
}

size_t Server::open_connections() const {
  return shared_->connections.load();
}

}  // namespace oncecount::http
