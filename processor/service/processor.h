// Processor: the exactly-once counting loop of one oncecount instance.
//
// It joins the consumer group (cooperative) on the input topic and hands the input
// of each assigned partition to the ShardWorker that owns that shard
// (shard_worker.h); the workers apply it on their own threads. Once per commit
// interval (or sooner, when a shard's batch grows large) it asks every worker to
// seal its shards' changelog batches and commits them in one Kafka transaction with
// the dead-lettered messages and the input offsets (transaction.h). Workers go on
// applying the next messages while the transaction commits.
//
// The changelog, not the group's committed offsets, is the source of truth: on
// assignment a shard reads its changelog partition up to the high watermark seen
// when the read began (partition_reader.h), rebuilds counters and filters
// (restore.h), claims the shard with a new epoch in a transaction that also carries
// the shard's input offset with the group's metadata — so that a broker refuses
// the claim of a member the group has left behind — and resumes input at the
// position the changelog recorded. Until then the partition stays assigned but
// paused. A restore that fails is retried with back-off.
//
// What a failed transaction means (transaction.h): after an abort every shard is
// restored from its changelog; when the group moved on without us, the shards are
// dropped without a claim and wait for the group to give them back; a fenced or
// broken producer ends Run with an error (the instance exits non-zero).
//
// Thread-safety: Run (or Start, Step and Finish) executes on the thread main gives
// it, and the Kafka clients and the rebalance callbacks belong to that thread.
// Shard state belongs to the workers. Readers see the StateBoard, and Stop may be
// called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/logger.h"
#include "processor/base/metrics.h"
#include "processor/base/result.h"
#include "processor/filter/filter_factory.h"
#include "processor/kafka/clients.h"
#include "processor/shard/late_policy.h"
#include "processor/shard/shard_view.h"

namespace oncecount::replica {
class Replicator;
}  // namespace oncecount::replica
namespace oncecount::service {

class ShardWorker;

struct ProcessorOptions {
  kafka::Clients* clients = nullptr;  // required; outlives the processor
  base::Clock* clock = nullptr;       // null: the system clock
  // Where the processor registers its metrics (commit and restore durations); null:
  // a registry of its own that nothing renders.
  base::MetricRegistry* metrics = nullptr;
  std::string input_topic = "events";
  std::string dlq_topic = "events.dlq";
  std::string changelog_topic = "events.changelog";
  std::string group_id = "oncecount";
  // A group whose shards it may take over (kafka.previous_group_id); empty: none.
  std::string previous_group_id;
  // Why the start could not tell that previous_group_id had stopped (cmd's
  // AwaitPreviousGroupStopped); empty: it could. Listed under /readyz `degraded` for
  // the instance's life.
  std::string previous_group_unverified;
  std::string instance_id;  // unique per instance; names its transactional.id
  // KIP-345: the consumer's group.instance.id (GroupConsumerSpec); empty: a dynamic
  // member. The service sets it to instance_id (kafka.static_membership).
  std::string group_instance_id;
  // Whether Finish leaves the group; a static member may stay, so that a restart
  // gets its shards back without a rebalance (kafka.leave_group_on_stop).
  bool leave_group_on_stop = true;
  std::chrono::milliseconds commit_interval{100};
  // The broker aborts a transaction of ours that stays open longer, and a dead
  // owner's open transaction holds up every restore of its shards that long.
  std::chrono::milliseconds transaction_timeout{10000};
  filter::DedupSpec dedup;
  // dedup.timestamp_tolerance_ms (SPEC §2.1): a record stamped further ahead of the
  // wall clock does not move its shard's clock, and one applied while the shard's
  // clock is further past its timestamp is late (shard_state.h).
  std::chrono::milliseconds timestamp_tolerance{1000};
  // dedup.late_records: what becomes of a late record (shard/late_policy.h).
  shard::LatePolicy late_records = shard::LatePolicy::kApply;
  // A commit happens early once a shard has this many events pending, which bounds
  // a transaction's size and the work an abort throws away. (Each changelog record
  // is bounded in bytes by the topic's max.message.bytes regardless.)
  size_t max_batch_events = 50000;
  // How many bytes a changelog partition keeps, for a cluster that cannot say
  // (Clients::RetentionBytes; the embedded one keeps 5 MB); 0: unknown. Snapshots
  // are timed by it (snapshot_cadence.h).
  size_t changelog_retention_bytes = 0;
  // Where shards' local checkpoints are (local_checkpoint.h): a restore starts from
  // one when it can. The workers write them (WorkerOptions::checkpoint_dir, the
  // same directory). Empty: none.
  std::string checkpoint_dir;
  // How long one restore attempt waits for a changelog partition that an open
  // transaction holds back (a dead owner's, until the broker aborts it) before it
  // gives the loop back; the shard stays restoring and the next step tries again.
  // Restores run in the rebalance callback, where the group can complete no other
  // rebalance: this bounds that stall, beyond the read itself.
  std::chrono::milliseconds restore_wait{5000};
  // The group consumer's max.poll.interval.ms (kafka.properties; librdkafka's default
  // otherwise). Restores run in the rebalance callback, where the consumer does not
  // poll: one longer than this puts the instance out of its group, and its work is
  // thrown away and starts over when the group gives the shards again. A restore that
  // takes half of it is warned about.
  std::chrono::milliseconds max_poll_interval{300000};
  // First back-off after a failed restore; it doubles up to restore_backoff_max.
  std::chrono::milliseconds restore_backoff{1000};
  std::chrono::milliseconds restore_backoff_max{30000};
  // Seeds the random ids of this instance's claims and the hash keys of the shards
  // it claims first (0: each drawn from the kernel, 64 bits; tests seed them to be
  // repeatable).
  uint64_t claim_seed = 0;
  // One line per notable event (assignment, restore, abort); may be empty.
  base::Logger log;
};

class Processor {
 public:
  // Checks the options and the topics and creates the Kafka clients (init_transactions
  // fences any earlier producer of this instance); errors name what is wrong.
  // Shard p lives on workers[p % workers.size()]; the workers' threads must run
  // (ShardWorker::Run) for as long as the processor does. With a replicator (its
  // thread running), assigned shards are taken over from its hot replicas where it
  // has them, and revoked shards go back to it.
  static base::Result<std::unique_ptr<Processor>> Create(ProcessorOptions options,
                                                         shard::StateBoard& board,
                                                         std::vector<ShardWorker*> workers,
                                                         replica::Replicator* replicator = nullptr);
  ~Processor();
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  // Runs until Stop; then commits what is pending, leaves the group and returns.
  // Returns ok after a clean stop, else the fatal error that ended it.
  base::Status Run();
  void Stop() { stop_.store(true); }

  // Run in steps, for tests that script the loop: Start subscribes; each Step
  // polls for at most `poll_timeout` and commits when due (false once a fatal
  // error happened); Finish is Run's shutdown.
  base::Status Start();
  bool Step(std::chrono::milliseconds poll_timeout = std::chrono::milliseconds(10));
  base::Status Finish();
  // Commits what the workers applied now, whatever the interval (tests).
  void CommitNow();

  struct Impl;

 private:
  explicit Processor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace oncecount::service
