#include "processor/base/listen_address.h"

#include <arpa/inet.h>

#include <charconv>

namespace oncecount::base {

Result<ListenAddress> ParseListenAddress(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return InvalidArgument("expected host:port, got " + quoted);
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  const auto [end, error] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || error != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return InvalidArgument("expected host:port with a port in 0..65535, got " + quoted);
  }
  const bool bracketed = host.size() >= 2 && host.front() == '[' && host.back() == ']';
  if (bracketed) host = host.substr(1, host.size() - 2);
  ListenAddress out;
  out.ip = host == "localhost" && !bracketed ? "127.0.0.1" : std::string(host);
  out.port = static_cast<uint16_t>(port);
  unsigned char bytes[16];
  if (inet_pton(bracketed ? AF_INET6 : AF_INET, out.ip.c_str(), bytes) != 1) {
    return InvalidArgument(
        "expected localhost, an IPv4 address or an IPv6 address in brackets "
        "before the port (a name is not resolved), got " +
        quoted);
  }
  return out;
}

}  // namespace oncecount::base
