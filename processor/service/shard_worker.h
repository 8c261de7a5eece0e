// ShardWorker: the owner thread of some of an instance's active shards. It applies
// their input, seals their changelog batches for the processor's commits, and makes
// the views the processor publishes.
//
// The processor (the consumer loop) hands it work through a bounded mailbox: input
// messages of the shards it owns, shards to adopt or drop, and the seal and commit
// steps of each transaction. Commands run in the order they were posted, which is
// what keeps a shard exact across aborts and rebalances: messages posted before a
// shard is dropped are applied to the old state (then thrown away) or ignored, never
// to the state adopted after it.
//
// Sealing is cheap for the processor: the worker encodes the batch, the snapshot
// when one is due, and the dead letters, and goes on applying the next messages
// while the processor commits the transaction.
//
// Thread-safety: Run executes on the worker's own thread (created by main). Every
// other method is for the processor's thread; Sync waits for the worker, and the
// futures of Seal and RefreshIdleViews are its answers.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "processor/base/ids.h"
#include "processor/base/logger.h"
#include "processor/kafka/clients.h"
#include "processor/service/bounded_queue.h"
#include "processor/service/dead_letter.h"
#include "processor/service/local_checkpoint.h"
#include "processor/service/owned_run.h"
#include "processor/service/snapshot_cadence.h"
#include "processor/shard/shard_state.h"
#include "processor/shard/shard_view.h"

namespace oncecount::service {

// One shard's part of a transaction: its sealed changelog batches and everything
// that is committed with them.
struct SealedShard {
  base::Partition partition;
  base::Seq seq;                      // the changelog seq of its last batch
  std::vector<std::string> batches;   // the encoded changelog batch records, in order
  std::vector<std::string> snapshot;  // encoded snapshot chunks, when one is due
  std::vector<DeadLetter> dead_letters;
  base::Offset next_offset;  // the input position after the batch
  // The shard as of the batch; published once the transaction is committed.
  std::shared_ptr<const shard::ShardView> view;
  // Set when the shard failed on the worker (an allocation its filter or counters
  // could not get, say): its state is lost and it seals nothing more; the processor
  // takes it off and restores it from its changelog. Nothing else is set then.
  std::optional<std::string> failure;
};

// Input messages of one shard in their order: what the router hands a worker, so that
// the worker applies each shard's run as one batch without sorting.
struct InputRun {
  base::Partition partition;
  std::vector<kafka::Message> messages;
};

struct WorkerOptions {
  std::string input_topic;  // names the source in oncecount.source headers
  double target_fpp = 0;    // shown in views
  // When a snapshot goes with a shard's batch; its retention_bytes comes from each
  // shard's rules (ShardRules::changelog_retention_bytes).
  SnapshotCadence snapshots;
  size_t mailbox_capacity = 64;
  std::function<int64_t()> now_ms;  // wall clock, ms since the epoch
  base::Logger log;
  // Where a shard's local checkpoint goes after each committed snapshot
  // (local_checkpoint.h); empty: none are written.
  std::string checkpoint_dir;
  std::string changelog_topic = "events.changelog";  // names the checkpoint files
  // The instance's consumer group, which its claims and so its snapshots name.
  std::string group_id = "oncecount";
};

class ShardWorker {
 public:
  explicit ShardWorker(WorkerOptions options);
  ShardWorker(const ShardWorker&) = delete;
  ShardWorker& operator=(const ShardWorker&) = delete;

  // The worker's loop, on its own thread: runs commands until Close.
  void Run();
  // Run returns once every command posted before Close has run.
  void Close();
  // Commands waiting in the mailbox (at most WorkerOptions::mailbox_capacity). Any
  // thread: for /metrics.
  size_t MailboxDepth() const { return mailbox_.size(); }

  // Applies runs of input messages (of shards this worker owns; others are dropped).
  void Apply(std::vector<InputRun> runs);
  // Takes ownership of a restored shard; its claim (epoch) and rules are already set.
  // `check_from`: the changelog offset its restore had read to before the claim (its
  // local checkpoints carry it, local_checkpoint.h).
  // `kept`: what its changelog partition holds of its snapshot cycle
  // (AdoptedSnapshotCycle; nullopt: not known).
  // `run`: whether its changelog partition holds only its own records since that
  // offset (owned_run.h), its claim's transaction counted; nullopt: not known.
  void Adopt(std::unique_ptr<shard::ShardState> state,
             std::optional<base::Offset> check_from = std::nullopt,
             std::optional<SnapshotCycleKept> kept = SnapshotCycleKept{},
             std::optional<OwnedRun> run = std::nullopt);
  // What the changelog takes now, for the shards it runs from the next seal on
  // (shards adopted later come with it in their rules).
  void SetChangelogLimits(shard::ChangelogLimits limits);
  // The shard's next seal carries a snapshot, whatever the cadence says, and even
  // without a batch: its changelog partition lost the newest one (Processor's
  // CheckSnapshotsKept).
  void SnapshotAtNextSeal(base::Partition partition);
  // Drops shards (revoked, failed or about to be restored again).
  void Drop(std::vector<base::Partition> partitions);
  void DropAll();

  // Seals every shard's pending batch for the transaction about to be committed
  // (the result comes once the worker has run every command posted before). Each
  // shard has at most one sealed batch: call Committed or drop the shards before the
  // next Seal.
  // `backlog`: the input was not drained when the commit was called. The views of a
  // shard working through a backlog then carry its counters as they were up to
  // kBacklogCountersEveryMs before (counters_behind_ms says how old): rebuilding a
  // view of many counters after every commit would cost the shard a large share of
  // its time while nobody can see it catch up anyway.
  static constexpr int64_t kBacklogCountersEveryMs = 1000;
  std::future<std::vector<SealedShard>> Seal(bool backlog = false);
  // The batches of the last Seal are committed; `written` (where the transaction's
  // changelog records went) places the local checkpoints of the snapshots it carried
  // and carries each shard's OwnedRun on.
  void Committed(ChangelogWritten written = {});
  // Views of idle shards (nothing pending or in flight) whose published view is
  // older than their state (its filter detail, or counters kept under a backlog),
  // with the filter summary, digest and counters computed anew. A
  // future, as Seal's, so that the processor asks every worker before it waits.
  std::future<std::vector<std::shared_ptr<const shard::ShardView>>> RefreshIdleViews();
  // Returns once every command posted before has run.
  void Sync();

 private:
  struct Shard {
    std::unique_ptr<shard::ShardState> state;
    std::optional<base::Offset> check_from;  // see Adopt
    std::optional<OwnedRun> run;             // see Adopt
    std::vector<DeadLetter> dead_letters;    // of the pending batch
    size_t bytes_since_snapshot = 0;
    size_t last_snapshot_bytes = 0;
    int64_t last_snapshot_ms = 0;
    bool outgrowing_retention = false;  // told in the log
    bool snapshot_forced = false;       // SnapshotAtNextSeal
    bool forgetting_early = false;      // told in the log
    // Why the shard failed on this worker: it applies and seals nothing more.
    std::optional<std::string> failure;
    // The snapshot of the transaction in flight, written to the disk once committed.
    std::optional<LocalCheckpoint> unwritten_checkpoint;
    std::shared_ptr<const shard::ShardView> last_view;
    int64_t last_filter_detail_ms = 0;
    int64_t last_counters_ms = 0;  // when last_view's counters were brought up to date
    bool counters_kept = false;    // last_view's counters are an older view's
  };

  struct ApplyCommand {
    std::vector<InputRun> runs;
  };
  struct AdoptCommand {
    std::unique_ptr<shard::ShardState> state;
    std::optional<base::Offset> check_from;
    std::optional<SnapshotCycleKept> kept;
    std::optional<OwnedRun> run;
  };
  struct LimitsCommand {
    shard::ChangelogLimits limits;
  };
  struct SnapshotDueCommand {
    base::Partition partition;
  };
  struct DropCommand {
    std::vector<base::Partition> partitions;
    bool all = false;
  };
  struct SealCommand {
    std::promise<std::vector<SealedShard>> done;
    bool backlog = false;
  };
  struct CommittedCommand {
    ChangelogWritten written;
  };
  struct RefreshCommand {
    std::promise<std::vector<std::shared_ptr<const shard::ShardView>>> done;
  };
  struct SyncCommand {
    std::promise<void> done;
  };
  using Command =
      std::variant<ApplyCommand, AdoptCommand, LimitsCommand, SnapshotDueCommand, DropCommand,
                   SealCommand, CommittedCommand, RefreshCommand, SyncCommand>;

  void Post(Command command);
  void ReportRetention(base::Partition partition, Shard& shard, const SnapshotCadence& cadence);
  // Says once (and once more when it holds its whole window again) that a shard's
  // filter dropped ids of its window at its memory bound, from a view whose filter
  // summary is fresh.
  void ReportEarlyForgetting(base::Partition p, Shard& shard, const shard::ShardView& view);
  void Execute(ApplyCommand& c);
  void Execute(AdoptCommand& c);
  void Execute(LimitsCommand& c);
  void Execute(SnapshotDueCommand& c);
  void Execute(DropCommand& c);
  void Execute(SealCommand& c);
  void Execute(CommittedCommand& c);
  void Execute(RefreshCommand& c);
  // After a commit: the shard's batch is committed, its run and checkpoint advance.
  void MarkCommitted(base::Partition p, Shard& shard, const ChangelogWritten& written);
  void Execute(SyncCommand& c);

  // Applies one shard's run; `wall` bounds their timestamps.
  void ApplyRun(Shard& shard, const std::vector<kafka::Message>& messages, filter::Millis wall);
  SealedShard SealShard(base::Partition p, Shard& shard, int64_t now, bool backlog);
  // The shard's state threw (the worker is the module's edge): it is lost from here on.
  void Fail(base::Partition p, Shard& shard, const std::string& doing, const std::exception& e);
  std::shared_ptr<const shard::ShardView> MakeView(Shard& shard, bool force_detail,
                                                   bool backlog = false);

  WorkerOptions o_;
  BoundedQueue<Command> mailbox_;
  std::map<base::Partition, Shard> shards_;  // touched by the worker thread only

  // ApplyRun's scratch space.
  std::vector<shard::InputMessage> inputs_;
  std::vector<shard::Decision> decisions_;
};

}  // namespace oncecount::service
