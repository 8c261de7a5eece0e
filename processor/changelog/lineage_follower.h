// LineageFollower: the lineage rule of lineage.h applied record by record to a
// shard state that is already built — a standby's hot replica, or a new owner
// catching up the changelog's tail from such a replica.
//
// Fed the records of changelog partition p in log order, it says for each one what
// the state must do:
//
//  - kApply: the batch continues the state's lineage (seq = applied + 1); the
//    follower has moved on to it;
//  - kSkip: nothing to do: a zombie's batch (older epoch), a batch written under a
//    refused second claim of the epoch (claim_rule.h), a batch the state holds
//    already (re-read history), a snapshot chunk, or a claim that continues from
//    the state's last batch;
//  - kRebuild: the lineage went another way than the state: a new owner's claim
//    cut back batches the state applied (an aborted attempt that was visible), a
//    newer epoch rewrote a batch, or batches are missing. The state cannot be
//    repaired record by record; rebuild it from the changelog (LineageBuilder).
//
// These are the rules LineageBuilder applies to a whole partition, so a follower
// and a restore that read the same records reach the same state.
//
// A follower made with Seeking() first finds its position: a local checkpoint's
// state, after batch (epoch, seq) of claim `claim`, fed the partition from where the
// restore that wrote that claim had read to (every claim before is older; or from
// the log start). Until the batch, it only tracks the claims and epochs as
// LineageBuilder does (kSkip); the batch must then fit the lineage there — not
// superseded by a newer epoch's claim, batch or snapshot, not under a refused second
// claim of its epoch — or the step is kRebuild (seeking() still true: the checkpoint
// is not on the lineage, a zombie's). A complete snapshot of that batch (epoch, seq and
// claim alike: one written alone, its batch in an earlier transaction) is met as the
// batch is. A read that ends while seeking() never met the batch.
//
// A follower made with Resuming() takes a checkpoint whose owner knew that nothing but
// its own records follow its claim up to the checkpoint's snapshot (OwnedRun, in
// processor/service/owned_run.h), and is fed the partition from that snapshot's last
// chunk on: the first record must be that chunk (the checkpoint is of this changelog,
// not of another cluster or incarnation of the topic), or it stays seeking() for
// good; after it, the lineage goes on as it would after the snapshot's batch.
//
// Thread-safety: one follower per replica, on the replica's owner thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "processor/changelog/changelog_record.h"
#include "processor/changelog/claim_rule.h"

namespace oncecount::changelog {

class LineageFollower {
 public:
  enum class Step : uint8_t { kApply, kSkip, kRebuild };

  // Follows a state that holds every batch up to `applied_seq`, in a lineage whose
  // newest epoch is `epoch`, held by claim `claim` whose id hash key is `hash_key`
  // (a restore's RestorePlan).
  LineageFollower(Epoch epoch, Seq applied_seq, uint64_t claim,
                  std::optional<uint64_t> hash_key = std::nullopt, std::string group = {})
      : claims_(epoch, claim, hash_key, std::move(group)), applied_(applied_seq) {}
  // See above.
  static LineageFollower Seeking(Epoch epoch, Seq seq, uint64_t claim);
  static LineageFollower Resuming(Epoch epoch, Seq seq, uint64_t claim);

  Step Next(const Record& record);

  // The newest epoch seen: a new owner claims epoch() + 1.
  Epoch epoch() const { return claims_.epoch(); }
  // Whether a record of `epoch` written under `claim` is of the claim that counts.
  bool IsCurrentClaim(Epoch epoch, uint64_t claim) const {
    return claims_.Of(epoch, claim) == ClaimRule::Fit::kCurrent;
  }
  // The last batch applied: a new owner's claim continues from it.
  Seq applied_seq() const { return applied_; }
  // A Seeking() follower that has not met its batch yet.
  bool seeking() const { return seeking_; }
  // The id hash key of the newest claim that counted (changelog_record.h); nullopt:
  // none seen.
  std::optional<uint64_t> hash_key() const { return claims_.hash_key(); }
  // The consumer group of the newest epoch (LineageBuilder's RestorePlan::group);
  // empty: none seen, or records before format 6.
  const std::string& group() const { return claims_.group(); }

 private:
  Step OnBatch(const BatchRecord& batch);
  Step OnClaim(const ClaimRecord& claim);
  Step Seek(const Record& record);
  // A Resuming() follower's first record.
  Step Resume(const Record& record);
  Step SeekChunk(const SnapshotChunk& chunk);

  ClaimRule claims_;
  Seq applied_;
  bool seeking_ = false;
  // A Resuming() follower that has not read its first record; after a first record
  // that is not its snapshot's last chunk, it stays seeking() and skips the rest.
  bool resuming_ = false;
  bool lost_ = false;
  // What a Seeking() follower looks for.
  Epoch sought_epoch_;
  Seq sought_seq_;
  uint64_t sought_claim_ = 0;
  // The snapshot whose chunks a Seeking() follower is reading (count 0: none).
  struct SeekSnapshot {
    Epoch epoch;
    Seq seq;
    uint64_t claim = 0;
    uint32_t count = 0;
    uint32_t next = 0;
    std::string group;
  };
  SeekSnapshot seek_snapshot_;
};

}  // namespace oncecount::changelog
