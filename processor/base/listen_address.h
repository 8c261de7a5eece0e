// ListenAddress: where a server listens, `host:port`, as the configuration
// (http.listen), the demo's --http and the HTTP server all read it: one parser, so
// that an address check-config accepts is one the server can bind.
//
//   host  localhost, an IPv4 address (127.0.0.1, 0.0.0.0) or an IPv6 one in brackets
//         ([::1], [::]); not a name to resolve: which address it would bind is not
//         the configuration's to guess
//   port  decimal digits, 0..65535 (0: any free port)
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "processor/base/result.h"

namespace oncecount::base {

struct ListenAddress {
  std::string ip;  // the address to bind, without brackets; "localhost" is 127.0.0.1
  uint16_t port = 0;
};

// The address, or an error message saying what is wrong with it (no subject: the
// caller names the key or flag).
Result<ListenAddress> ParseListenAddress(std::string_view text);

}  // namespace oncecount::base
