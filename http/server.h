// Server: the HTTP/1.1 server of the API (Boost.Beast), one session per connection,
// with the limits that keep a bad client from hurting the service:
//
//  - at most `max_connections` open connections: one more closes the connection
//    that has waited longest for a request (an idle keep-alive, or a client that
//    has not sent a whole request), or else the one whose client has read none of its
//    response for longest, at least `stalled_write_grace`, so neither
//    idle nor non-reading clients can lock out health probes; only when every
//    connection is busy with a request or a response younger than that is the new
//    one answered 503 {"error": "overloaded"} and closed (and past twice the cap,
//    closed at once);
//  - responses waiting to be sent hold at most `max_response_bytes` between them:
//    a response that would take more is answered 503 instead;
//  - an accept that fails for want of resources (out of file descriptors or memory)
//    is retried after `accept_retry_delay`, not at once in a loop, and said so
//    (ServerEvents); other accept errors (a connection that failed while queued)
//    are counted and the next one accepted at once;
//  - request headers (start line included) at most `header_limit` bytes (else 431),
//    bodies at most `body_limit` bytes (else 413; the API takes no bodies);
//  - a request must arrive within `read_timeout`, a response leave within
//    `write_timeout`, else the connection is closed (slow clients);
//  - malformed HTTP is answered 400 and the connection closed.
// Every error body is the API's JSON error object. Keep-alive is honoured.
//
// Thread-safety: Listen and Stop may be called from any thread; the handler runs on
// the io_context's threads (one strand per connection), so it must be thread-safe.
// The io_context and its threads belong to the caller (main).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "processor/base/metrics.h"
#include "processor/base/result.h"

namespace oncecount::http {

struct ServerLimits {
  size_t max_connections = 256;
  size_t header_limit = 8 * 1024;
  size_t body_limit = 8 * 1024;
  std::chrono::milliseconds read_timeout{10000};
  std::chrono::milliseconds write_timeout{10000};
  std::chrono::milliseconds stalled_write_grace{1000};
  size_t max_response_bytes = size_t{256} << 20;
  std::chrono::milliseconds accept_retry_delay{100};
  // How long a connection closed after its answer reads what the client still sends
  // (CloseAfterAnswer).
  std::chrono::milliseconds close_linger{2000};
};

// What the server tells its owner; every member may be left empty. Called from the
// io_context's threads.
struct ServerEvents {
  // A line for the log: accepting failed (once per run of failures) or works again.
  std::function<void(const std::string&)> warn;
  base::Counter* refused = nullptr;        // connections answered 503 or closed at once
  base::Counter* accept_errors = nullptr;  // failed accepts
};

struct Request {
  std::string method;
  std::string target;
};

struct Response {
  unsigned status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::string allow;  // the Allow header of a 405
};

using Handler = std::function<Response(const Request&)>;

class Server : public std::enable_shared_from_this<Server> {
 public:
  // Binds `address` ("host:port", "[v6]:port"; port 0 picks one) and starts
  // accepting. Errors (subject "http.listen") name the address and the reason: a
  // malformed address is kBadConfig, one that cannot be bound kIo.
  static base::Result<std::shared_ptr<Server>> Listen(boost::asio::io_context& io,
                                                      const std::string& address, Handler handler,
                                                      ServerLimits limits = {},
                                                      ServerEvents events = {});

  boost::asio::ip::tcp::endpoint local_endpoint() const;
  // Stops accepting; open connections finish their current exchange.
  void Stop();

  size_t open_connections() const;

  // What the listener and its sessions share; defined in server.cc.
  struct Shared;

 private:
  explicit Server(std::shared_ptr<Shared> shared);
  void Accept();
  void AcceptAfterError(const boost::system::error_code& error);

  std::shared_ptr<Shared> shared_;
};

}  // namespace oncecount::http
