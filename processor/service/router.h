// Router: the routing role of the processor. It hands the input messages of running
// shards to the worker that owns each shard (shard p lives on worker p % workers),
// a few hundred at a time (and at most about 1 MiB of keys and values, so that a
// worker's bounded mailbox is bounded in bytes too) so that the mailbox's cost is
// amortized and workers start early, grouped into one run per shard (the consumer interleaves
// partitions; a worker applies a shard's run as one batch), and it counts what each shard got since
// the last commit: once one shard's batch holds max_batch_events messages a commit is
// due, which keeps every batch far below the broker's message size limit.
//
// Which shards are running is the processor's business: it routes only theirs.
//
// Thread-safety: the processor's thread.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "processor/kafka/clients.h"
#include "processor/service/shard_worker.h"

namespace oncecount::service {

class Router {
 public:
  // `workers` outlive the router.
  Router(std::vector<ShardWorker*> workers, uint64_t max_batch_events);

  ShardWorker& WorkerOf(base::Partition partition) const {
    return *workers_[static_cast<size_t>(partition.value()) % workers_.size()];
  }
  const std::vector<ShardWorker*>& workers() const { return workers_; }

  // Stages a message of a running shard for its worker (handed over in groups).
  void Route(kafka::Message message);
  // Hands every staged message over (before a commit seals the batches).
  void HandOverAll();

  uint64_t routed_since_commit() const { return routed_; }
  // A shard's batch reached max_batch_events: commit without waiting for the interval.
  bool commit_due() const { return commit_due_; }
  // The batches were sealed: counting starts again.
  void Sealed();

 private:
  // What waits for one worker: a run per shard, in the order the shards came.
  struct Staged {
    std::vector<InputRun> runs;
    size_t messages = 0;
    size_t bytes = 0;     // of the messages' keys and values
    size_t last_run = 0;  // where the last message went: the next one usually follows it
  };

  void HandOver(size_t worker);
  static InputRun& RunOf(Staged& staged, base::Partition partition);
  uint64_t& CountOf(base::Partition partition);

  std::vector<ShardWorker*> workers_;
  uint64_t max_batch_events_;
  std::vector<Staged> staged_;                     // per worker
  std::map<base::Partition, uint64_t> per_shard_;  // routed since the last seal
  // The count of the partition routed last (the consumer returns runs of one
  // partition): a map lookup per partition switch, not per message.
  base::Partition last_partition_;
  uint64_t* last_count_ = nullptr;
  uint64_t routed_ = 0;
  bool commit_due_ = false;
};

}  // namespace oncecount::service
