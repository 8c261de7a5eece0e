// The HTTP server over real loopback sockets: answers, limits, timeouts, overload.
#include "http/server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
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
  void StartServer(Handler handler, ServerLimits limits = {}, int threads = 1,
                   ServerEvents events = {}) {
    auto listening =
        Server::Listen(io_, "127.0.0.1:0", std::move(handler), limits, std::move(events));
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
  // A client that reads slowly: a small receive window, so that a large response
  // stays mostly in the server's hands until it reads.
  tcp::socket ConnectWithASmallWindow() {
    tcp::socket socket(client_io_);
    socket.open(tcp::v4());
    socket.set_option(net::socket_base::receive_buffer_size(16 * 1024));
    socket.connect(server_->local_endpoint());
    return socket;
  }

  // Reads until the server closes the connection or `timeout` passes; the bytes read,
  // and whether it closed.
  std::pair<size_t, bool> ReadUntilClosed(tcp::socket& socket, std::chrono::milliseconds timeout) {
    socket.non_blocking(true);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<char> chunk(1 << 16);
    size_t total = 0;
    while (std::chrono::steady_clock::now() < deadline) {
      beast::error_code ec;
      total += socket.read_some(net::buffer(chunk), ec);
      if (ec == net::error::would_block) {
        std::this_thread::yield();
      } else if (ec) {
        return {total, true};
      }
    }
    return {total, false};
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

// A handler whose /big answer is larger than what the kernel buffers between a
// server and a client that does not read.
constexpr size_t kBigBody = size_t{24} << 20;
Handler BigAnswers() {
  return [](const Request& r) {
    return Response{200, "application/json", r.target == "/big" ? std::string(kBigBody, 'x') : "{}",
                    ""};
  };
}

// Sends GET /big and reads the first bytes of its answer into `buffer`: the server is
// sending it.
void AskForABigAnswerAndStopReading(tcp::socket& socket, beast::flat_buffer& buffer) {
  net::write(socket, net::buffer(std::string("GET /big HTTP/1.1\r\nHost: x\r\n\r\n")));
  buffer.commit(net::read(socket, buffer.prepare(16)));
}

// The size of the body of the answer whose first bytes are in `buffer`; 0 if it does
// not come whole.
size_t BodySizeOfTheAnswer(tcp::socket& socket, beast::flat_buffer& buffer) {
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(kBigBody);
  beast::error_code ec;
  bhttp::read(socket, buffer, parser, ec);
  return ec ? 0 : parser.get().body().size();
}

// Regression: a client that asked for a large answer and did not read it kept its
// connection for the whole write timeout, not evictable: 256 of them made /healthz
// answer 503 (and Kubernetes restart the pod), whatever the probes did.
TEST_F(ServerFixture, ClosesTheConnectionWhoseClientLeftItsAnswerUnreadLongestToServeANewOne) {
  ServerLimits limits;
  limits.max_connections = 2;
  limits.stalled_write_grace = 0ms;  // any unread answer may be closed at the cap
  base::Counter refused;
  StartServer(BigAnswers(), limits, 1, ServerEvents{{}, &refused, nullptr});
  beast::flat_buffer a_read, b_read;
  tcp::socket a = ConnectWithASmallWindow();
  AskForABigAnswerAndStopReading(a, a_read);
  tcp::socket b = ConnectWithASmallWindow();
  AskForABigAnswerAndStopReading(b, b_read);
  tcp::socket probe = Connect();
  EXPECT_EQ(Exchange(probe, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u);
  const auto [a_bytes, a_closed] = ReadUntilClosed(a, 10s);
  EXPECT_TRUE(a_closed) << "the answer left unread longest made room";
  EXPECT_LT(a_bytes, kBigBody);
  EXPECT_EQ(BodySizeOfTheAnswer(b, b_read), kBigBody) << "the other one is answered whole";
  EXPECT_EQ(refused.value(), 0u);
}

// Without a grace of time, an answer being written is not taken for one left unread:
// every connection busy, the new one is refused.
TEST_F(ServerFixture, KeepsAnAnswerBeingWrittenWithinItsGraceAndRefusesTheNewConnection) {
  ServerLimits limits;
  limits.max_connections = 1;
  limits.stalled_write_grace = std::chrono::hours(1);
  base::Counter refused;
  StartServer(BigAnswers(), limits, 1, ServerEvents{{}, &refused, nullptr});
  beast::flat_buffer a_read;
  tcp::socket a = ConnectWithASmallWindow();
  AskForABigAnswerAndStopReading(a, a_read);
  tcp::socket probe = Connect();
  EXPECT_EQ(ReadResponse(probe).result_int(), 503u);
  EXPECT_EQ(refused.value(), 1u);
  EXPECT_EQ(BodySizeOfTheAnswer(a, a_read), kBigBody);
}

// Clients that ask and do not read must not hold the process's memory: the answers
// waiting to be sent are bounded, the one past the bound is a 503.
TEST_F(ServerFixture, Answers503WhenTheAnswersWaitingToBeSentWouldExceedTheirBound) {
  ServerLimits limits;
  limits.max_response_bytes = kBigBody + kBigBody / 2;
  base::Counter refused;
  StartServer(BigAnswers(), limits, 1, ServerEvents{{}, &refused, nullptr});
  beast::flat_buffer a_read;
  tcp::socket a = ConnectWithASmallWindow();
  AskForABigAnswerAndStopReading(a, a_read);
  tcp::socket b = Connect();
  auto r = Exchange(b, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.result_int(), 503u);
  EXPECT_NE(r.body().find("responses waiting to be sent exceed 36 MiB"), std::string::npos)
      << r.body();
  EXPECT_EQ(refused.value(), 1u);
  EXPECT_EQ(Exchange(b, "GET /small HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u)
      << "a small answer still fits";
}

// Past twice the cap not even a 503 is sent: it would hold a descriptor for its
// linger, and a flood of connections would run the process out of them.
TEST_F(ServerFixture, ClosesANewConnectionAtOncePastTwiceTheCap) {
  ServerLimits limits;
  limits.max_connections = 1;
  limits.close_linger = std::chrono::hours(1);  // the 503's connection stays open
  std::mutex mu;
  std::condition_variable cv;
  bool inside = false;
  bool release = false;
  base::Counter refused;
  StartServer(
      [&](const Request&) {
        std::unique_lock lock(mu);
        inside = true;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
        return Response{200, "application/json", "{}", ""};
      },
      limits, 2, ServerEvents{{}, &refused, nullptr});
  tcp::socket busy = Connect();
  net::write(busy, net::buffer(std::string("GET /block HTTP/1.1\r\nHost: x\r\n\r\n")));
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return inside; }));
  }
  tcp::socket over = Connect();
  EXPECT_EQ(ReadResponse(over).result_int(), 503u) << "at the cap: a 503, and a linger";
  tcp::socket flood = Connect();
  const auto [bytes, closed] = ReadUntilClosed(flood, 10s);
  EXPECT_TRUE(closed);
  EXPECT_EQ(bytes, 0u) << "past twice the cap: closed without an answer";
  EXPECT_EQ(refused.value(), 2u);
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  EXPECT_EQ(ReadResponse(busy).result_int(), 200u);
}

// Regression: an accept that failed (out of file descriptors, the connection left
// queued) was retried at once, in a loop that took the HTTP thread's whole CPU, and
// nothing said so. It is retried after a delay, logged once, and the server accepts
// again once descriptors are free.
TEST_F(ServerFixture, RetriesAFailedAcceptAfterADelayAndSaysSoOnce) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // With no descriptor free, the sanitizers' runtime cannot make the pipe it tests
  // memory with, and reports every checked object as invalid.
  GTEST_SKIP() << "a sanitizer's runtime needs file descriptors of its own";
#endif
  ServerLimits limits;
  limits.accept_retry_delay = 20ms;
  base::Counter accept_errors;
  std::mutex mu;
  std::vector<std::string> lines;
  StartServer(Echo(), limits, 1,
              ServerEvents{[&](const std::string& line) {
                             std::lock_guard lock(mu);
                             lines.push_back(line);
                           },
                           nullptr, &accept_errors});
  tcp::socket client(client_io_);
  client.open(tcp::v4());
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  uint64_t errors = 0;
  {
    // No descriptor free until the guard goes: the lowest free one is at the limit.
    const int lowest_free = fcntl(client.native_handle(), F_DUPFD, 0);
    ASSERT_GE(lowest_free, 0);
    close(lowest_free);
    rlimit none_free = before;
    none_free.rlim_cur = static_cast<rlim_t>(lowest_free);
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &none_free), 0);
    const std::unique_ptr<rlimit, void (*)(rlimit*)> restore(
        &before, [](rlimit* limit) { setrlimit(RLIMIT_NOFILE, limit); });
    client.connect(server_->local_endpoint());  // queued: the server cannot accept it
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (accept_errors.value() < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::yield();
    }
    errors = accept_errors.value();
  }
  EXPECT_GE(errors, 3u) << "each failed accept is retried";
  EXPECT_LT(errors, 100u) << "after a delay, not at once in a loop";
  EXPECT_EQ(Exchange(client, "GET /again HTTP/1.1\r\nHost: x\r\n\r\n").result_int(), 200u);
  std::lock_guard lock(mu);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("http: cannot accept connections (Too many open files); retrying "
                          "every 20 ms"),
            std::string::npos)
      << lines[0];
  EXPECT_EQ(lines[1], "http: accepting connections again");
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
