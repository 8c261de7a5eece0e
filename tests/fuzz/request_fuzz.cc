// Fuzz target: the request target parser and the router, for any method and target
// (what reaches them from Beast). Every error must make a valid JSON body.
#include <cstdlib>
#include <string>

#include "http/http_error.h"
#include "http/request_target.h"
#include "http/route.h"
#include "processor/json/utf8.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oncecount::http;  // NOLINT(google-build-using-namespace)
  oncecount::fuzz::FuzzInput in(data, size);
  const std::string_view method = in.Prefixed();
  const auto target = ParseRequestTarget(in.Rest());
  if (const auto* error = std::get_if<HttpError>(&target)) {
    if (!oncecount::json::IsValidUtf8(ErrorBody(*error))) std::abort();
    return 0;
  }
  const auto route = MatchRoute(method, std::get<RequestTarget>(target));
  if (const auto* error = std::get_if<HttpError>(&route)) {
    if (!oncecount::json::IsValidUtf8(ErrorBody(*error))) std::abort();
  }
  return 0;
}
