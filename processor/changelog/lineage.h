// Lineage: which records of a shard's changelog make up its committed state.
//
// Fed every record of changelog partition p in log order, it keeps the one lineage
// that the newest owner continues:
//
//  - a batch of an epoch older than the newest seen is a zombie's and is ignored;
//  - within an epoch only its first claim counts (claim_rule.h): a second claim of
//    the same epoch, and whatever is written under its id, is ignored;
//  - a batch of epoch e with seq s supersedes any batch with seq >= s of an older
//    epoch (an aborted attempt that a reader could still see);
//  - a claim (E, base) raises the epoch to E and drops every batch and snapshot
//    after `base` (the claimer continues from base; anything later was never
//    committed or belongs to the owner it fences);
//  - a snapshot is usable once all its chunks arrived and nothing dropped it;
//  - a complete snapshot of an epoch newer than any record read stands for its own
//    batch, which precedes it (in the same transaction, or an earlier one for a
//    snapshot written alone) and was deleted before the read (retention cut the
//    partition between the two): the lineage continues from it.
//    Exact where aborted records are hidden (a real broker); on the embedded cluster,
//    which shows them, an aborted snapshot at the head of a cut partition would be
//    taken for committed.
//
// Finish() returns the newest usable snapshot and the batches after it, or an error
// when batches between them are missing (the changelog lost records, for instance
// to the embedded cluster's retention), since restoring then could not be exact.
// One loss Finish cannot see: a partition whose every record was deleted (time
// retention of an idle shard, DeleteRecords) reads as a new shard's empty one.
// CheckStart, told where the partition's log begins, tells the two apart.
//
// Memory: kept with Keep::kEverything, a builder holds every batch and snapshot of
// the lineage until Finish. With Keep::kFromNewestSnapshot it lets go of what a
// complete, usable snapshot makes unnecessary (the batches up to it, older
// snapshots) as soon as that snapshot is in, so a restore that streams the partition
// holds about one snapshot and the batches after it. Should a later record cut the
// lineage back before that snapshot (a claim continuing from an earlier batch: an
// aborted transaction that a reader could see, on the embedded cluster), what was
// let go of is needed again: needs_full_read() turns true and Finish fails; read the
// partition again with Keep::kEverything.
//
// Thread-safety: one builder per restore, on the restoring thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "processor/base/result.h"
#include "processor/changelog/changelog_record.h"
#include "processor/changelog/claim_rule.h"

namespace oncecount::changelog {

struct RestorePlan {
  Epoch epoch;                          // the newest epoch seen; a new claim uses its Next()
  uint64_t claim = 0;                   // the id of the claim that holds it (0: unknown)
  Seq last_seq;                         // the lineage's last batch (0: empty)
  std::optional<std::string> snapshot;  // the state after batch snapshot_seq
  Seq snapshot_seq;
  std::vector<BatchRecord> batches;  // snapshot_seq + 1 .. last_seq, in order
  uint64_t ignored_records = 0;      // zombie, superseded or undecodable records
  // Of those, the records that did not decode (a bad checksum, a format newer than
  // this release's, truncated bytes): unlike a zombie's, they may have held the
  // lineage's newest batches, so a restorer says so.
  uint64_t unreadable_records = 0;
  // The id hash key of the last claim that counted (every claim of a shard carries
  // the same); nullopt when it holds none. A restore adds its own claim before
  // Finish, so it asks LineageBuilder::hash_key() first.
  std::optional<uint64_t> hash_key;
  // The consumer group of the newest epoch: from its claim, or, once retention
  // removed that, from its snapshots; empty when none names it (records before
  // format 6, or only batches of it left). Like hash_key, asked of the builder before
  // a restore adds its own claim.
  std::string group;
};

// What a restorer logs when a plan skipped unreadable records (a warning: the
// state may be older than the changelog's newest batches, and the input is counted
// again from the state's position, so counts stay exact; dead letters may be
// written again).
std::string UnreadableRecordsWarning(uint64_t unreadable_records);

class LineageBuilder {
 public:
  enum class Keep : uint8_t { kEverything, kFromNewestSnapshot };

  explicit LineageBuilder(Keep keep = Keep::kEverything) : keep_(keep) {}

  void Add(std::string_view encoded);  // decodes, counts undecodable records as ignored
  void Add(Record record);
  base::Result<RestorePlan> Finish() &&;
  // The id hash key of the last claim that counted so far (RestorePlan::hash_key).
  std::optional<uint64_t> hash_key() const { return claims_.hash_key(); }
  // The consumer group of the last claim that counted so far (RestorePlan::group).
  const std::string& group() const { return claims_.group(); }

  // After every record from the partition's log start was added: refuses (kCorrupt)
  // a partition that lost records (log start above 0) when nothing read claims the
  // shard or holds one of its batches. A lineage may begin after deleted records
  // only with what a restore can continue from: a claim, a batch, a snapshot's
  // batch; whatever is missing between them, Finish reports.
  base::Status CheckStart(base::Offset log_start) const;

  // See "Memory" above.
  bool needs_full_read() const { return needs_full_read_; }
  // Whether a new claim continuing from `base` (the next epoch's, added after every
  // record read) would turn needs_full_read() true: a restorer that claims from its
  // own last commit (after its aborted attempt) asks before it stops reading.
  bool ClaimWouldNeedFullRead(Seq base) const {
    return CutsBackBeforeKeptSnapshot(base, claims_.epoch().Next());
  }
  size_t held_batches() const { return chain_.size(); }
  size_t held_snapshots() const { return snapshots_.size(); }

  // What a claimer needs before it writes its claim: the newest epoch seen and the
  // lineage's last batch so far.
  Epoch epoch() const { return claims_.epoch(); }
  Seq last_seq() const;

 private:
  struct Snapshot {
    Epoch epoch;
    Seq seq;
    uint64_t claim = 0;
    uint32_t count = 0;
    std::string group;  // of its claim (SnapshotChunk::group)
    // Its chunks, joined as they arrive: each record is let go of at once, and a
    // snapshot of tens of MiB is not held twice, as chunks and joined, at the restore's
    // peak (docs/BENCHMARKS.md, "Restore memory").
    std::string bytes;
    uint32_t received = 0;  // chunks
    bool usable = true;
    bool complete() const { return received == count; }
  };
  void OnBatch(BatchRecord batch);
  void OnClaim(const ClaimRecord& claim);
  void OnChunk(SnapshotChunk chunk);
  void DropAfter(Seq seq, Epoch older_than_epoch);
  bool CutsBackBeforeKeptSnapshot(Seq seq, Epoch older_than_epoch) const {
    return seq < kept_snapshot_seq_ && kept_snapshot_epoch_ < older_than_epoch;
  }
  void LetGoBeforeNewestSnapshot();

  Keep keep_;
  bool needs_full_read_ = false;
  // The snapshot the builder let go of everything before (kFromNewestSnapshot).
  Seq kept_snapshot_seq_;  // 0: none
  Epoch kept_snapshot_epoch_;
  // The snapshot that stands for its deleted batch (see the rule above); 0: none.
  Seq head_snapshot_seq_;
  Epoch head_snapshot_epoch_;
  ClaimRule claims_;
  Seq claimed_base_;
  std::map<Seq, BatchRecord> chain_;  // by seq
  std::vector<Snapshot> snapshots_;   // in log order; the last may be partial
  uint64_t ignored_ = 0;
  uint64_t unreadable_ = 0;
  std::optional<uint16_t> newer_format_;  // of a record a newer release wrote
};

}  // namespace oncecount::changelog
