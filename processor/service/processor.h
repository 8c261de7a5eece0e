// Processor: the exactly-once counting loop of one oncecount instance.
//
// It joins the consumer group (cooperative-sticky) on the input topic and hands the
// input of each assigned partition to the ShardWorker that owns that shard
// (shard_worker.h); the workers apply it on their own threads. Once per commit
// interval (or sooner, when a shard's batch grows large) it asks every worker to
// seal its shards' changelog batches and commits them in one Kafka transaction with
// the dead-lettered messages and the input offsets (KIP-447:
// send_offsets_to_transaction with the group's metadata). Workers go on applying
// the next messages while the transaction commits.
//
// The changelog, not the group's committed offsets, is the source of truth: on
// assignment a shard reads its changelog partition, claims it with a new epoch,
// rebuilds counters and filters from the newest snapshot and the batches after it,
// and resumes input at the position recorded there. An aborted transaction throws
// every shard's state away and restores them the same way. A fenced producer ends
// the run with an error (another instance owns our shards now).
//
// Thread-safety: Run executes on the thread main gives it, and the consumer, the
// producer and the rebalance callbacks belong to that thread. Shard state belongs
// to the workers. Readers see the StateBoard, and Stop may be called from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "processor/filter/filter_factory.h"
#include "processor/kafka/client_config.h"
#include "processor/shard/shard_view.h"

namespace oncecount::service {

class ShardWorker;
}  // namespace oncecount::service
namespace oncecount::replica {
class Replicator;
}  // namespace oncecount::replica
namespace oncecount::service {

struct ProcessorOptions {
  std::string bootstrap_servers;
  std::string input_topic = "events";
  std::string dlq_topic = "events.dlq";
  std::string changelog_topic = "events.changelog";
  std::string group_id = "oncecount";
  std::string instance_id;                        // unique per instance; names its transactional.id
  std::map<std::string, std::string> properties;  // kafka.properties, passed as is
  std::chrono::milliseconds commit_interval{100};
  filter::DedupSpec dedup;
  // A commit happens early once a shard's batch holds this many filter calls, so
  // that a batch stays far below the broker's message size limit.
  size_t max_batch_events = 50000;
  std::chrono::milliseconds restore_timeout{60000};
  // Wall clock in ms since the epoch; the filters' time and the views' timestamps.
  std::function<int64_t()> now_ms;
  // One line per notable event (assignment, restore, abort); may be empty.
  std::function<void(const std::string&)> log;
};

class Processor {
 public:
  // Checks the options and creates the Kafka clients; errors name what is wrong.
  // Shard p lives on workers[p % workers.size()]; the workers' threads must run
  // (ShardWorker::Run) for as long as Run does. With a replicator (its thread
  // running), assigned shards are taken over from its hot replicas where it has
  // them, and revoked shards go back to it.
  static std::variant<std::unique_ptr<Processor>, std::string> Create(
      ProcessorOptions options, shard::StateBoard& board, std::vector<ShardWorker*> workers,
      replica::Replicator* replicator = nullptr);
  ~Processor();
  Processor(const Processor&) = delete;
  Processor& operator=(const Processor&) = delete;

  // Runs until Stop; then commits what is pending, leaves the group and returns.
  // Returns an empty string on a clean stop, else the fatal error that ended it.
  std::string Run();
  void Stop() { stop_.store(true); }

  struct Impl;

 private:
  explicit Processor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> stop_{false};
};

}  // namespace oncecount::service
