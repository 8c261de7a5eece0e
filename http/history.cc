#include "http/history.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <limits>

namespace oncecount::http {
namespace {

uint32_t Saturated(uint64_t v) {
  return static_cast<uint32_t>(std::min<uint64_t>(v, std::numeric_limits<uint32_t>::max()));
}

uint32_t Saturated(int64_t v) {
  return Saturated(static_cast<uint64_t>(std::max<int64_t>(v, 0)));
}

// A counter that went down (a shard restored from an older state, or taken over by
// another owner) restarts the delta from its new value.
uint32_t Delta(uint64_t now, uint64_t before) {
  return now >= before ? Saturated(now - before) : 0;
}

}  // namespace

void History::Record(const shard::StateBoard::Snapshot& board, int64_t wall_ms) {
  HistorySample sample;
  sample.wall_ms = wall_ms;
  sample.shards.reserve(board.shards.size());
  std::lock_guard lock(mu_);
  std::map<std::pair<int32_t, shard::ShardRole>, Cumulative> now;
  for (const auto& view : board.shards) {
    const shard::ShardView& v = *view;
    const Cumulative c{v.events_applied,    v.duplicates_dropped, v.near_edge_duplicates,
                       v.dead_lettered,     v.late_events,        v.timestamps_ahead,
                       v.timestamps_missing};
    const auto key = std::make_pair(v.partition.value(), v.role);
    const auto before = last_.find(key);
    const Cumulative b = before == last_.end() ? c : before->second;
    // A shard restoring or failed has no state and reads 0: its counts stay those it
    // had (or none), or its return would show everything it ever counted as one
    // sample's.
    const bool stateless = v.phase != shard::ShardPhase::kRunning;
    ShardSample s;
    s.partition = v.partition.value();
    s.role = v.role;
    s.phase = v.phase;
    s.filters = static_cast<uint16_t>(std::min<uint32_t>(v.filter.filters, 0xffff));
    s.events_applied = Delta(c.events_applied, b.events_applied);
    s.duplicates_dropped = Delta(c.duplicates_dropped, b.duplicates_dropped);
    s.near_edge_duplicates = Delta(c.near_edge_duplicates, b.near_edge_duplicates);
    s.dead_lettered = Delta(c.dead_lettered, b.dead_lettered);
    s.late_events = Delta(c.late_events, b.late_events);
    s.timestamps_ahead = Delta(c.timestamps_ahead, b.timestamps_ahead);
    s.timestamps_missing = Delta(c.timestamps_missing, b.timestamps_missing);
    s.lag = Saturated(v.lag());
    s.replica_lag_ms = v.replica_lag_ms < 0
                           ? -1
                           : static_cast<int32_t>(std::min<int64_t>(
                                 v.replica_lag_ms, std::numeric_limits<int32_t>::max()));
    s.refresh_ms = Saturated(v.filter.refresh_ms);
    s.window_ms_guaranteed = Saturated(v.filter.window_ms_guaranteed);
    s.estimated_fpp = static_cast<float>(v.filter.estimated_fpp);
    sample.shards.push_back(s);
    if (!stateless) {
      now.emplace(key, c);
    } else if (before != last_.end()) {
      now.emplace(key, b);
    }  // else its first running sample is its first, as at a start
  }
  last_ = std::move(now);
  shard_samples_ += sample.shards.size();
  ring_.push_back(std::move(sample));
  const size_t max_samples = std::max<size_t>(options_.max_samples, 1);
  while (ring_.size() > 1 && (ring_.size() > max_samples ||
                              shard_samples_ * sizeof(ShardSample) > options_.max_bytes)) {
    shard_samples_ -= ring_.front().shards.size();
    ring_.pop_front();
  }
}

std::vector<HistorySample> History::Since(int64_t after_ms) const {
  std::lock_guard lock(mu_);
  const auto first = std::find_if(ring_.begin(), ring_.end(), [after_ms](const HistorySample& s) {
    return s.wall_ms > after_ms;
  });
  return {first, ring_.end()};
}

size_t History::bytes() const {
  std::lock_guard lock(mu_);
  return shard_samples_ * sizeof(ShardSample);
}

std::shared_ptr<HistorySampler> HistorySampler::Start(boost::asio::io_context& io,
                                                      const shard::StateBoard& board,
                                                      History& history,
                                                      std::function<int64_t()> now_ms) {
  std::shared_ptr<HistorySampler> sampler(
      new HistorySampler(io, board, history, std::move(now_ms)));
  boost::asio::post(io, [sampler] { sampler->Tick(); });
  return sampler;
}

void HistorySampler::Tick() {
  history_.Record(board_.Read(), now_ms_());
  Arm();
}

void HistorySampler::Arm() {
  if (stopped_) return;
  timer_.expires_after(history_.options().interval);
  timer_.async_wait([self = shared_from_this()](const boost::system::error_code& error) {
    if (!error && !self->stopped_) self->Tick();
  });
}

void HistorySampler::Stop() {
  boost::asio::post(timer_.get_executor(), [self = shared_from_this()] {
    self->stopped_ = true;
    self->timer_.cancel();
  });
}

}  // namespace oncecount::http
