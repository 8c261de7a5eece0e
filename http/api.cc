#include "http/api.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "http/dashboard_page.h"
#include "http/http_error.h"
#include "http/request_target.h"
#include "http/route.h"
#include "processor/base/clock.h"
#include "processor/event/increment_event.h"
#include "processor/json/json_writer.h"
#include "processor/shard/counter_snapshot.h"

namespace oncecount::http {
namespace {

using shard::CounterSnapshot;
using shard::CountersPtr;
using shard::ShardView;
using Snapshot = shard::StateBoard::Snapshot;

constexpr const char* kJson = "application/json";
constexpr const char* kHtml = "text/html; charset=utf-8";

Response JsonResponse(const json::JsonWriter& j, unsigned status = 200) {
  return Response{status, kJson, j.str(), ""};
}

Response ErrorResponse(const HttpError& e) {
  return Response{static_cast<unsigned>(e.status), kJson, ErrorBody(e), e.allow};
}

int64_t SystemNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The shards' counter snapshots, merged on the fly by the queries (summing per name).
std::vector<CountersPtr> CountersOf(const Snapshot& s) {
  std::vector<CountersPtr> shards;
  shards.reserve(s.shards.size());
  for (const auto& v : s.shards) shards.push_back(v->counters);
  return shards;
}

// How many distinct counter names the shards hold: a k-way merge of every shard's
// names (about 200 ms at 1e6 names over 24 shards), so it is computed again at most
// once per kCostFactor x its last duration, and past kRecountEvery counters at most
// once a second, however often it is asked for (and may be that much behind): a
// dashboard or a scraper polling /v1/stats or /metrics then costs at most
// 1/kCostFactor of a core, also while a shard's counters grow past many thousands
// between two polls (a small count takes under a millisecond and stays exact).
class DistinctCounters {
 public:
  static constexpr size_t kRecountEvery = 100'000;
  static constexpr int64_t kCostFactor = 20;

  // `now_ms`: a steady clock (a wall clock stepped back would keep an old count).
  uint64_t Get(const Snapshot& s, int64_t now_ms) {
    std::vector<CountersPtr> shards = CountersOf(s);
    size_t held = 0;
    for (const CountersPtr& c : shards) held += c ? c->size() : 0;
    {
      std::lock_guard lock(mu_);
      if (shards == key_) return count_;
      const int64_t floor_ms = held > kRecountEvery ? 1000 : 0;
      if (now_ms - computed_ms_ < std::max<int64_t>(floor_ms, kCostFactor * took_ms_)) {
        return count_;
      }
    }
    const auto start = std::chrono::steady_clock::now();
    const uint64_t count = CounterSnapshot::DistinctNames(shards);
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - start);
    std::lock_guard lock(mu_);
    key_ = std::move(shards);
    count_ = count;
    computed_ms_ = now_ms;
    took_ms_ = took.count();
    return count;
  }

 private:
  std::mutex mu_;
  // Owning pointers: a freed snapshot's address could be reused by a new one.
  std::vector<CountersPtr> key_;
  uint64_t count_ = 0;
  int64_t computed_ms_ = 0;
  int64_t took_ms_ = 0;  // how long the last count took (the machine's clock)
};

struct Totals {
  uint64_t events_applied = 0;
  uint64_t duplicates_dropped = 0;
  uint64_t near_edge_duplicates = 0;
  uint64_t dead_lettered = 0;
  std::array<uint64_t, shard::kDlqReasonCount> dead_lettered_by_reason{};
  uint64_t transactions_committed = 0;
  uint64_t transactions_aborted = 0;
  int64_t lag = 0;
};

Totals Sum(const Snapshot& s) {
  Totals t;
  for (const auto& v : s.shards) {
    t.events_applied += v->events_applied;
    t.duplicates_dropped += v->duplicates_dropped;
    t.near_edge_duplicates += v->near_edge_duplicates;
    t.dead_lettered += v->dead_lettered;
    for (size_t i = 0; i < shard::kDlqReasonCount; ++i) {
      t.dead_lettered_by_reason[i] += v->dead_lettered_by_reason[i];
    }
    t.transactions_committed += v->transactions_committed;
    t.transactions_aborted += v->transactions_aborted;
    t.lag += v->lag();
  }
  return t;
}

void WriteReasons(json::JsonWriter& j,
                  const std::array<uint64_t, shard::kDlqReasonCount>& by_reason) {
  j.BeginObject();
  for (size_t i = 0; i < shard::kDlqReasonCount; ++i)
    j.Key(event::kDlqReasonNames[i].name).Uint(by_reason[i]);
  j.EndObject();
}

// Prometheus sample values: the shortest round-trip text in %g style (0.0005, not
// 5e-04), and the format's spellings of the non-finite values.
std::string MetricValue(double v) {
  return base::PrometheusValue(v);
}
std::string MetricValue(uint64_t v) {
  return std::to_string(v);
}
std::string MetricValue(int64_t v) {
  return std::to_string(v);
}

// Builds a text exposition (format 0.0.4): each family's HELP and TYPE, then its
// samples.
class Exposition {
 public:
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    Line("# HELP ", name, " ", help);
    Line("# TYPE ", name, " ", type);
  }
  void Sample(std::string_view name, std::string_view labels, const std::string& value) {
    Line(name, labels, " ", value);
  }
  // One family with one sample per active shard, labelled by partition. Replicas
  // repeat their active's figures; exporting them too would count them twice in
  // any sum over instances.
  template <typename ValueOf>
  void PerShard(const Snapshot& s, std::string_view name, std::string_view type,
                std::string_view help, ValueOf value_of) {
    PerShardWhere(s, name, type, help, value_of, [](const ShardView&) { return true; });
  }
  // The same, for what a shard's state holds: left out while the shard is restoring
  // or failed, whose view holds no state. Its counts would read 0 and then jump back,
  // which Prometheus takes for a reset followed by as many new events.
  template <typename ValueOf>
  void PerRunningShard(const Snapshot& s, std::string_view name, std::string_view type,
                       std::string_view help, ValueOf value_of) {
    PerShardWhere(s, name, type, help, value_of, HoldsState);
  }
  static bool HoldsState(const ShardView& v) { return v.phase == shard::ShardPhase::kRunning; }
  // The same, for the active shards `where` picks.
  template <typename ValueOf, typename Where>
  void PerShardWhere(const Snapshot& s, std::string_view name, std::string_view type,
                     std::string_view help, ValueOf value_of, Where where) {
    Family(name, type, help);
    for (const auto& v : s.shards) {
      if (v->role == shard::ShardRole::kActive && where(*v)) {
        Sample(name, PartitionLabel(v->partition), value_of(*v));
      }
    }
  }
  static std::string PartitionLabel(base::Partition partition) {
    return "{partition=\"" + std::to_string(partition.value()) + "\"}";
  }
  std::string Take() { return std::move(out_); }

 private:
  void Line(std::string_view a, std::string_view b, std::string_view c, std::string_view d) {
    out_.append(a).append(b).append(c).append(d).push_back('\n');
  }
  std::string out_;
};

class Api {
 public:
  Api(const shard::StateBoard& board, ApiOptions options)
      : board_(board), options_(std::move(options)) {
    if (!options_.now_ms) options_.now_ms = SystemNowMs;
    if (!options_.steady_ms) options_.steady_ms = [] { return base::DefaultClock().SteadyMs(); };
  }

  Response Handle(const Request& request) {
    auto target = ParseRequestTarget(request.target);
    if (const auto* e = std::get_if<HttpError>(&target)) return ErrorResponse(*e);
    auto route = MatchRoute(request.method, std::get<RequestTarget>(target));
    if (const auto* e = std::get_if<HttpError>(&route)) return ErrorResponse(*e);
    return Dispatch(std::get<Route>(route));
  }

 private:
  Response Dispatch(const Route& r) {
    switch (r.endpoint) {
      case Endpoint::kCounter:
        return Counter(r.name);
      case Endpoint::kCounterList:
        return CounterList(r);
      case Endpoint::kStats:
        return Stats();
      case Endpoint::kHistory:
        return HistoryResponse(r.since_ms);
      case Endpoint::kShard:
        return ShardDetail(r.partition);
      case Endpoint::kHealthz:
        return Healthz();
      case Endpoint::kReadyz:
        return Readyz();
      case Endpoint::kMetrics:
        return Metrics();
      case Endpoint::kDashboard:
        return Dashboard();
    }
    return ErrorResponse({404, "not_found", "no such resource"});
  }

  Response Counter(const std::string& name) {
    const Snapshot s = board_.Read();
    bool saturated = false;
    const auto value = CounterSnapshot::FindSum(CountersOf(s), name, &saturated);
    if (!value && !s.complete()) {
      // SPEC §4 keeps 404 for a counter no shard has seen; one of the shards not held
      // yet may have.
      return ErrorResponse({503, "incomplete",
                            "counter \"" + name +
                                "\" is on none of the shards this instance holds, and it does "
                                "not hold every shard yet (restoring, or not assigned): retry, "
                                "or ask an instance that is ready"});
    }
    if (!value) {
      return ErrorResponse({404, "not_found", "no shard has seen counter \"" + name + "\""});
    }
    json::JsonWriter j;
    j.BeginObject().Key("counter").String(name).Key("value").Int(*value);
    if (saturated) j.Key("saturated").Bool(true);
    j.Key("complete").Bool(s.complete()).Key("staleness_ms").Int(StalenessMs(s)).EndObject();
    return JsonResponse(j);
  }

  Response CounterList(const Route& r) {
    if (r.order == CounterOrder::kRecent) return RecentCounters(r);
    const Snapshot s = board_.Read();
    const shard::CounterPage page = CounterSnapshot::ListSum(
        CountersOf(s), r.prefix, static_cast<size_t>(r.limit),
        r.after ? std::optional<std::string_view>(*r.after) : std::nullopt);
    json::JsonWriter j;
    j.BeginObject().Key("counters").BeginArray();
    for (const auto& c : page.counters) {
      j.BeginObject().Key("counter").String(c.name).Key("value").Int(c.value);
      if (c.saturated) j.Key("saturated").Bool(true);
      j.EndObject();
    }
    j.EndArray().Key("next");
    if (page.next) {
      j.String(*page.next);
    } else {
      j.Null();
    }
    j.Key("complete").Bool(s.complete()).Key("staleness_ms").Int(StalenessMs(s)).EndObject();
    return JsonResponse(j);
  }

  // The shards' recently changed counters, taken rank by rank (each shard's newest,
  // then each one's second newest, ...), each name once, with its value summed over
  // the shards: the cost depends on the shards and the limit, not on how many
  // counters there are.
  Response RecentCounters(const Route& r) {
    const Snapshot s = board_.Read();
    const std::vector<CountersPtr> shards = CountersOf(s);
    std::vector<std::string_view> names;
    std::unordered_set<std::string_view> seen;
    const auto limit = static_cast<size_t>(r.limit);
    for (size_t rank = 0; rank < shard::kRecentCounters && names.size() < limit; ++rank) {
      for (const auto& v : s.shards) {
        if (!v->recent_counters || rank >= v->recent_counters->size()) continue;
        const std::string_view name = (*v->recent_counters)[rank];
        if (!name.starts_with(r.prefix) || !seen.insert(name).second) continue;
        names.push_back(name);
        if (names.size() == limit) break;
      }
    }
    json::JsonWriter j;
    j.BeginObject().Key("counters").BeginArray();
    for (const std::string_view name : names) {
      bool saturated = false;
      const auto value = CounterSnapshot::FindSum(shards, name, &saturated);
      if (!value) continue;
      j.BeginObject().Key("counter").String(name).Key("value").Int(*value);
      if (saturated) j.Key("saturated").Bool(true);
      j.EndObject();
    }
    j.EndArray().Key("next").Null();
    j.Key("complete").Bool(s.complete()).Key("staleness_ms").Int(StalenessMs(s)).EndObject();
    return JsonResponse(j);
  }

  Response Stats() {
    const Snapshot s = board_.Read();
    json::JsonWriter j;
    j.BeginObject()
        .Key("instance")
        .String(options_.instance_id)
        .Key("input_topic")
        .String(options_.input_topic)
        .Key("partitions")
        .Int(s.partitions)
        .Key("complete")
        .Bool(s.complete())
        .Key("ready")
        .Bool(s.ready() && s.StuckTransaction(options_.steady_ms()).empty())
        .Key("target_fpp")
        .Double(options_.target_fpp)
        .Key("staleness_ms")
        .Int(StalenessMs(s));
    j.Key("shards").BeginArray();
    for (const auto& v : s.shards) {
      j.BeginObject();
      WriteShardFields(j, *v, false);
      j.EndObject();
    }
    j.EndArray().Key("totals");
    WriteTotals(j, s);
    j.EndObject();
    return JsonResponse(j);
  }

  // Per shard view (partition and role), one array per quantity aligned with
  // `times`: null where the shard had no view at that sample. Counts are per sample
  // (since the previous one); phases are indexes into `phases`.
  Response HistoryResponse(int64_t since_ms) const {
    const std::vector<HistorySample> samples =
        options_.history ? options_.history->Since(since_ms) : std::vector<HistorySample>{};
    json::JsonWriter j;
    j.BeginObject().Key("instance").String(options_.instance_id);
    const HistoryOptions defaults;
    const HistoryOptions& o = options_.history ? options_.history->options() : defaults;
    j.Key("interval_ms").Int(o.interval.count()).Key("max_samples").Uint(o.max_samples);
    j.Key("bytes").Uint(options_.history ? options_.history->bytes() : 0);
    j.Key("target_fpp").Double(options_.target_fpp);
    j.Key("phases").BeginArray();
    for (const auto& phase : shard::kShardPhaseNames) j.String(phase.name);
    j.EndArray().Key("times").BeginArray();
    for (const HistorySample& sample : samples) j.Int(sample.wall_ms);
    j.EndArray();
    // Where each shard view's value sits in each sample (-1: absent).
    std::map<std::pair<int32_t, shard::ShardRole>, std::vector<int32_t>> at;
    for (size_t i = 0; i < samples.size(); ++i) {
      for (size_t k = 0; k < samples[i].shards.size(); ++k) {
        const ShardSample& s = samples[i].shards[k];
        auto& index = at[{s.partition, s.role}];
        index.resize(samples.size(), -1);
        index[i] = static_cast<int32_t>(k);
      }
    }
    j.Key("shards").BeginArray();
    for (const auto& shard_columns : at) {
      // Named, not a structured binding: clang 14 (the fuzz build) cannot capture one.
      const std::pair<int32_t, shard::ShardRole>& key = shard_columns.first;
      const std::vector<int32_t>& index = shard_columns.second;
      j.BeginObject().Key("partition").Int(key.first);
      j.Key("role").String(shard::ShardRoleName(key.second));
      const auto column = [&](std::string_view name, auto value_of) {
        j.Key(name).BeginArray();
        for (size_t i = 0; i < samples.size(); ++i) {
          if (index[i] < 0) {
            j.Null();
          } else {
            value_of(samples[i].shards[static_cast<size_t>(index[i])]);
          }
        }
        j.EndArray();
      };
      column("phase", [&](const ShardSample& s) { j.Uint(static_cast<uint64_t>(s.phase)); });
      column("events_applied", [&](const ShardSample& s) { j.Uint(s.events_applied); });
      column("duplicates_dropped", [&](const ShardSample& s) { j.Uint(s.duplicates_dropped); });
      column("near_edge_duplicates", [&](const ShardSample& s) { j.Uint(s.near_edge_duplicates); });
      column("dead_lettered", [&](const ShardSample& s) { j.Uint(s.dead_lettered); });
      column("late_events", [&](const ShardSample& s) { j.Uint(s.late_events); });
      column("timestamps_ahead", [&](const ShardSample& s) { j.Uint(s.timestamps_ahead); });
      column("timestamps_missing", [&](const ShardSample& s) { j.Uint(s.timestamps_missing); });
      column("lag", [&](const ShardSample& s) { j.Uint(s.lag); });
      column("replica_lag_ms", [&](const ShardSample& s) {
        if (s.replica_lag_ms < 0) {
          j.Null();
        } else {
          j.Int(s.replica_lag_ms);
        }
      });
      column("filters", [&](const ShardSample& s) { j.Uint(s.filters); });
      column("refresh_ms", [&](const ShardSample& s) { j.Uint(s.refresh_ms); });
      column("window_ms_guaranteed", [&](const ShardSample& s) { j.Uint(s.window_ms_guaranteed); });
      column("estimated_fpp", [&](const ShardSample& s) { j.Float(s.estimated_fpp); });
      j.EndObject();
    }
    j.EndArray().EndObject();
    return JsonResponse(j);
  }

  Response ShardDetail(base::Partition partition) {
    const Snapshot s = board_.Read();
    const auto it = std::find_if(s.shards.begin(), s.shards.end(),
                                 [partition](const auto& v) { return v->partition == partition; });
    if (it == s.shards.end()) {
      return ErrorResponse({404, "not_found",
                            "partition " + std::to_string(partition.value()) +
                                " has no shard on this instance (neither active nor standby)"});
    }
    const ShardView& v = **it;
    json::JsonWriter j;
    j.BeginObject().Key("instance").String(options_.instance_id);
    j.Key("input_topic").String(options_.input_topic);
    WriteShardFields(j, v, true);
    j.Key("staleness_ms").Int(std::max<int64_t>(0, options_.now_ms() - v.published_at_ms));
    j.EndObject();
    return JsonResponse(j);
  }

  static Response Healthz() {
    json::JsonWriter j;
    j.BeginObject().Key("status").String("ok").EndObject();
    return JsonResponse(j);
  }

  Response Readyz() const {
    const Snapshot s = board_.Read();
    if (!s.ready()) return ErrorResponse({503, "not_ready", NotReadyReason(s) + AlsoDegraded(s)});
    if (std::string stuck = s.StuckTransaction(options_.steady_ms()); !stuck.empty()) {
      return ErrorResponse({503, "not_ready", std::move(stuck)});
    }
    // Shards by role, and how far the furthest standby or replica is behind its
    // active (the failover and query freshness an operator cares about).
    std::array<uint64_t, 3> by_role{};
    int64_t max_replica_lag_ms = -1;
    for (const auto& v : s.shards) {
      ++by_role[static_cast<size_t>(v->role)];
      if (v->role != shard::ShardRole::kActive) {
        max_replica_lag_ms = std::max(max_replica_lag_ms, v->replica_lag_ms);
      }
    }
    json::JsonWriter j;
    j.BeginObject().Key("ready").Bool(true).Key("complete").Bool(s.complete());
    j.Key("shards").BeginObject();
    for (auto role :
         {shard::ShardRole::kActive, shard::ShardRole::kStandby, shard::ShardRole::kReplica}) {
      j.Key(shard::ShardRoleName(role)).Uint(by_role[static_cast<size_t>(role)]);
    }
    j.EndObject().Key("max_replica_lag_ms");
    if (max_replica_lag_ms < 0) {
      j.Null();
    } else {
      j.Int(max_replica_lag_ms);
    }
    WriteDegraded(j, s);
    j.EndObject();
    return JsonResponse(j);
  }

  // Ready, but with a guarantee that does not hold in full right now: the instance's
  // own reasons (the input gained partitions: keys moved; the dead-letter topic is
  // gone), each active
  // shard whose filter holds less than its configured window (SPEC §2.1), and each
  // standby that failed or is still being built (a failover to this instance would
  // restore cold, §2.4: a rolling restart that moves on before this instance's
  // standbys are built loses the hot take-over it counts on).
  static void WriteDegraded(json::JsonWriter& j, const Snapshot& s) {
    j.Key("degraded").BeginArray();
    for (const std::string& why : s.instance_degraded) {  // the whole instance's: no partition
      j.BeginObject().Key("partition").Null().Key("reason").String(why).EndObject();
    }
    for (const auto& v : s.shards) {
      if (v->role == shard::ShardRole::kStandby && v->phase == shard::ShardPhase::kFailed) {
        j.BeginObject().Key("partition").Int(v->partition.value());
        j.Key("reason").String("its standby failed (" + v->failure +
                               "): it is retried; until then a failover of the shard to this "
                               "instance restores it from the changelog");
        j.EndObject();
      } else if (v->role == shard::ShardRole::kStandby &&
                 v->phase == shard::ShardPhase::kRestoring) {
        j.BeginObject().Key("partition").Int(v->partition.value());
        j.Key("reason").String(
            "its standby is being built from the changelog: until it is, a failover of the "
            "shard to this instance restores it from the changelog");
        j.EndObject();
      }
    }
    for (const auto& v : s.shards) {
      if (v->role != shard::ShardRole::kActive || v->record_window_held_ms < 0) continue;
      j.BeginObject().Key("partition").Int(v->partition.value());
      j.Key("reason").String(
          "the filter, made under a smaller dedup.window_ms (or dedup.mode none), holds retries "
          "up to " +
          std::to_string(v->record_window_held_ms) +
          " ms after their first copy, and "
          "dedup.window_ms is " +
          std::to_string(v->record_window_ms) +
          " ms now: a retry later than that may be counted twice, until the shard starts "
          "from an empty changelog (docs/operations.md, \"Time is the "
          "records' time\")");
      j.EndObject();
    }
    for (const auto& v : s.shards) {
      if (v->role != shard::ShardRole::kActive || !v->filter_unbounded) continue;
      j.BeginObject().Key("partition").Int(v->partition.value());
      j.Key("reason").String(
          "the filter, restored from a state written before filters had a memory bound, held "
          "more than dedup.max_filter_mib already and has no bound: it grows with the load, "
          "until a later restore finds it within the bound (docs/operations.md, \"The memory "
          "bound\")");
      j.EndObject();
    }
    for (const auto& v : s.shards) {
      const filter::FilterSummary& f = v->filter;
      if (v->role != shard::ShardRole::kActive || !f.HoldsLessThanItsWindow()) continue;
      j.BeginObject().Key("partition").Int(v->partition.value());
      j.Key("reason").String(
          "the filter holds " + std::to_string(f.window_ms_guaranteed) + " ms of its " +
          std::to_string(f.window_ms_configured) + " ms window: it reached its size limit (" +
          std::to_string(f.memory_limit_bytes >> 20) +
          " MiB, dedup.max_filter_mib; the bloom filter also stops at 64 filters) and forgot " +
          std::to_string(f.forgotten_early) +
          " ids early; retries of them may be counted twice (docs/operations.md, \"The filter "
          "forgot early\")");
      j.EndObject();
    }
    j.EndArray();
  }

  Response Metrics() {
    const Snapshot s = board_.Read();
    Exposition e;
    WriteInstanceMetrics(e, s);
    WriteShardMetrics(e, s);
    WriteFilterMetrics(e, s);
    std::string body = e.Take();
    if (options_.metrics != nullptr) body += options_.metrics->Render();
    return Response{200, kMetricsContentType, std::move(body), ""};
  }

  Response Dashboard() const {
    return Response{
        200, kHtml,
        options_.dashboard_html.empty() ? std::string(DashboardPage()) : options_.dashboard_html,
        ""};
  }

  // --- pieces ---

  // How old the oldest shard's counters are: a merged answer is at most this stale.
  int64_t StalenessMs(const Snapshot& s) const {
    if (s.shards.empty()) return 0;
    int64_t oldest = std::numeric_limits<int64_t>::max();
    for (const auto& v : s.shards) {
      oldest = std::min(oldest, v->published_at_ms - v->counters_behind_ms);
    }
    return std::max<int64_t>(0, options_.now_ms() - oldest);
  }

  // The instance-wide reasons `degraded` would list, for a 503 that has no such list.
  static std::string AlsoDegraded(const Snapshot& s) {
    std::string also;
    for (const std::string& why : s.instance_degraded) also += "; and: " + why;
    return also;
  }

  static std::string NotReadyReason(const Snapshot& s) {
    if (!s.start_waiting_for.empty()) return "starting: " + s.start_waiting_for;
    if (!s.topics_unavailable.empty()) return s.topics_unavailable;
    if (!s.assignment_known) {
      return "no partition assignment: the processor has not joined its consumer group yet, "
             "or lost its partitions (its session timed out, the group moved on while it "
             "restored, or its input topic is gone; the log says which) and is rejoining it";
    }
    std::string pending;
    for (const auto& v : s.shards) {
      if (v->role != shard::ShardRole::kActive || v->phase == shard::ShardPhase::kRunning) continue;
      if (!pending.empty()) pending += ", ";
      pending += std::to_string(v->partition.value()) + " (" + shard::ShardPhaseName(v->phase);
      if (!v->failure.empty()) pending += ": " + v->failure;
      pending += ")";
    }
    return "shards not running yet: " + (pending.empty() ? std::string("none") : pending);
  }

  double TargetFpp(const ShardView& v) const {
    return v.target_fpp > 0 ? v.target_fpp : options_.target_fpp;
  }

  // A shard's fields, inside an object the caller opened; `detail` adds what only
  // GET /v1/shards/{p} shows (the digest, every constituent filter).
  void WriteShardFields(json::JsonWriter& j, const ShardView& v, bool detail) const {
    j.Key("partition").Int(v.partition.value());
    j.Key("role").String(shard::ShardRoleName(v.role));
    j.Key("phase").String(shard::ShardPhaseName(v.phase));
    if (!v.failure.empty()) j.Key("failure").String(v.failure);
    j.Key("input_offset")
        .Int(v.input_offset.value())
        .Key("high_watermark")
        .Int(v.high_watermark.value());
    j.Key("lag")
        .Int(v.lag())
        .Key("epoch")
        .Uint(v.epoch.value())
        .Key("changelog_seq")
        .Uint(v.changelog_seq.value());
    j.Key("counters").Uint(v.counters ? v.counters->size() : 0);
    j.Key("events_applied").Uint(v.events_applied);
    j.Key("duplicates_dropped").Uint(v.duplicates_dropped);
    j.Key("near_edge_duplicates").Uint(v.near_edge_duplicates);
    j.Key("dead_lettered").Uint(v.dead_lettered).Key("dead_lettered_by_reason");
    WriteReasons(j, v.dead_lettered_by_reason);
    j.Key("transactions_committed").Uint(v.transactions_committed);
    j.Key("transactions_aborted").Uint(v.transactions_aborted);
    j.Key("input_lost").Uint(v.input_lost);
    j.Key("changelog_unreadable_records").Uint(v.changelog_unreadable_records);
    j.Key("restore_retries").Uint(v.restore_retries);
    j.Key("event_clock_ms").Int(v.event_clock_ms);
    j.Key("timestamps_ahead").Uint(v.timestamps_ahead);
    j.Key("late_events").Uint(v.late_events);
    j.Key("record_window_held_ms");
    if (v.record_window_held_ms < 0) {
      j.Null();
    } else {
      j.Int(v.record_window_held_ms);
    }
    j.Key("filter_unbounded").Bool(v.filter_unbounded);
    j.Key("timestamps_missing").Uint(v.timestamps_missing);
    j.Key("hash_keyed").Bool(v.hash_keyed);
    j.Key("published_at_ms").Int(v.published_at_ms);
    j.Key("counters_behind_ms").Int(v.counters_behind_ms);
    j.Key("replica_lag_ms");
    if (v.replica_lag_ms < 0) {
      j.Null();  // an active shard
    } else {
      j.Int(v.replica_lag_ms);
    }
    j.Key("digest").String(v.digest).Key("digest_seq").Uint(v.digest_seq.value());
    j.Key("filter");
    WriteFilter(j, v, detail);
    if (detail) {
      j.Key("constituents").BeginArray();
      for (const auto& c : v.filter.constituents) {
        j.BeginObject().Key("inserted").Uint(c.inserted).Key("fill").Double(c.fill);
        j.Key("estimated_fpp").Double(c.estimated_fpp).EndObject();
      }
      j.EndArray();
    }
  }

  void WriteFilter(json::JsonWriter& j, const ShardView& v, bool detail) const {
    const filter::FilterSummary& f = v.filter;
    j.BeginObject().Key("mode").String(filter::ModeName(f.mode)).Key("constituent");
    if (f.constituent) {
      j.String(base::NameOf(filter::kConstituentNames, *f.constituent));
    } else {
      j.Null();  // not a forgetful filter
    }
    j.Key("filters").Uint(f.filters);
    j.Key("refresh_ms").Int(f.refresh_ms).Key("estimated_fpp").Double(f.estimated_fpp);
    if (detail) j.Key("estimated_fpp_eq1").Double(f.estimated_fpp_eq1);
    j.Key("target_fpp").Double(TargetFpp(v));
    j.Key("window_ms_guaranteed").Int(f.window_ms_guaranteed);
    j.Key("window_ms_configured").Int(f.window_ms_configured).Key("bits_total").Uint(f.bits_total);
    j.Key("memory_limit_bytes").Uint(f.memory_limit_bytes);
    j.Key("forgotten_early").Uint(f.forgotten_early);
    j.Key("inserted").Uint(f.inserted).Key("duplicates").Uint(f.duplicates);
    j.Key("near_edge_duplicates").Uint(f.near_edge_duplicates);
    j.Key("early_refreshes").Uint(f.early_refreshes).EndObject();
  }

  void WriteTotals(json::JsonWriter& j, const Snapshot& s) {
    const Totals t = Sum(s);
    j.BeginObject().Key("shards").Uint(s.shards.size());
    j.Key("counters").Uint(distinct_.Get(s, options_.steady_ms())).Key("lag").Int(t.lag);
    j.Key("events_applied").Uint(t.events_applied);
    j.Key("duplicates_dropped").Uint(t.duplicates_dropped);
    j.Key("near_edge_duplicates").Uint(t.near_edge_duplicates);
    j.Key("dead_lettered").Uint(t.dead_lettered).Key("dead_lettered_by_reason");
    WriteReasons(j, t.dead_lettered_by_reason);
    j.Key("transactions_committed").Uint(t.transactions_committed);
    j.Key("transactions_aborted").Uint(t.transactions_aborted).EndObject();
  }

  void WriteInstanceMetrics(Exposition& e, const Snapshot& s) {
    e.Family("oncecount_up", "gauge", "1 while the process serves.");
    e.Sample("oncecount_up", "", "1");
    e.Family("oncecount_counters", "gauge",
             "Distinct counters over the shards held by this instance.");
    e.Sample("oncecount_counters", "", MetricValue(distinct_.Get(s, options_.steady_ms())));
    e.PerShard(
        s, "oncecount_shard_ready", "gauge",
        "1 when the shard is restored and running on this instance, else 0.",
        [](const ShardView& v) { return v.phase == shard::ShardPhase::kRunning ? "1" : "0"; });
    std::array<uint64_t, 3> by_role{};
    for (const auto& v : s.shards) ++by_role[static_cast<size_t>(v->role)];
    e.Family("oncecount_shards", "gauge",
             "Shards held by this instance, by role (active, standby: a hot replica, replica: "
             "counters only).");
    for (auto role :
         {shard::ShardRole::kActive, shard::ShardRole::kStandby, shard::ShardRole::kReplica}) {
      e.Sample("oncecount_shards", std::string("{role=\"") + shard::ShardRoleName(role) + "\"}",
               MetricValue(by_role[static_cast<size_t>(role)]));
    }
    e.Family("oncecount_replica_lag_seconds", "gauge",
             "How far a replica is behind its shard's changelog (0 while caught up; a replica "
             "being built or failed is behind since it began or failed).");
    for (const auto& v : s.shards) {
      if (v->role == shard::ShardRole::kActive) continue;
      e.Sample("oncecount_replica_lag_seconds",
               "{partition=\"" + std::to_string(v->partition.value()) + "\",role=\"" +
                   shard::ShardRoleName(v->role) + "\"}",
               MetricValue(static_cast<double>(v->replica_lag_ms) / 1000.0));
    }
  }

  static void WriteShardMetrics(Exposition& e, const Snapshot& s) {
    e.PerRunningShard(s, "oncecount_events_applied_total", "counter", "Events applied to counters.",
                      [](const ShardView& v) { return MetricValue(v.events_applied); });
    e.PerRunningShard(s, "oncecount_duplicates_dropped_total", "counter",
                      "Events dropped as retries of an applied event (false positives included).",
                      [](const ShardView& v) { return MetricValue(v.duplicates_dropped); });
    e.PerRunningShard(s, "oncecount_near_edge_duplicates_total", "counter",
                      "Duplicates that only the oldest filters still remembered.",
                      [](const ShardView& v) { return MetricValue(v.near_edge_duplicates); });
    WriteDeadLetterMetrics(e, s);
    e.PerShard(s, "oncecount_transactions_committed_total", "counter", "Transactions committed.",
               [](const ShardView& v) { return MetricValue(v.transactions_committed); });
    e.PerShard(s, "oncecount_transactions_aborted_total", "counter", "Transactions aborted.",
               [](const ShardView& v) { return MetricValue(v.transactions_aborted); });
    e.PerShard(s, "oncecount_input_lost_messages_total", "counter",
               "Input messages that retention removed before the shard applied them, or that "
               "the consumer could not read and went past (lost events; alert on any "
               "increase).",
               [](const ShardView& v) { return MetricValue(v.input_lost); });
    e.PerShard(s, "oncecount_changelog_unreadable_records", "gauge",
               "Changelog records the restore that gave this instance the shard could not "
               "read and skipped: its state is the newest the readable records hold.",
               [](const ShardView& v) { return MetricValue(v.changelog_unreadable_records); });
    e.PerShard(s, "oncecount_restore_retries_total", "counter",
               "Failed restores of the shard on this instance, each retried with back-off "
               "(the reason is the shard's failure in /v1/stats and /readyz).",
               [](const ShardView& v) { return MetricValue(v.restore_retries); });
    e.PerRunningShard(
        s, "oncecount_timestamps_ahead_total", "counter",
        "Records whose timestamp was further ahead of the wall clock than "
        "dedup.timestamp_tolerance_ms: they did not move the shard's clock (a producer "
        "with a skewed clock). Counted by the active owner since it took the shard.",
        [](const ShardView& v) { return MetricValue(v.timestamps_ahead); });
    e.PerRunningShard(
        s, "oncecount_timestamps_missing_total", "counter",
        "Records without a timestamp (a producer that sets none, CreateTime -1): they "
        "took the shard's clock as it was, so a retry of one is caught only while a "
        "retry stamped by its own clock would be. Counted by the active owner since it "
        "took the shard.",
        [](const ShardView& v) { return MetricValue(v.timestamps_missing); });
    e.PerRunningShard(
        s, "oncecount_late_events_total", "counter",
        "Late records: applied while the shard's clock was more than "
        "dedup.timestamp_tolerance_ms past their timestamp, outside the no-double-count "
        "guarantee (a retry of one may be counted again). Counted by the active owner "
        "since it took the shard.",
        [](const ShardView& v) { return MetricValue(v.late_events); });
    e.PerRunningShard(s, "oncecount_event_clock_seconds", "gauge",
                      "The shard's clock: the largest record timestamp applied (seconds since the "
                      "epoch).",
                      [](const ShardView& v) {
                        return MetricValue(static_cast<double>(v.event_clock_ms) / 1000.0);
                      });
    e.PerRunningShard(s, "oncecount_input_lag_messages", "gauge",
                      "Input messages not yet applied: high watermark minus input offset.",
                      [](const ShardView& v) { return MetricValue(v.lag()); });
    e.PerRunningShard(s, "oncecount_input_offset", "gauge",
                      "The next input offset the shard applies.",
                      [](const ShardView& v) { return MetricValue(v.input_offset.value()); });
  }

  static void WriteDeadLetterMetrics(Exposition& e, const Snapshot& s) {
    constexpr std::string_view kName = "oncecount_dead_lettered_total";
    e.Family(kName, "counter", "Events sent to the dead-letter topic, by reason.");
    for (const auto& v : s.shards) {
      // Replicas carry the active's figures: exported once, by the active, so that a
      // sum over the instances counts every dead letter once (and, as PerRunningShard,
      // only while the active runs).
      if (v->role != shard::ShardRole::kActive || !Exposition::HoldsState(*v)) continue;
      for (size_t i = 0; i < shard::kDlqReasonCount; ++i) {
        e.Sample(kName,
                 "{partition=\"" + std::to_string(v->partition.value()) + "\",reason=\"" +
                     event::kDlqReasonNames[i].name + "\"}",
                 MetricValue(v->dead_lettered_by_reason[i]));
      }
    }
  }

  void WriteFilterMetrics(Exposition& e, const Snapshot& s) const {
    e.PerRunningShard(s, "oncecount_filter_estimated_fpp", "gauge",
                      "The filter model's estimate of the false-positive probability.",
                      [](const ShardView& v) { return MetricValue(v.filter.estimated_fpp); });
    e.PerShard(s, "oncecount_filter_target_fpp", "gauge",
               "The configured false-positive probability target.",
               [this](const ShardView& v) { return MetricValue(TargetFpp(v)); });
    e.PerRunningShard(s, "oncecount_filter_constituents", "gauge", "Constituent filters.",
                      [](const ShardView& v) { return MetricValue(uint64_t{v.filter.filters}); });
    e.PerRunningShard(s, "oncecount_filter_refresh_period_seconds", "gauge",
                      "Time between filter refreshes (0: the mode never refreshes).",
                      [](const ShardView& v) { return MetricValue(v.filter.refresh_ms / 1000.0); });
    // A filter that never forgets guarantees an infinite window.
    e.PerRunningShard(
        s, "oncecount_filter_guaranteed_window_seconds", "gauge",
        "How long the filter holds an id on the shard's clock: dedup.window_ms plus "
        "dedup.timestamp_tolerance_ms. In record time, a copy stamped at most this less "
        "the tolerance after the first copy's timestamp is caught, unless it is late "
        "(applied while the shard's clock is more than the tolerance past its "
        "timestamp); +Inf: the filter never forgets. Lower while the memory bound has "
        "made the filter forget ids of the window, or for a filter made for a smaller "
        "dedup.window_ms (oncecount_dedup_record_window_held_seconds).",
        [](const ShardView& v) {
          const int64_t ms = v.filter.window_ms_guaranteed;
          return MetricValue(ms < 0 ? std::numeric_limits<double>::infinity() : ms / 1000.0);
        });
    // A sample only where the filter holds less than dedup.window_ms in record time.
    e.PerShardWhere(
        s, "oncecount_dedup_record_window_held_seconds", "gauge",
        "For a shard whose filter was made under a smaller dedup.window_ms (or dedup.mode "
        "none) than is configured now: how long after its first copy's timestamp a retry "
        "is still caught; a later one may be counted twice. No sample: the shard holds "
        "dedup.window_ms.",
        [](const ShardView& v) { return MetricValue(v.record_window_held_ms / 1000.0); },
        [](const ShardView& v) { return v.record_window_held_ms >= 0; });
    // A sample only where a restored filter state keeps no memory bound.
    e.PerShardWhere(
        s, "oncecount_filter_unbounded", "gauge",
        "1 for a shard whose filter was restored from a state written before filters had a "
        "memory bound that already held more than dedup.max_filter_mib: it keeps no bound "
        "and grows with the load until a later restore finds it within the bound. No "
        "sample: the filter is bounded.",
        [](const ShardView&) { return MetricValue(uint64_t{1}); },
        [](const ShardView& v) { return v.filter_unbounded; });
    e.PerRunningShard(
        s, "oncecount_filter_forgotten_early_total", "counter",
        "Ids the filter dropped before its window because it reached its size limit "
        "(dedup.max_filter_mib; 64 filters for the bloom filter): their retries may be "
        "counted twice.",
        [](const ShardView& v) { return MetricValue(v.filter.forgotten_early); });
    e.PerRunningShard(s, "oncecount_filter_early_refreshes_total", "counter",
                      "Refreshes that came early because the newest filter was full: the load "
                      "is above dedup.expected_rate.",
                      [](const ShardView& v) { return MetricValue(v.filter.early_refreshes); });
    // Memory, unlike the counters above, is the instance's own: a standby holds a
    // filter as large as its active's, so both report it, labelled by role.
    constexpr std::string_view kMemory = "oncecount_filter_memory_bytes";
    e.Family(kMemory, "gauge",
             "Memory of the filter state of a shard this instance owns (active) or stands "
             "by for (standby).");
    for (const auto& v : s.shards) {
      if (v->role == shard::ShardRole::kReplica || !Exposition::HoldsState(*v)) continue;
      e.Sample(kMemory,
               "{partition=\"" + std::to_string(v->partition.value()) + "\",role=\"" +
                   shard::ShardRoleName(v->role) + "\"}",
               MetricValue((v->filter.bits_total + 7) / 8));
    }
  }

  const shard::StateBoard& board_;
  ApiOptions options_;
  DistinctCounters distinct_;
};

}  // namespace

Handler MakeApiHandler(const shard::StateBoard& board, ApiOptions options) {
  auto api = std::make_shared<Api>(board, std::move(options));
  return [api](const Request& request) { return api->Handle(request); };
}

}  // namespace oncecount::http
