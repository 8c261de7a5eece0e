#include "http/server.h"

#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
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
  Handler handler;
  ServerLimits limits;
  std::atomic<size_t> connections{0};
  // The sessions waiting for a request (idle keep-alive, or not a whole request
  // yet), by the order they began to wait: at the cap the longest waiting one is
  // closed to make room (EvictLongestWaiting).
  std::mutex waiting_mu;
  std::map<uint64_t, std::weak_ptr<Session>> waiting;
  uint64_t next_ticket = 1;
  Shared(net::io_context& context, Handler h, ServerLimits l)
      : io(context), acceptor(net::make_strand(context)), handler(std::move(h)), limits(l) {}
  // Closes the session that has waited longest for a request; false when none waits.
  bool EvictLongestWaiting();
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

  // Closes the connection on its own strand (another session's accept asks).
  void Evict() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

 private:
  void StartWaiting() {
    std::lock_guard lock(shared_->waiting_mu);
    if (ticket_ != 0) return;
    ticket_ = shared_->next_ticket++;
    shared_->waiting.emplace(ticket_, weak_from_this());
  }
  void StopWaiting() {
    std::lock_guard lock(shared_->waiting_mu);
    if (ticket_ != 0) shared_->waiting.erase(ticket_);
    ticket_ = 0;
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

  void Send(Response r, bool keep_alive, unsigned version) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version);
    res->set(bhttp::field::server, "oncecount");
    res->set(bhttp::field::content_type, r.content_type);
    if (!r.allow.empty()) res->set(bhttp::field::allow, r.allow);
    res->keep_alive(keep_alive);
    res->body() = std::move(r.body);
    res->prepare_payload();
    if (head_only_) res->body().clear();  // Content-Length stays that of the GET
    head_only_ = false;
    stream_.expires_after(shared_->limits.write_timeout);
    bhttp::async_write(stream_, *res,
                       [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
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
    stream_.expires_after(kLingerTime);
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

  static constexpr std::chrono::seconds kLingerTime{2};
  static constexpr size_t kLingerBytes = size_t{64} << 20;

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::array<char, 16384> discard_;  // what a closing connection still receives
  size_t discarded_ = 0;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<Server::Shared> shared_;
  bool over_limit_;
  bool head_only_ = false;
  uint64_t ticket_ = 0;  // in shared_->waiting while nonzero (guarded by waiting_mu)
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
                                                     ServerLimits limits) {
  const base::Result<tcp::endpoint> endpoint = ParseEndpoint(address);
  if (!endpoint) return endpoint.error();
  auto shared = std::make_shared<Shared>(io, std::move(handler), limits);
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

bool Server::Shared::EvictLongestWaiting() {
  std::shared_ptr<Session> victim;
  {
    std::lock_guard lock(waiting_mu);
    while (!victim && !waiting.empty()) {
      victim = waiting.begin()->second.lock();
      waiting.erase(waiting.begin());
    }
  }
  if (!victim) return false;
  victim->Evict();
  return true;
}

void Server::Accept() {
  auto shared = shared_;
  shared->acceptor.async_accept(
      net::make_strand(shared->io),
      [shared, self = shared_from_this()](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted || !shared->acceptor.is_open()) return;
        if (!ec) {
          // At the cap, a connection waiting for a request makes room: idle
          // connections cannot lock out the probes (or anyone) for as long as
          // they are held. Only when every connection is busy is the new one
          // answered 503.
          const bool over = shared->connections.load() >= shared->limits.max_connections &&
                            !shared->EvictLongestWaiting();
          std::make_shared<Session>(std::move(socket), shared, over)->Start();
        }
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
  });
}

size_t Server::open_connections() const {
  return shared_->connections.load();
}

}  // namespace oncecount::http
