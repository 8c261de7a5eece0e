// HttpGet: a small blocking HTTP/1.1 GET for the commands that talk to a running
// service (`verify`). One connection per call; the whole exchange must finish
// within `timeout`.
//
// Thread-safety: independent calls may run on any threads.
#pragma once

#include <chrono>
#include <string>

#include "processor/base/result.h"

namespace oncecount::http {

struct ClientResponse {
  unsigned status = 0;
  std::string body;
};

// `base_url` is "http://host:port" (no path); `target` starts with "/". Errors say
// what failed: a bad URL (kInvalidArgument), or connect, timeout, protocol (kIo).
base::Result<ClientResponse> HttpGet(const std::string& base_url, const std::string& target,
                                     std::chrono::milliseconds timeout);

}  // namespace oncecount::http
