// The HTTP API's endpoints (SPEC §4): the Handler that the Server calls, answering
// from what the shards publish on a StateBoard — counters merged across shards, the
// statistics of every shard and its filter, readiness, Prometheus metrics and the
// dashboard page.
//
// The handler never touches live shard state: each request takes one Snapshot of the
// board, so a response is consistent with itself even while shards publish. The
// merged counter snapshot is cached, keyed by the shards' counter snapshots, so
// repeated reads between commits do not merge again.
//
// Thread-safety: the returned Handler (and any copy of it) may be called from many
// threads at once; its copies share one cache. The board must outlive it.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "http/history.h"
#include "http/server.h"
#include "processor/base/metrics.h"
#include "processor/shard/shard_view.h"

namespace oncecount::http {

struct ApiOptions {
  std::string instance_id;  // this instance, as /v1/stats names it
  std::string input_topic;
  // The configured dedup.target_fpp; shards that publish no target of their own
  // (target_fpp == 0) are reported with this one.
  double target_fpp = 0;
  // Wall clock in ms since the epoch, for staleness; injectable for tests. Empty:
  // the system clock.
  std::function<int64_t()> now_ms;
  // The steady clock in ms, the processor's (how long its transaction has been open);
  // injectable for tests. Empty: the system's steady clock.
  std::function<int64_t()> steady_ms;
  // The page served at GET /; empty: the built-in dashboard (http/dashboard.html).
  std::string dashboard_html;
  // What the instance's components count about themselves, rendered after the
  // per-shard metrics; null: none. Outlives the handler.
  const base::MetricRegistry* metrics = nullptr;
  // The samples GET /v1/history serves; null: an empty history. Outlives the handler.
  const History* history = nullptr;
};

Handler MakeApiHandler(const shard::StateBoard& board, ApiOptions options);

// The Prometheus text exposition format's content type (version 0.0.4).
inline constexpr const char* kMetricsContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace oncecount::http
