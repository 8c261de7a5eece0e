// RequestTarget: the path and query of an HTTP request-target, percent-decoded and
// checked, so that handlers see counter names as the producers wrote them.
//
// Path segments are decoded one by one ("/v1/counters/a%2Fb" has the segments "v1",
// "counters", "a/b"). In the query, "+" also means a space
// (application/x-www-form-urlencoded). Malformed escapes ("%G1", "%4"), decoded NUL
// bytes (no counter name holds one: events naming one are dead-lettered), segments
// or query parameters that are not UTF-8 once decoded, an empty target, a target
// without a leading "/" and a repeated query parameter are 400 errors naming the
// problem.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "http/http_error.h"

namespace oncecount::http {

struct RequestTarget {
  std::vector<std::string> segments;         // decoded; "/" gives no segment
  std::map<std::string, std::string> query;  // decoded names and values
};

// Decodes %XX escapes (and "+" as a space when `plus_is_space`); nullopt when an
// escape is malformed or decodes to a NUL byte.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_is_space);

std::variant<RequestTarget, HttpError> ParseRequestTarget(std::string_view target);

}  // namespace oncecount::http
