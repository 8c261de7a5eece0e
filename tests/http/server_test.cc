// The HTTP server over real loopback sockets: answers, limits, timeouts, overload.
#include "http/server.h"

#include <gtest/gtest.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace oncecount::http {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using namespace std::chrono_literals;

// A server on an ephemeral loopback port, its io_context run by one thread.
class ServerFixture : public ::testing::Test {
 protected:
  void StartServer(Handler handler, ServerLimits limits = {}, int threads = 1) {
    auto listening = Server::Listen(io_, "127.0.0.1:0", std::move(handler), limits);
    ASSERT_TRUE(listening.ok()) << listening.message();
    server_ = listening.value();
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    io_.stop();
    for (std::thread& t : threads_) t.join();
  }

  tcp::socket Connect() {
    tcp::socket socket(client_io_);
    socket.connect(server_->local_endpoint());
    return socket;
  }

  // Sends raw bytes and reads one response (status 0 if the server closed first).
  bhttp::response<bhttp::string_body> Exchange(tcp::socket& socket, const std::string& raw) {
    net::write(socket, net::buffer(raw));
    return ReadResponse(socket);
  }

  bhttp::response<bhttp::string_body> ReadResponse(tcp::socket& socket, bool head = false) {
    bhttp::response_parser<bhttp::string_body> parser;
    parser.skip(head);
    beast::error_code ec;
    bhttp::read(socket, buffer_, parser, ec);
    if (ec) return {};
    return parser.release();
  }

  // True when the server closes the connection (EOF) within `timeout`.
  bool ClosedWithin(tcp::socket& socket, std::chrono::milliseconds timeout) {
    socket.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char c;
    while (std::chrono::steady_clock::now() < deadline) {
      beast::error_code ec;
      socket.read_some(net::buffer(&c, 1), ec);
      if (ec == net::error::eof || ec == net::error::connection_reset) return true;
      if (ec && ec != net::error::would_block) return true;
      std::this_thread::yield();
    }
    return false;
  }

  net::io_context io_;
  net::io_context client_io_;
  std::shared_ptr<Server> server_;
  std::vector<std::thread> threads_;
  beast::flat_buffer buffer_;
};

Handler Echo() {
  return [](const Request& r) {
    return Response{200, "application/json",
                    "{\"method\":\"" + r.method + "\",\"target\":\"" + r.target + "\"}", ""};
  };
}

TEST_F(ServerFixture, AnswersRequestsOnAKeptAliveConnection) {
  StartServer(Echo());
  tcp::socket s = Connect();
  auto first = Exchange(s, "GET /v1/stats HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(first.result_int(), 200u);
  EXPECT_EQ(first.body(), R"({"method":"GET","target":"/v1/stats"})");
  EXPECT_EQ(first[bhttp::field::content_type], "application/json");
  auto second = Exchange(s, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(second.body(), R"({"method":"GET","target":"/healthz"})");
}

TEST_F(ServerFixture, AnswersHeadWithHeadersOnly) {
  StartServer(Echo());
  tcp::socket s = Connect();
  net::write(s, net::buffer(std::string("HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n")));
  auto head = ReadResponse(s, true);
  EXPECT_EQ(head.result_int(), 200u);
  EXPECT_EQ(head[bhttp::field::content_length], "31");  // {"method":"HEAD","target":"/x"}
  EXPECT_TRUE(head.body().empty());
}

TEST_F(ServerFixture, PassesTheAllowHeaderOfA405) {
  StartServer([](const Request&) { return Response{405, "application/json", "{}", "GET, HEAD"}; });
  tcp::socket s = Connect();
  auto r = Exchange(s, "POST /v1/stats HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
  EXPECT_EQ(r.result_int(), 405u);
  EXPECT_EQ(r[bhttp::field::allow], "GET, HEAD");
}

TEST_F(ServerFixture, Answers431ToOversizedHeadersAndCloses) {
  ServerLimits limits;
  limits.header_limit = 1024;
  StartServer(Echo(), limits);
  tcp::socket s = Connect();
  auto r =
      Exchange(s, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'a') + "\r\n\r\n");
  EXPECT_EQ(r.result_int(), 431u);
  EXPECT_NE(r.body().find("\"error\":\"headers_too_large\""), std::string::npos) << r.body();
  EXPECT_TRUE(ClosedWithin(s, 5s));
}

TEST_F(ServerFixture, Answers413ToOversizedBodies) {
  ServerLimits limits;
  limits.body_limit = 100;
  StartServer(Echo(), limits);
  tcp::socket s = Connect();
  auto r = Exchange(
      s, "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + std::string(5000, 'b'));
  EXPECT_EQ(r.result_int(), 413u);
  EXPECT_NE(r.body().find("\"error\":\"body_too_large\""), std::string::npos) << r.body();
}

// Regression: the server closed with the rest of the body unread, so the kernel reset
// the connection, and a client still sending saw the reset instead of the 413.
TEST_F(ServerFixture, AClientStillSendingABodyTooLargeReadsThe413) {
  ServerLimits limits;
  limits.body_limit = 100;
  StartServer(Echo(), limits);
  tcp::socket s = Connect();
  const std::string body(8 << 20, 'b');  // far more than the socket buffers hold
  const std::string head =
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  beast::error_code ec;
  net::write(s, net::buffer(head), ec);
  ASSERT_FALSE(ec) << ec.message();
  net::write(s, net::buffer(body), ec);
  EXPECT_FALSE(ec) << "the server reset the connection while the body was sent: " << ec.message();
  const auto r = ReadResponse(s);
  EXPECT_EQ(r.result_int(), 413u);
  EXPECT_TRUE(ClosedWithin(s, 5s));
}

TEST_F(ServerFixture, Answers400ToMalformedHttp) {
  StartServer(Echo());
  for (const char* raw :
       {"GARBAGE\r\n\r\n", "GET / HTTP/9.9\r\n\r\n", "GET / HTTP/1.1\r\nBad Header\r\n\r\n"}) {
    tcp::socket s = Connect();
    auto r = Exchange(s, raw);
    EXPECT_EQ(r.result_int(), 400u) << raw;
    EXPECT_NE(r.body().find("\"error\":\"bad_request\""), std::string::npos) << r.body();
  }
}

// Regression: `Transfer-Encoding: gzip` without chunked was answered 200 on a
// connection left open (RFC 9112 §6.3 asks for 400 and close).
TEST_F(ServerFixture, Answers400AndClosesWhenChunkedIsNotTheLastTransferCoding) {
  StartServer(Echo());
  for (const char* coding : {"gzip", "chunked, gzip", "identity"}) {
    tcp::socket s = Connect();
    auto r = Exchange(
        s, std::string("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: ") + coding + "\r\n\r\n");
    EXPECT_EQ(r.result_int(), 400u) << coding;
    EXPECT_NE(r.body().find("Transfer-Encoding"), std::string::npos) << r.body();
    EXPECT_TRUE(ClosedWithin(s, 5s)) << coding;
  }
  tcp::socket s = Connect();
  auto r = Exchange(s, "GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n");
  EXPECT_EQ(r.result_int(), 200u) << "chunked alone is fine";
}

TEST_F(ServerFixture, ClosesAClientThatSendsNothingWithinTheReadTimeout) {
  ServerLimits limits;
  limits.read_timeout = 300ms;
  StartServer(Echo(), limits);
  tcp::socket idle = Connect();
  tcp::socket slow = Connect();
  net::write(slow, net::buffer(std::string("GET / HTTP/1.1\r\nHo")));  // never finishes
  EXPECT_TRUE(ClosedWithin(idle, 10s));
  EXPECT_TRUE(ClosedWithin(slow, 10s));
}

TEST_F(ServerFixture, ClosesTheConnectionIdleLongestToServeANewOneAtTheLimit) {
  ServerLimits limits;
  limits.max_connections = 2;
  StartServer(Echo(), limits);
  tcp::socket a = Connect();
  tcp::socket b = Connect();
  // Both are served, then wait on their kept-alive connections: a since earlier.
  EXPECT_EQ(Exchange(a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u);
  EXPECT_EQ(Exchange(b, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u);
  tcp::socket c = Connect();
  EXPECT_EQ(Exchange(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u);
  EXPECT_TRUE(ClosedWithin(a, 5s)) << "the connection idle longest made room";
  EXPECT_EQ(Exchange(b, "GET /b HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u)
      << "the others stay";
}

// Regression: 256 idle connections (the default limit) made /healthz and /readyz
// answer 503 for as long as they were held, so Kubernetes restarted healthy pods.
TEST_F(ServerFixture, AnswersProbesWhileIdleConnectionsHoldEveryPlace) {
  StartServer(Echo());
  std::vector<tcp::socket> idle;
  for (size_t i = 0; i < ServerLimits{}.max_connections; ++i) idle.push_back(Connect());
  // The probes keep their connections: each one finds every place taken.
  std::vector<tcp::socket> probes;
  for (int probe = 0; probe < 5; ++probe) {
    probes.push_back(Connect());
    EXPECT_EQ(Exchange(probes.back(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").result_int(),
              200u)
        << "probe " << probe;
  }
  size_t evicted = 0;
  for (tcp::socket& s : idle) evicted += ClosedWithin(s, 2ms) ? 1 : 0;
  EXPECT_EQ(evicted, 5u) << "each probe made room by closing the longest idle connection";
}

TEST_F(ServerFixture, Answers503WhenEveryConnectionIsBusyWithARequest) {
  ServerLimits limits;
  limits.max_connections = 2;
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool release = false;
  // Requests to /block wait inside the handler until released: busy connections.
  StartServer(
      [&](const Request& r) {
        if (r.target == "/block") {
          std::unique_lock lock(mu);
          ++inside;
          cv.notify_all();
          cv.wait(lock, [&] { return release; });
        }
        return Response{200, "application/json", "{}", ""};
      },
      limits, 3);
  tcp::socket a = Connect();
  tcp::socket b = Connect();
  net::write(a, net::buffer(std::string("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")));
  net::write(b, net::buffer(std::string("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return inside == 2; }));
  }
  tcp::socket c = Connect();
  auto r = ReadResponse(c);
  EXPECT_EQ(r.result_int(), 503u);
  EXPECT_NE(r.body().find("\"error\":\"overloaded\""), std::string::npos);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(ReadResponse(a).result_int(), 200u);
  EXPECT_EQ(ReadResponse(b).result_int(), 200u);
}

TEST_F(ServerFixture, TurnsAHandlerExceptionIntoA500) {
  StartServer([](const Request&) -> Response { throw std::runtime_error("boom"); });
  tcp::socket s = Connect();
  auto r = Exchange(s, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.result_int(), 500u);
  EXPECT_NE(r.body().find("boom"), std::string::npos);
}

TEST(ServerListen, NamesTheAddressWhenItCannotListen) {
  net::io_context io;
  auto bad = Server::Listen(io, "not-an-ip:80", Echo());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), base::Errc::kBadConfig);
  EXPECT_EQ(bad.error().subject(), "http.listen");
  EXPECT_NE(bad.message().find("not-an-ip"), std::string::npos);
  EXPECT_FALSE(Server::Listen(io, "127.0.0.1:99999", Echo()).ok());
  // Regression: the port was read with stoul, which stopped at the first non-digit.
  EXPECT_FALSE(Server::Listen(io, "127.0.0.1:80abc", Echo()).ok());
}

}  // namespace
}  // namespace oncecount::http
