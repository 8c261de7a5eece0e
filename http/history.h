// History: the recent past of every shard this instance shows, kept by the instance
// so that the dashboard plots it the moment it opens (GET /v1/history), and a reload
// loses nothing.
//
// A bounded ring of samples, one per interval (1 s): each sample holds, per shard
// view on the board (active, standby or replica), what happened since the previous
// sample (events applied, duplicates dropped, dead letters, late, ahead and
// timestamp-less records) and how things stood (phase, lag, estimated FPP, filters,
// refresh period, guaranteed window, replica lag). Counts are deltas, so that a
// sample is 56 bytes per shard: ten minutes of 24 shards take 24 x 600 x 56 B =
// 806 KB. The ring keeps at most `max_samples` samples and at most `max_bytes`
// bytes of shard samples, dropping the oldest first (with 256 shards, 4 MiB holds
// about five minutes).
//
// HistorySampler records a sample every interval on an io_context's thread (the HTTP
// server's): no thread of its own.
//
// Thread-safety: History's methods may be called from any thread (one mutex);
// Since copies what it returns. HistorySampler's Start and Stop from any thread; its
// timer runs on the io_context.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "processor/shard/shard_view.h"

namespace oncecount::http {

struct HistoryOptions {
  std::chrono::milliseconds interval{1000};
  size_t max_samples = 600;            // ten minutes at one a second
  size_t max_bytes = size_t{4} << 20;  // of shard samples
};

// One shard view at one sample time. Counts are since the previous sample of the
// same partition and role (0 at its first).
struct ShardSample {
  int32_t partition = 0;
  shard::ShardRole role = shard::ShardRole::kActive;
  shard::ShardPhase phase = shard::ShardPhase::kRestoring;
  uint16_t filters = 0;
  uint32_t events_applied = 0;
  uint32_t duplicates_dropped = 0;
  uint32_t near_edge_duplicates = 0;
  uint32_t dead_lettered = 0;
  uint32_t late_events = 0;
  uint32_t timestamps_ahead = 0;
  uint32_t timestamps_missing = 0;
  uint32_t lag = 0;                   // saturated
  int32_t replica_lag_ms = -1;        // -1: an active shard
  uint32_t refresh_ms = 0;            // saturated
  uint32_t window_ms_guaranteed = 0;  // saturated
  float estimated_fpp = 0;
};

struct HistorySample {
  int64_t wall_ms = 0;
  std::vector<ShardSample> shards;
};

class History {
 public:
  explicit History(HistoryOptions options = {}) : options_(options) {}

  // Takes a sample of `board` at wall time `wall_ms`.
  void Record(const shard::StateBoard::Snapshot& board, int64_t wall_ms);
  // The samples newer than `after_ms`, oldest first.
  std::vector<HistorySample> Since(int64_t after_ms) const;
  // The bytes the ring's shard samples take now.
  size_t bytes() const;
  const HistoryOptions& options() const { return options_; }

 private:
  struct Cumulative {
    uint64_t events_applied, duplicates_dropped, near_edge_duplicates, dead_lettered, late_events,
        timestamps_ahead, timestamps_missing;
  };

  const HistoryOptions options_;
  mutable std::mutex mu_;
  std::deque<HistorySample> ring_;
  size_t shard_samples_ = 0;
  // The last sample's cumulative counts per (partition, role), for the deltas.
  std::map<std::pair<int32_t, shard::ShardRole>, Cumulative> last_;
};

class HistorySampler : public std::enable_shared_from_this<HistorySampler> {
 public:
  // Records into `history` every interval from `board`, at `now_ms` (wall clock).
  static std::shared_ptr<HistorySampler> Start(boost::asio::io_context& io,
                                               const shard::StateBoard& board, History& history,
                                               std::function<int64_t()> now_ms);
  void Stop();

 private:
  HistorySampler(boost::asio::io_context& io, const shard::StateBoard& board, History& history,
                 std::function<int64_t()> now_ms)
      : timer_(io), board_(board), history_(history), now_ms_(std::move(now_ms)) {}
  void Tick();  // records a sample and arms the timer for the next
  void Arm();

  boost::asio::steady_timer timer_;
  bool stopped_ = false;  // on the io_context's thread
  const shard::StateBoard& board_;
  History& history_;
  std::function<int64_t()> now_ms_;
};

}  // namespace oncecount::http
