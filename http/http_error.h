// HttpError: an API error as the client sees it (SPEC §4): a status (400, 404, 405,
// 413, 431 or 503), a stable machine-readable code and a human message, sent as
// {"error": "<code>", "message": "<text>"}.
//
// Thread-safety: a plain value.
#pragma once

#include <string>
#include <utility>

namespace oncecount::http {

struct HttpError {
  HttpError() = default;
  HttpError(int status_code, std::string error_code, std::string text, std::string allowed = "")
      : status(status_code),
        code(std::move(error_code)),
        message(std::move(text)),
        allow(std::move(allowed)) {}

  int status = 400;
  std::string code;     // "bad_request", "not_found", "method_not_allowed", ...
  std::string message;  // says what was wrong and what is expected
  std::string allow;    // for 405: the methods the resource accepts
};

// The JSON body of an error response.
std::string ErrorBody(const HttpError& error);

}  // namespace oncecount::http
