// ShardLoader: the restore role of the processor. It brings assigned shards back
// from their changelog: from the hot replica the replicator hands over when it has
// one (CatchUp over the changelog's tail after the replica's position), else from
// its local checkpoint when its claim and batch are on the changelog's lineage
// (local_checkpoint.h; the changelog read from the claim on, or from the snapshot's
// last chunk when its owner knew its records were alone since the claim (owned_run.h),
// the batches after the checkpoint applied as they come; a checkpoint passed over is
// logged and counted by reason), else cold
// from the whole partition (RestoreCold), streamed into the lineage record by record
// so that a restore holds about one snapshot and the batches after it, not the
// partition. Either read goes up to the high watermark
// seen when it began (partition_reader.h), so no claim written before is missed.
//
// It writes nothing: the processor claims what it returns (in one transaction with
// the input offsets) and hands the shards to their workers. A shard that could not
// be read or rebuilt comes back as failed, with the reason, to be retried; so does
// one whose changelog partition lost every record of its state (LineageBuilder::
// CheckStart), which a cold restore would otherwise take for a new, empty shard.
//
// Thread-safety: the processor's thread; Load blocks while it reads (the clock's
// Sleep between empty polls).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "processor/base/clock.h"
#include "processor/base/enum_names.h"
#include "processor/base/logger.h"
#include "processor/filter/filter_factory.h"
#include "processor/kafka/clients.h"
#include "processor/service/local_checkpoint.h"
#include "processor/service/restore.h"
#include "processor/service/restore_progress.h"

namespace oncecount::replica {
class Replicator;
}  // namespace oncecount::replica
namespace oncecount::service {

// Why a local checkpoint was passed over for a restore from the changelog.
enum class CheckpointFallback : uint8_t {
  kUnreadable,      // the file or its snapshot does not decode (or cannot be read)
  kBeforeLogStart,  // the changelog no longer keeps the records after it
  kNotInChangelog,  // the changelog does not hold its batch: another cluster or topic
  kNotOnLineage,    // its batch is there, superseded before it: a zombie's
  kDiverged,        // the lineage after its batch went another way
  kReadFailed,      // the changelog could not be read
  kNewerFormat,     // a newer release wrote to the changelog after it
};
inline constexpr std::array<base::EnumName<CheckpointFallback>, 7> kCheckpointFallbackNames = {{
    {CheckpointFallback::kUnreadable, "unreadable"},
    {CheckpointFallback::kBeforeLogStart, "before_log_start"},
    {CheckpointFallback::kNotInChangelog, "not_in_changelog"},
    {CheckpointFallback::kNotOnLineage, "not_on_lineage"},
    {CheckpointFallback::kDiverged, "diverged"},
    {CheckpointFallback::kReadFailed, "read_failed"},
    {CheckpointFallback::kNewerFormat, "newer_format"},
}};
inline const char* CheckpointFallbackName(CheckpointFallback why) {
  return base::NameOf(kCheckpointFallbackNames, why);
}

struct ShardLoaderOptions {
  kafka::Clients* clients = nullptr;  // required
  base::Clock* clock = nullptr;       // required
  std::string changelog_topic;
  // How long a read waits, without moving, for the changelog's open transactions to
  // be decided before the shard is reported held back (LoadResult::held_back).
  std::chrono::milliseconds wait{20000};
  filter::DedupSpec dedup;                    // for a shard whose changelog is empty
  replica::Replicator* replicator = nullptr;  // null: every shard restores cold
  std::function<ClaimDraw()> new_claim;       // required: random, non-zero
  base::Logger log;
  // Local checkpoints (local_checkpoint.h) to start from; empty: none.
  std::string checkpoint_dir;
  RestoreProgress* progress = nullptr;  // told how far cold reads are; null: nobody
  // Told each time a local checkpoint is passed over (the reason is also logged).
  std::function<void(CheckpointFallback)> on_checkpoint_fallback;
};

struct LoadResult {
  std::vector<RestoredShard> restored;            // each with the claim to write
  std::map<base::Partition, std::string> failed;  // partition → why
  // Partitions whose changelog an open transaction held back for the whole wait
  // (partition → which offset): nothing failed, and a later attempt will get past it
  // once the broker decides the transaction.
  std::map<base::Partition, std::string> held_back;
};

class ShardLoader {
 public:
  explicit ShardLoader(ShardLoaderOptions options) : o_(std::move(options)) {}

  // Restores `partitions`. `own` holds, for shards this instance owned until its own
  // transaction aborted, the epoch it held and the batch it last committed (see
  // restore.h).
  LoadResult Load(const std::vector<base::Partition>& partitions,
                  const std::map<base::Partition, OwnCommit>& own = {});

 private:
  std::vector<RestoredShard> TakeOver(const std::vector<base::Partition>& partitions,
                                      LoadResult& out);
  // A checkpoint's state while the changelog is checked and followed after it.
  struct CheckpointRead {
    std::unique_ptr<shard::ShardState> state;
    changelog::LineageFollower follower;
    base::Offset from;  // where the read begins
    size_t applied = 0;
    std::optional<CheckpointFallback> off_lineage;  // set once the follower said kRebuild
    // Its snapshot, and the batches applied; nullopt: retention took part of the
    // snapshot, so the changelog keeps no complete one (AdoptedSnapshotCycle).
    std::optional<SnapshotCycleKept> kept;
    bool from_snapshot_end = false;  // read from its snapshot's last chunk on (Resuming)
    uint64_t unreadable = 0;         // damaged records skipped in the tail
  };
  std::vector<RestoredShard> FromCheckpoints(const std::vector<base::Partition>& partitions,
                                             LoadResult& out);
  std::map<base::Partition, CheckpointRead> UsableCheckpoints(
      const std::vector<base::Partition>& partitions);
  void PassOver(base::Partition p, CheckpointFallback why, const std::string& detail);

  void RestoreCold(const std::vector<base::Partition>& partitions,
                   const std::map<base::Partition, OwnCommit>& own, LoadResult& out);
  // Reads `partitions` into fresh lineages and says where each read ended; false
  // (each partition failed or held back) when the read fails.
  bool Stream(const std::vector<base::Partition>& partitions, changelog::LineageBuilder::Keep keep,
              std::map<base::Partition, changelog::LineageBuilder>& lineages,
              std::map<base::Partition, base::Offset>& read_to, LoadResult& out);
  // Files `p` under out.failed, and says so, when a state taken over was refused for
  // a reason a cold restore would meet as well (another consumer group's shard,
  // kBadConfig): it is not a fallback, and reading the whole changelog again would
  // only say the same.
  static bool RefusedForGood(const base::Error& error, base::Partition p, LoadResult& out);
  // Files a failed read of `partitions` under out.held_back (an open transaction held
  // it back) or out.failed.
  static void FileFailedRead(const std::vector<base::Partition>& partitions,
                             const base::Error& error, LoadResult& out);
  // What the loader logs is a fallback (a local checkpoint it cannot use, a replica
  // it cannot follow): a warning.
  void Log(const std::string& line) const { o_.log.Warn(line); }

  ShardLoaderOptions o_;
};

}  // namespace oncecount::service
