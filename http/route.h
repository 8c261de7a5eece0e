// Route: which endpoint of SPEC §4 a request is for, with its parameters checked.
//
//   GET /v1/counters/{name}                       kCounter      name (decoded)
//   GET /v1/counters?prefix=P&limit=L&after=NAME  kCounterList  prefix, limit 1..1000
//                  &order=name|recent                          (default 100), after,
//                                                              order (recent: no after)
//   GET /v1/stats                                 kStats
//   GET /v1/history?since=MS                      kHistory      since 0..2^63-1 (default 0)
//   GET /v1/shards/{partition}                    kShard        partition 0..2^31-1
//   GET /healthz, /readyz, /metrics, /            kHealthz, kReadyz, kMetrics, kDashboard
//
// Unknown paths are 404 not_found; a known path with another method is 405
// method_not_allowed (with Allow: GET, HEAD); bad parameters are 400 naming them.
// HEAD is accepted wherever GET is.
//
// Thread-safety: pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "http/http_error.h"
#include "http/request_target.h"
#include "processor/base/ids.h"

namespace oncecount::http {

enum class Endpoint : uint8_t {
  kCounter,
  kCounterList,
  kStats,
  kHistory,
  kShard,
  kHealthz,
  kReadyz,
  kMetrics,
  kDashboard,
};

// kName: byte order, paged with `after`. kRecent: the counters that changed most
// recently on each shard, newest first (ShardView::recent_counters), one page.
enum class CounterOrder : uint8_t { kName, kRecent };

inline constexpr int kMaxListLimit = 1000;
inline constexpr int kDefaultListLimit = 100;

struct Route {
  Endpoint endpoint = Endpoint::kHealthz;
  std::string name;                          // kCounter
  std::string prefix;                        // kCounterList
  int limit = kDefaultListLimit;             // kCounterList
  std::optional<std::string> after;          // kCounterList
  CounterOrder order = CounterOrder::kName;  // kCounterList
  base::Partition partition;                 // kShard
  int64_t since_ms = 0;                      // kHistory: samples after this wall time
};

std::variant<Route, HttpError> MatchRoute(std::string_view method, const RequestTarget& target);

}  // namespace oncecount::http
