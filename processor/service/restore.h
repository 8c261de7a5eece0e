// Restore: how a shard's state is rebuilt from the records of its changelog
// partition and which claim its new owner writes — the pure part of a restore,
// with no Kafka in it (the processor reads the records; see partition_reader.h for
// why the read ends at the high watermark seen when it began).
//
//  - RestoreCold: from every record of the partition (LineageBuilder: the newest
//    usable snapshot plus the batches after it), fed as they are read.
//  - CatchUp: a hot replica handed over by the replicator, or a local checkpoint,
//    brought forward by the records after its position (LineageFollower); kCorrupt
//    when the tail takes a turn the state cannot follow, and the shard must restore
//    cold.
//
// Either way the claim takes the newest epoch seen plus one, continues from the
// lineage's last batch, and carries `draw.id` (random, non-zero, chosen by the
// caller), which the shard's later batches and snapshots carry too. It also carries
// the shard's id hash key, which every snapshot, batch and claim of the shard
// carries: the one the state learnt from them, else — the shard's first claim, when
// nothing was ever hashed — `draw.fresh_hash_key`. A state whose records disagree on
// the key is refused (kCorrupt). After an aborted transaction of
// its own, an owner continues from the batch it last committed instead
// (`own_committed`): that cuts its aborted attempt for readers that could still see
// it (the embedded cluster shows aborted records) — but only while nobody claimed the
// shard after it, since cutting back a newer owner's batches would undo their work.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/result.h"
#include "processor/changelog/changelog_record.h"
#include "processor/changelog/lineage.h"
#include "processor/changelog/lineage_follower.h"
#include "processor/filter/filter_factory.h"
#include "processor/replica/replicator.h"
#include "processor/service/snapshot_cadence.h"
#include "processor/shard/shard_state.h"

namespace oncecount::service {

// What a claimer draws at random for one claim.
struct ClaimDraw {
  uint64_t id = 0;  // non-zero
  // Non-zero: the key of a shard that has none yet. Zero would leave a new shard
  // unkeyed; only tests of shards from before keys pass it.
  filter::IdHashKey fresh_hash_key;
  // The claimer's consumer group (kafka.group_id), which its claim names. A shard
  // whose newest claim names another group belongs to another deployment on the same
  // input topic: it is refused. Empty: not checked (tests and tools).
  std::string group{};
  // A group whose shards may be taken as well (kafka.previous_group_id); empty: none.
  std::string previous_group{};
};

struct RestoredShard {
  std::unique_ptr<shard::ShardState> state;  // its epoch set to the claim's
  changelog::ClaimRecord claim;
  std::string summary;  // one line for the log
  // The changelog offset up to which the restore read: every claim before it is
  // older than `claim`, and a rival claim of its epoch can only come after it (where
  // a local checkpoint's lineage check begins, local_checkpoint.h). nullopt: not known.
  std::optional<base::Offset> read_to = std::nullopt;
  // What the changelog partition holds of the shard's snapshot cycle (the snapshot
  // the restore began from, the batches after it); nullopt: not known.
  std::optional<SnapshotCycleKept> kept = std::nullopt;
  // Changelog records that did not decode and were skipped (RestorePlan's).
  uint64_t unreadable_records = 0;
};

// The epoch this instance held and the batch it last committed, for a restore
// after its own aborted transaction.
struct OwnCommit {
  base::Epoch epoch;
  base::Seq seq;
};

// From a lineage fed with every record of the partition (it may have let go of what
// its newest snapshot covers; one that needs_full_read() fails).
base::Result<RestoredShard> RestoreCold(base::Partition partition,
                                        changelog::LineageBuilder lineage,
                                        const filter::DedupSpec& dedup, ClaimDraw draw,
                                        std::optional<OwnCommit> own_committed = std::nullopt);

base::Result<RestoredShard> RestoreCold(base::Partition partition,
                                        const std::vector<std::string>& records,
                                        const filter::DedupSpec& dedup, ClaimDraw draw,
                                        std::optional<OwnCommit> own_committed = std::nullopt);

// `source` names where the state came from, for the summary ("its standby replica").
// kCorrupt when the tail cannot be followed (a cut-back lineage, a claim with another
// key, a record a newer release wrote): a cold restore may still succeed. kBadConfig
// when another consumer group claimed the shard: so would a cold restore.
base::Result<RestoredShard> CatchUp(base::Partition partition, replica::Handoff handoff,
                                    const std::vector<std::string>& tail, ClaimDraw draw,
                                    std::string_view source);

// The claim of a state that `follower` brought to the changelog's high watermark
// (`applied` batches from the tail): the newest epoch it saw plus one, continuing from
// its last batch; kCorrupt when its records disagree on the shard's id hash key,
// kBadConfig when another consumer group claimed the shard last.
base::Result<RestoredShard> ClaimFollowed(base::Partition partition,
                                          std::unique_ptr<shard::ShardState> state,
                                          const changelog::LineageFollower& follower,
                                          size_t applied, ClaimDraw draw, std::string_view source);

// Records the changelog records skipped on the way as unreadable (damaged), for
// /v1/stats and the log.
void NoteUnreadableRecords(RestoredShard& restored, uint64_t unreadable);

}  // namespace oncecount::service
