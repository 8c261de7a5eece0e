// Fuzz target: requests as Beast hands them over (any method and target), through the
// request target parser and the router, then through the whole API handler over a
// fixed board of shards whose counter names need escaping. Every answer must carry
// one of SPEC §4's statuses, and a JSON answer must parse as JSON.
#include <simdjson.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <unordered_map>

#include "http/api.h"
#include "http/http_error.h"
#include "http/request_target.h"
#include "http/route.h"
#include "processor/json/utf8.h"
#include "processor/shard/counter_snapshot.h"
#include "processor/shard/shard_view.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using oncecount::shard::CounterSnapshot;
using oncecount::shard::ShardView;

std::shared_ptr<const ShardView> View(int32_t partition,
                                      std::unordered_map<std::string, int64_t> counters) {
  ShardView v;
  v.partition = oncecount::base::Partition(partition);
  v.role = oncecount::shard::ShardRole::kActive;
  v.phase = oncecount::shard::ShardPhase::kRunning;
  v.published_at_ms = 1'000;
  v.recent_counters = std::make_shared<const std::vector<std::string>>(
      std::vector<std::string>{"likes", "a\"b\\c", "\x01tab\t"});
  v.counters = std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(counters));
  return std::make_shared<const ShardView>(std::move(v));
}

const oncecount::http::Handler& Api() {
  static oncecount::shard::StateBoard board(2);
  static const oncecount::http::Handler handler = [] {
    board.Publish(View(0, {{"likes", 3}, {"a\"b\\c", -1}, {"zähler ✓", 7}, {"\x01tab\t", 2}}));
    board.Publish(View(1, {{"likes", INT64_MAX}, {"a/b", 1}, {"views", INT64_MIN}}));
    oncecount::http::ApiOptions options;
    options.instance_id = "fuzz";
    options.input_topic = "events";
    options.now_ms = [] { return int64_t{2'000}; };
    return oncecount::http::MakeApiHandler(board, options);
  }();
  return handler;
}

bool AllowedStatus(unsigned status) {
  for (unsigned s : {200u, 400u, 404u, 405u, 413u, 431u, 503u}) {
    if (status == s) return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oncecount::http;  // NOLINT(google-build-using-namespace)
  oncecount::fuzz::FuzzInput in(data, size);
  const std::string_view method = in.Prefixed();
  const std::string_view target_text = in.Rest();
  const auto target = ParseRequestTarget(target_text);
  if (const auto* error = std::get_if<HttpError>(&target)) {
    if (!oncecount::json::IsValidUtf8(ErrorBody(*error))) std::abort();
  } else {
    const auto route = MatchRoute(method, std::get<RequestTarget>(target));
    if (const auto* refused = std::get_if<HttpError>(&route)) {
      if (!oncecount::json::IsValidUtf8(ErrorBody(*refused))) std::abort();
    }
  }
  const Response r = Api()(Request{std::string(method), std::string(target_text)});
  if (!AllowedStatus(r.status)) std::abort();
  if (r.content_type == "application/json") {
    static simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(r.body).get(root) != simdjson::SUCCESS) std::abort();
  }
  return 0;
}
