#include "http/client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace oncecount::http {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

base::Result<ClientResponse> HttpGet(const std::string& base_url, const std::string& target,
                                     std::chrono::milliseconds timeout) {
  constexpr std::string_view kScheme = "http://";
  if (base_url.rfind(kScheme, 0) != 0) {
    return base::InvalidArgument("expected a URL like http://host:port, got " + base_url);
  }
  std::string authority = base_url.substr(kScheme.size());
  while (!authority.empty() && authority.back() == '/') authority.pop_back();
  const size_t colon = authority.rfind(':');
  if (colon == std::string::npos || authority.find('/') != std::string::npos) {
    return base::InvalidArgument("expected a URL like http://host:port, got " + base_url);
  }
  std::string host = authority.substr(0, colon);
  const std::string port = authority.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);

  net::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(host, port, ec);
  if (ec) return base::IoFailure("cannot resolve " + authority + ": " + ec.message());
  ClientResponse out;
  std::string failure;
  stream.expires_after(timeout);
  stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) {
    if (e) {
      failure = "cannot connect to " + authority + ": " + e.message();
      return;
    }
    auto req = std::make_shared<bhttp::request<bhttp::empty_body>>(bhttp::verb::get, target, 11);
    req->set(bhttp::field::host, authority);
    req->set(bhttp::field::user_agent, "oncecount");
    bhttp::async_write(stream, *req, [&, req](beast::error_code we, size_t) {
      if (we) {
        failure = "cannot send the request to " + authority + ": " + we.message();
        return;
      }
      auto buffer = std::make_shared<beast::flat_buffer>();
      auto res = std::make_shared<bhttp::response<bhttp::string_body>>();
      bhttp::async_read(stream, *buffer, *res, [&, buffer, res](beast::error_code re, size_t) {
        if (re) {
          failure = "cannot read the response from " + authority + ": " + re.message();
          return;
        }
        out.status = res->result_int();
        out.body = std::move(res->body());
      });
    });
  });
  io.run();
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  if (!failure.empty()) return base::IoFailure(failure);
  return out;
}

}  // namespace oncecount::http
