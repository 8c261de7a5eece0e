// ShardView and StateBoard: what a shard owner publishes for readers (the HTTP API,
// the metrics), and the board where the latest view of every shard is kept.
//
// The owner thread builds a new immutable ShardView after each commit (and after a
// restore) and publishes it; readers take a Snapshot of the board and never touch
// live shard state. A view is a few hundred bytes plus its counter snapshot, which
// is shared, so publishing once per commit interval is cheap.
//
// Thread-safety: ShardView is immutable once published. StateBoard's methods may be
// called from any thread (one mutex; readers copy a vector of shared_ptrs).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "processor/base/enum_names.h"
#include "processor/base/ids.h"
#include "processor/event/increment_event.h"
#include "processor/filter/dedup_filter.h"
#include "processor/shard/counter_snapshot.h"

namespace oncecount::shard {

// Dead-letter counts per reason, indexed by event::DlqReason's value.
using event::kDlqReasonCount;

// kActive: this instance owns the shard. kStandby: a hot replica (counters and
// filters) that can take the shard over. kReplica: counters only, kept so that
// this instance can answer for the whole cluster.
enum class ShardRole : uint8_t { kActive, kStandby, kReplica };
enum class ShardPhase : uint8_t { kRestoring, kRunning, kFailed };

// The names /v1/stats, /metrics labels and the dashboard show.
inline constexpr std::array<base::EnumName<ShardRole>, 3> kShardRoleNames = {{
    {ShardRole::kActive, "active"},
    {ShardRole::kStandby, "standby"},
    {ShardRole::kReplica, "replica"},
}};
inline constexpr std::array<base::EnumName<ShardPhase>, 3> kShardPhaseNames = {{
    {ShardPhase::kRestoring, "restoring"},
    {ShardPhase::kRunning, "running"},
    {ShardPhase::kFailed, "failed"},
}};

inline const char* ShardRoleName(ShardRole role) {
  return base::NameOf(kShardRoleNames, role);
}
inline const char* ShardPhaseName(ShardPhase phase) {
  return base::NameOf(kShardPhaseNames, phase);
}

// How many recently changed counters a view names (ShardView::recent_counters).
inline constexpr size_t kRecentCounters = 100;

struct ShardView {
  base::Partition partition;
  ShardRole role = ShardRole::kActive;
  ShardPhase phase = ShardPhase::kRestoring;
  // Why, when phase == kFailed; what it waits for, when a restoring shard waits.
  std::string failure;

  base::Offset input_offset;    // the next input offset this shard will apply
  base::Offset high_watermark;  // the input partition's end as last seen; lag = hwm - offset
  base::Epoch epoch;            // owner epoch of the shard's changelog
  base::Seq changelog_seq;      // last committed changelog batch

  uint64_t events_applied = 0;
  uint64_t duplicates_dropped = 0;
  uint64_t near_edge_duplicates = 0;
  uint64_t dead_lettered = 0;
  std::array<uint64_t, kDlqReasonCount> dead_lettered_by_reason{};
  uint64_t transactions_committed = 0;
  uint64_t transactions_aborted = 0;
  // Input messages that retention removed before they were applied (lost events):
  // nonzero means the shard was down or behind longer than the input topic keeps data.
  uint64_t input_lost = 0;
  // Changelog records the restore that gave this instance the shard could not read
  // and skipped (a bad checksum, truncated bytes, a newer format): its state is the
  // newest the readable records hold.
  uint64_t changelog_unreadable_records = 0;
  // Failed restore attempts of this shard on this instance (each is retried with
  // back-off; the latest reason is in `failure`).
  uint64_t restore_retries = 0;
  // Replicas: how far behind the changelog's end, in time (0 while caught up);
  // -1 on an active shard.
  int64_t replica_lag_ms = -1;
  // The shard's clock: the largest record timestamp applied (0: none yet). Records
  // too far ahead of the owner's wall clock to move it, late records (older than it
  // by more than dedup.timestamp_tolerance_ms), and records without a timestamp (they take it as it
  // is), counted by this owner since it took the shard.
  int64_t event_clock_ms = 0;
  uint64_t timestamps_ahead = 0;
  uint64_t late_events = 0;
  uint64_t timestamps_missing = 0;
  // -1, or how much of dedup.window_ms (record_window_ms) the shard's filter holds:
  // it was made for a shorter window (the setting raised since), and retries later
  // than this after their first copy may be counted twice (readiness says so).
  int64_t record_window_held_ms = -1;
  int64_t record_window_ms = -1;
  // The filter grows without a memory bound: read from a state written before filters
  // had one that held more than dedup.max_filter_mib already (ShardRules).
  bool filter_unbounded = false;
  // The shard hashes ids under its own secret key (filter/id_hash.h); false for a
  // shard created before keys existed, which keeps hashing them unkeyed, or a
  // replica that has not seen its shard's key yet.
  bool hash_keyed = false;

  // The filter's summary and digest cost a pass over all its bits, so owners refresh
  // them at most about once a second; `digest_seq` is the changelog batch they
  // describe (compare digests only at equal digest_seq).
  filter::FilterSummary filter;
  double target_fpp = 0;
  std::string digest;  // filter::DedupFilter::Digest() after batch digest_seq
  base::Seq digest_seq;

  std::shared_ptr<const CounterSnapshot> counters;  // never null once published
  // The names of the counters that changed most recently, newest first, each once, at
  // most kRecentCounters (null: none yet). Shared between views until a
  // batch changes it.
  std::shared_ptr<const std::vector<std::string>> recent_counters;
  int64_t published_at_ms = 0;  // wall clock (ms since the epoch)
  // How long before published_at_ms `counters` and `recent_counters` were last brought
  // up to date: 0 but while the shard works through a backlog, when its owner
  // rebuilds them at most about once a second (ShardWorker).
  int64_t counters_behind_ms = 0;

  int64_t lag() const { return std::max<int64_t>(0, high_watermark.Since(input_offset)); }
  // Published again at `now_ms` (wall clock) by an owner that knows nothing newer: the
  // view is as fresh as then, but counters kept from an older view keep their age, so
  // that staleness_ms, measured from the counters, does not restart.
  void RestampAt(int64_t now_ms) {
    if (counters_behind_ms > 0)
      counters_behind_ms += std::max<int64_t>(0, now_ms - published_at_ms);
    published_at_ms = now_ms;
  }
};

class StateBoard {
 public:
  // `partitions`: how many input partitions (shards) exist in the cluster; a
  // counter total is complete only when every one of them has a running view here.
  explicit StateBoard(int32_t partitions = 0) : partitions_(partitions) {}

  void SetPartitionCount(int32_t partitions);
  // Two publishers share the board: the shard's owner (the processor: active views)
  // and the follower of the shards it does not own (the replicator: standby and
  // replica views). An active view wins: a follower's view neither replaces it nor
  // is removed with it, so that while the owner restores a shard it took from a
  // replica, /readyz keeps saying so. The owner removes its view before it hands the
  // shard back to the follower.
  void Publish(std::shared_ptr<const ShardView> view);
  // The owner's removal: whatever view the partition has.
  void Remove(base::Partition partition);
  // The follower's removal: the partition's view only when it is not active.
  void RemoveFollowerView(base::Partition partition);
  // Set once the processor has joined its group and received its first assignment;
  // /readyz is 503 before that.
  void SetAssignmentKnown(bool known);
  // Why the input or the changelog topic cannot be used (the cluster no longer lists
  // it: deleted, or Describe revoked); empty once both can. /readyz is 503 meanwhile:
  // an instance whose group lost its input holds no shard and would otherwise look
  // ready, and one without its changelog cannot commit. (A missing dead-letter topic
  // is an instance-wide `degraded` reason: SetInstanceDegraded.)
  void SetTopicsUnavailable(std::string why);
  // What the instance's start waits for before the processor runs (a topic not
  // created yet, the instances of the group it was renamed from); empty once it no
  // longer waits. /readyz gives it as the reason it is not ready.
  void SetStartWaitingFor(std::string why);
  // Why guarantees hold less than in full for the whole instance rather than one
  // shard (the input gained partitions: keys moved; the dead-letter topic is gone);
  // empty when none. /readyz lists each under `degraded` with no partition.
  void SetInstanceDegraded(std::vector<std::string> reasons);
  // When (steady ms, the processor's clock: a wall-clock step must not move it) the
  // instance's transaction in progress began, -1 when none is open; and how long one
  // may stay open (kafka.transaction_timeout_ms). The processor's thread is blocked
  // inside a stuck commit, so /readyz (on the HTTP thread) judges it from these: past
  // the timeout, nothing commits.
  void SetTransactionOpenSince(int64_t steady_ms);
  void SetTransactionTimeout(int64_t ms);

  struct Snapshot {
    std::vector<std::shared_ptr<const ShardView>> shards;  // by partition
    int32_t partitions = 0;
    bool assignment_known = false;
    std::string start_waiting_for;               // SetStartWaitingFor
    std::string topics_unavailable;              // SetTopicsUnavailable
    std::vector<std::string> instance_degraded;  // SetInstanceDegraded
    int64_t transaction_open_since_ms = -1;      // SetTransactionOpenSince
    int64_t transaction_timeout_ms = 0;          // SetTransactionTimeout; 0: not judged
    // Why the instance's transaction is stuck at steady time `now_ms` (open past its
    // timeout); empty when it is not.
    std::string StuckTransaction(int64_t now_ms) const;
    // Every shard of the cluster has a running view on this instance.
    bool complete() const;
    // Every shard assigned to this instance is restored and running.
    bool ready() const;
  };
  Snapshot Read() const;

 private:
  mutable std::mutex mu_;
  int32_t partitions_;
  bool assignment_known_ = false;
  std::string start_waiting_for_;
  std::string topics_unavailable_;
  std::vector<std::string> instance_degraded_;
  int64_t transaction_open_since_ms_ = -1;
  int64_t transaction_timeout_ms_ = 0;
  std::vector<std::shared_ptr<const ShardView>> shards_;  // sorted by partition
};

}  // namespace oncecount::shard
