// ShardState: one shard's live state — its dedup filter, its counters, its input
// position and statistics — and the changelog batch it is building since the last
// commit.
//
// An active owner feeds input messages to Apply (or ApplyAll) and, at each commit,
// seals the pending batch (Seal), writes it in the commit's transaction and calls
// MarkCommitted once the transaction is committed. Applying may go on while the
// sealed batch is in flight: it builds the next batch (at most one batch is in
// flight). A restoring owner or a standby rebuilds the same state from a snapshot
// (FromSnapshot) and the batches after it (Replay): filter calls are replayed in the
// same order with the same times, so the filter is bit-identical (equal Digest) at
// the same changelog position.
//
// After an aborted transaction the state is ahead of the changelog; the owner
// throws it away and restores again.
//
// Thread-safety: owned by one thread (the shard's owner); publish a ShardView for
// other threads.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "processor/changelog/changelog_record.h"
#include "processor/event/increment_event.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/filter_factory.h"
#include "processor/filter/result.h"
#include "processor/shard/shard_view.h"

namespace oncecount::shard {

// Offsets as Kafka counts them; kUnknownOffset means "from the partition's start".
inline constexpr int64_t kUnknownOffset = -2;

struct InputMessage {
  int64_t offset = 0;
  std::optional<std::string_view> key;  // nullopt: the message has no key
  std::string_view value;
};

enum class Outcome : uint8_t { kApplied, kDuplicate, kDeadLetter };

struct Decision {
  Outcome outcome = Outcome::kApplied;
  event::DlqReason reason = event::DlqReason::kMissingKey;  // when kDeadLetter
};

class ShardState {
 public:
  static filter::Result<std::unique_ptr<ShardState>> Create(int32_t partition,
                                                            const filter::DedupSpec& spec,
                                                            filter::Millis now);
  // The state a snapshot (EncodeSnapshot) describes; checks version and checksum.
  static filter::Result<std::unique_ptr<ShardState>> FromSnapshot(std::string_view bytes);

  // Applies one input message at wall-clock time `now` (ms since the epoch).
  Decision Apply(const InputMessage& message, filter::Millis now);
  // Applies messages in order, all at time `now`, exactly as Apply one by one would
  // (same decisions, same filter calls), but tests the filter in one batch so that
  // its memory accesses overlap. `decisions` has one entry per message.
  void ApplyAll(std::span<const InputMessage> messages, filter::Millis now,
                std::span<Decision> decisions);

  // The batch of everything applied since the last seal, as changelog batch
  // `sealed_seq() + 1` of `epoch`; nullopt when nothing was applied.
  std::optional<changelog::BatchRecord> PendingBatch(uint64_t epoch) const;
  // How many filter calls the pending batch holds (to bound the batch's size).
  size_t pending_events() const { return pending_events_; }
  // Ends the pending batch: returns it (as PendingBatch would, stamped with the
  // owner's wall clock `sealed_at_ms`) and makes it the batch in flight; later
  // applies start the next batch. Nullopt, and nothing changes, when nothing was
  // applied. Call only while no batch is in flight.
  std::optional<changelog::BatchRecord> Seal(uint64_t epoch, int64_t sealed_at_ms = 0);
  bool has_batch_in_flight() const { return in_flight_; }
  // The batch in flight is committed: it becomes part of the committed state. With
  // nothing in flight, seals the pending batch first and commits it (one step, for
  // owners that do not apply while committing).
  void MarkCommitted(uint64_t epoch);

  // Replays a committed batch of the changelog (restore and standbys).
  void Replay(const changelog::BatchRecord& batch);
  // A new owner's claim: later batches and snapshots carry its epoch and id.
  void SetClaim(uint64_t epoch, uint64_t claim) {
    epoch_ = epoch;
    claim_ = claim;
  }
  // Drops the filter and keeps the counters, position and statistics: a replica that
  // only answers queries. Later batches replay their counters alone; such a state
  // can no longer become an active shard.
  void ForgetFilter();
  bool forgot_filter() const { return forgot_filter_; }

  // The whole state as of everything applied (committed, in flight and pending), in
  // the snapshot format: written in the same transaction as the newest of those
  // batches, it stands for that batch's seq. Take it right after Seal for the batch
  // being committed.
  std::string EncodeSnapshot(uint64_t epoch) const;

  int32_t partition() const { return partition_; }
  int64_t position() const { return position_; }  // next input offset to apply
  uint64_t epoch() const { return epoch_; }
  uint64_t claim() const { return claim_; }  // the id of the claim it runs under
  uint64_t committed_seq() const { return committed_seq_; }
  // The last batch sealed: committed_seq() + 1 while a batch is in flight.
  uint64_t sealed_seq() const { return committed_seq_ + (in_flight_ ? 1 : 0); }
  const changelog::ShardStats& stats() const { return stats_; }
  const filter::DedupFilter& filter() const { return *filter_; }
  const std::unordered_map<std::string, int64_t>& counters() const { return counters_; }

  // A view of the state as of the last seal (call with no pending batch: right after
  // Seal, to publish once that batch is committed, or when idle); `base` supplies
  // what the owner knows beyond the state (role, phase, high watermark, transaction
  // counts, target FPP). kReuse keeps base's filter summary, digest and digest_seq
  // instead of computing them again (a pass over every filter bit).
  enum class FilterDetail : uint8_t { kRefresh, kReuse };
  std::shared_ptr<const ShardView> MakeView(ShardView base, int64_t now_ms,
                                            FilterDetail detail = FilterDetail::kRefresh) const;

 private:
  ShardState(int32_t partition, std::unique_ptr<filter::DedupFilter> filter);

  // Starts a new filter segment when time moved since the last one.
  void AdvanceFilter(filter::Millis now);
  // The first steps of Apply: position, parsing, the id's hash. Returns the hash of
  // an event to test, or nullopt with `decision` set to its dead-letter outcome.
  std::optional<filter::IdHash> Admit(const InputMessage& message, event::IncrementEvent& event,
                                      Decision& decision);
  // The last steps: statistics and the counter, given the filter's verdict.
  Decision Conclude(event::IncrementEvent& event, filter::Verdict verdict);

  int32_t partition_;
  std::unique_ptr<filter::DedupFilter> filter_;
  event::EventParser parser_;
  std::unordered_map<std::string, int64_t> counters_;
  int64_t position_ = kUnknownOffset;
  uint64_t epoch_ = 0;
  uint64_t claim_ = 0;
  uint64_t committed_seq_ = 0;
  changelog::ShardStats stats_;

  // The batch in flight: sealed, not yet committed.
  bool in_flight_ = false;
  changelog::ShardStats in_flight_stats_;

  // Since the last seal.
  int64_t pending_from_ = kUnknownOffset;
  std::vector<changelog::FilterSegment> pending_segments_;
  std::unordered_set<std::string> pending_counters_;
  changelog::ShardStats pending_stats_;
  size_t pending_events_ = 0;
  bool has_pending_ = false;

  bool forgot_filter_ = false;

  // ApplyAll's scratch space, kept between calls.
  std::vector<event::IncrementEvent> scratch_events_;
  std::vector<filter::IdHash> scratch_hashes_;
  std::vector<filter::Verdict> scratch_verdicts_;
  std::vector<size_t> scratch_index_;
};

}  // namespace oncecount::shard
