// Replicator: follows the changelog of every shard this instance does not own, so
// that the instance can answer for the whole cluster and stand by for the shards it
// was picked for (membership.h).
//
// For each followed shard it keeps a replica built the way a restore builds a
// shard: it reads the changelog partition from its start with a LineageBuilder
// (snapshot plus the batches after it), then follows new records one by one with a
// LineageFollower, replaying batches in order. A replica of a shard this instance
// stands by for is hot: it keeps the filter, bit-identical to the active's at the
// same batch (equal digests). The others keep counters only. When the lineage
// takes a turn a replica cannot follow (a new owner's claim cut back a batch it
// had applied), the replica is built again from the changelog.
//
// It also keeps this instance's heartbeat on the members topic (when there is one)
// and reads everyone's: that is where the standby rule gets who is live and who
// owns what.
//
// When the consumer group gives this instance a shard, the processor takes the
// shard's replica (Take): a hot one that is caught up becomes the new active
// state after the changelog's last few records, instead of a restore from scratch.
// When the group takes a shard away, the processor gives it back (Follow).
//
// Replicas publish views on the StateBoard with role standby or replica, the lag
// behind the changelog's end, and the staleness of what they answer.
//
// Thread-safety: Run (or Start, Step and Finish) executes on the replicator's own
// thread (created by main), which owns the changelog reader, the members producer
// and every replica. Take, Follow and Stop may be called from any thread; Take
// waits for that thread to run its next Step (on that thread itself, it runs at
// once: tests step a processor and a replicator on one thread).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/logger.h"
#include "processor/base/metrics.h"
#include "processor/base/result.h"
#include "processor/changelog/lineage_follower.h"
#include "processor/changelog/snapshot_cycle.h"
#include "processor/filter/filter_factory.h"
#include "processor/kafka/clients.h"
#include "processor/shard/shard_state.h"
#include "processor/shard/shard_view.h"

namespace oncecount::replica {

struct ReplicatorOptions {
  kafka::Clients* clients = nullptr;  // required; outlives the replicator
  base::Clock* clock = nullptr;       // null: the system clock
  // Where the replicator registers its metrics (rebuilds); null: a registry of its
  // own that nothing renders.
  base::MetricRegistry* metrics = nullptr;
  std::string changelog_topic = "events.changelog";
  std::string members_topic;  // empty: no membership, no hot standbys
  std::string group_id = "oncecount";
  std::string instance_id;
  std::string api_url;
  int64_t standby_replicas = 0;
  filter::DedupSpec dedup;  // for a shard whose changelog is empty
  std::chrono::milliseconds heartbeat{1000};
  std::chrono::milliseconds member_timeout{5000};
  // A replica's view is published at most this often while it changes.
  std::chrono::milliseconds publish_every{25};
  base::Logger log;
};

// A hot replica handed to the processor, which makes it the shard's active state.
struct Handoff {
  std::unique_ptr<shard::ShardState> state;
  changelog::LineageFollower follower{base::Epoch(), base::Seq(), 0};
  base::Offset next_offset;  // the changelog offset after the last record it read
  // Damaged changelog records the replica's build skipped: the shard is restored past
  // them all the same, and its new owner says so (changelog_unreadable_records).
  uint64_t unreadable_records = 0;
  // Where the replica is in the shard's snapshot cycle, carried on by the tail.
  changelog::SnapshotCycle cycle{};
};

class Replicator {
 public:
  // Checks the options, reads the changelog's partition count and creates the
  // Kafka clients; errors name what is wrong.
  static base::Result<std::unique_ptr<Replicator>> Create(ReplicatorOptions options,
                                                          shard::StateBoard& board);
  ~Replicator();
  Replicator(const Replicator&) = delete;
  Replicator& operator=(const Replicator&) = delete;

  // Follows every shard (until the processor takes some) until Stop; then says
  // goodbye on the members topic. Returns ok or the error that ended it.
  base::Status Run();
  void Stop() { stop_.store(true); }

  // Run in steps, for tests that script the loop: Start starts following; each
  // Step runs the commands from other threads, reads for at most `poll_timeout` and
  // publishes (false once the replicator cannot go on: a client that had a fatal
  // error could not be made again); Finish is Run's goodbye.
  void Start();
  bool Step(std::chrono::milliseconds poll_timeout = std::chrono::milliseconds(10));
  base::Status Finish();

  // Stops following `partitions` (this instance owns them now) and returns the hot
  // replicas among them that had caught up with their changelog.
  std::map<base::Partition, Handoff> Take(const std::vector<base::Partition>& partitions);
  // Follows `partitions` again (this instance no longer owns them).
  void Follow(const std::vector<base::Partition>& partitions);

  struct Impl;

 private:
  explicit Replicator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace oncecount::replica
