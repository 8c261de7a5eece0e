// ShardState: one shard's live state — its dedup filter, its counters, its input
// position and statistics — and the changelog batch it is building since the last
// commit.
//
// An active owner feeds input messages to Apply (or ApplyAll) and, at each commit,
// seals the pending batches (Seal), writes them in the commit's transaction and
// calls MarkCommitted once the transaction is committed. Applying may go on while
// the sealed batches are in flight: it builds the next ones (at most one seal is in
// flight). A restoring owner or a standby rebuilds the same state from a snapshot
// (FromSnapshot) and the batches after it (Replay): filter calls are replayed in the
// same order with the same times, so the filter is bit-identical (equal Digest) at
// the same changelog position.
//
// Batches are bounded in bytes (Rules::max_record_bytes): when the next event could
// take the pending batch over the limit, the batch is cut there and a new one
// begins, so one commit may carry several consecutive batches. Each is a whole
// batch (its input range, its filter calls, its counters' values at its end), so
// readers need not know they were committed together.
//
// Time is event time: the filter's clock is the shard's clock, the largest Kafka
// record timestamp applied so far, never moving back. A timestamp further ahead of
// the wall clock than Rules::max_clock_ahead (a producer with a skewed clock) does
// not move it; such records are counted, as are records older than the clock by
// more than Rules::late_after (late: outside the guarantee, SPEC §2.1), which
// Rules::late_records applies or dead-letters (late_policy.h). The clock of each
// filter call is recorded in the batch, so replays reach the same filter, and the
// clock itself is in the snapshot, so a restored shard judges lateness as its last
// owner did.
//
// After an aborted transaction the state is ahead of the changelog; the owner
// throws it away and restores again.
//
// Thread-safety: owned by one thread (the shard's owner); publish a ShardView for
// other threads.
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "processor/base/result.h"
#include "processor/changelog/changelog_record.h"
#include "processor/event/increment_event.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/filter_factory.h"
#include "processor/shard/counter_table.h"
#include "processor/shard/late_policy.h"
#include "processor/shard/shard_view.h"

namespace oncecount::shard {

// Offsets as Kafka counts them; kUnknownOffset means "from the partition's start".
inline constexpr base::Offset kUnknownOffset{-2};

struct InputMessage {
  base::Offset offset;
  std::optional<std::string_view> key;  // nullopt: the message has no key
  std::string_view value;
  int64_t timestamp_ms = -1;  // the Kafka record's timestamp; -1: none (the shard's clock is used)
};

// What the changelog topic takes, as the cluster tells it (DescribeConfigs answers
// in the background, and may change while the service runs) and as refusals taught
// the instance: it reaches running shards as well as those adopted after it.
struct ChangelogLimits {
  size_t max_record_bytes = changelog::kMaxRecordBytes;
  size_t retention_bytes = 0;  // of one partition; 0: unknown or unbounded
  bool operator==(const ChangelogLimits&) const = default;
};

// How an active owner builds batches and reads record timestamps.
struct ShardRules {
  size_t max_record_bytes = changelog::kMaxRecordBytes;  // at least kMinRecordBytes
  filter::Millis max_clock_ahead{1000};
  // Lateness past which a record is counted as late; none: never counted.
  std::optional<filter::Millis> late_after{};
  // dedup.window_ms, the window in record time. With late_after, the filter must hold
  // this plus late_after; set_rules lowers late_after to what the shard's filter holds
  // beyond it (a filter restored from a state made under a smaller tolerance or
  // window). None: late_after is taken as given.
  std::optional<filter::Millis> record_window{};
  LatePolicy late_records = LatePolicy::kApply;
  // How many bytes a changelog partition keeps (0: unknown or unbounded); the owner
  // times its snapshots by it (snapshot_cadence.h).
  size_t changelog_retention_bytes = 0;
  // Set by set_rules when the shard's filter was made for a shorter window than
  // record_window (dedup.window_ms raised since): how much of it the filter holds.
  // A retry later than that after its first copy may be counted twice, and no rule
  // of lateness can catch it; the shard says so (ShardView::record_window_held_ms).
  std::optional<filter::Millis> record_window_held{};
  // dedup.mode is not none: a shard whose filter keeps no ids (made under none) then
  // holds no window, and says so.
  bool dedups = true;
  // dedup.max_filter_mib bounds the filters (the service always sets it): a filter
  // without a bound, read from a state written before filters had one that held more
  // than this bound already (filter::DecodeLimits), then says so.
  bool bounds_filters = false;
  // Set by set_rules: bounds_filters, and the shard's filter grows without a bound
  // (ShardView::filter_unbounded).
  bool filter_unbounded = false;
};

// The shard's clock and what its rules saw. The clock is in the snapshot (and each
// batch's filter calls); the counts are kept in memory only and restart with the
// owner (late records dead-lettered are in the changelog's statistics too).
struct ClockStats {
  int64_t clock_ms = 0;        // the largest timestamp applied (0: none yet)
  uint64_t ahead_of_wall = 0;  // records that did not move the clock: too far ahead
  uint64_t late = 0;           // records older than the clock by more than late_after
  // Records without a timestamp: they took the clock as it was (the wall clock would
  // move it to now, and an old backlog's window would be forgotten at once).
  uint64_t without_timestamp = 0;
};

enum class Outcome : uint8_t { kApplied, kDuplicate, kDeadLetter };

struct Decision {
  Outcome outcome = Outcome::kApplied;
  event::DlqReason reason = event::DlqReason::kMissingKey;  // when kDeadLetter
};

class ShardState {
 public:
  static base::Result<std::unique_ptr<ShardState>> Create(base::Partition partition,
                                                          const filter::DedupSpec& spec,
                                                          filter::Millis now);
  // A fresh state around `filter`, for tests that make a filter fail as a real one
  // can (an allocation it cannot get) and for tools that build a filter themselves.
  static std::unique_ptr<ShardState> WithFilter(base::Partition partition,
                                                std::unique_ptr<filter::DedupFilter> filter) {
    return std::unique_ptr<ShardState>(new ShardState(partition, std::move(filter)));
  }
  // The state a snapshot (EncodeSnapshot) describes; checks version and checksum.
  // `limits`: what its filter may grow to (filter::DecodeLimitsFor the service's
  // dedup settings): a snapshot's bytes come from the changelog or a checkpoint file.
  static base::Result<std::unique_ptr<ShardState>> FromSnapshot(std::string_view bytes,
                                                                const filter::DecodeLimits& limits);
  // The same, letting go of `bytes` once its body is decompressed: a filter near its
  // bound has a snapshot of tens of MiB, which need not stay beside the decoded state
  // at a restore's peak.
  static base::Result<std::unique_ptr<ShardState>> FromSnapshot(std::string&& bytes,
                                                                const filter::DecodeLimits& limits);

  // The rules of an active owner (the defaults until set).
  void set_rules(const ShardRules& rules);
  // The rules' changelog limits only (the rest as set): for a running shard.
  void set_changelog_limits(const ChangelogLimits& limits);
  const ShardRules& rules() const { return rules_; }

  // Applies one input message; `wall` is the owner's wall clock (ms since the epoch),
  // which bounds how far a record's timestamp may move the shard's clock.
  Decision Apply(const InputMessage& message, filter::Millis wall);
  // Applies messages in order exactly as Apply one by one would (same decisions,
  // same filter calls, same batches), but tests the filter in batches so that its
  // memory accesses overlap. `decisions` has one entry per message.
  void ApplyAll(std::span<const InputMessage> messages, filter::Millis wall,
                std::span<Decision> decisions);

  // The batches of everything applied since the last seal, as changelog batches
  // `sealed_seq() + 1`, `+ 2`... of `epoch`; empty when nothing was applied.
  std::vector<changelog::BatchRecord> PendingBatches(base::Epoch epoch) const;
  // How many filter calls the pending batches hold.
  size_t pending_events() const { return pending_events_; }
  // Whether anything was applied since the last seal: filter calls, and also dead
  // letters, which move the position without one.
  bool has_pending() const { return has_pending_ || !closed_batches_.empty(); }
  // Ends the pending batches: returns them (as PendingBatches would, stamped with the
  // owner's wall clock `sealed_at_ms`) and puts them in flight; later applies start
  // the next batch. Empty, and nothing changes, when nothing was applied. Call only
  // while nothing is in flight.
  std::vector<changelog::BatchRecord> Seal(base::Epoch epoch, int64_t sealed_at_ms = 0);
  bool has_batch_in_flight() const { return in_flight_batches_ > 0; }
  // The batches in flight are committed: they become part of the committed state.
  // With nothing in flight, seals the pending batches first and commits them (one
  // step, for owners that do not apply while committing).
  void MarkCommitted(base::Epoch epoch);

  // Replays a committed batch of the changelog (restore and standbys).
  void Replay(const changelog::BatchRecord& batch);
  // A new owner's claim: later batches and snapshots carry its epoch and id. Returns
  // the id hash key the claim carries, which the state hashes ids with from now on:
  // the key its ids were hashed with (from its snapshot, the batches it replayed or
  // the claims read before), or `fresh_key` (random, non-zero, drawn by the claimer)
  // when none ever was — the shard's first claim. Check hash_key_conflict() first.
  filter::IdHashKey SetClaim(base::Epoch epoch, uint64_t claim, filter::IdHashKey fresh_key) {
    epoch_ = epoch;
    claim_ = claim;
    if (!hash_key_) hash_key_ = fresh_key;
    return *hash_key_;
  }
  // The key of a claim read from the changelog (a restore's or a follower's): the
  // key the shard's ids are hashed with. Every claim and batch of a shard carries the
  // same one; a key that differs from the one the state knows is a conflict.
  void AdoptHashKey(filter::IdHashKey key) {
    if (!hash_key_) {
      hash_key_ = key;
    } else if (*hash_key_ != key && !conflicting_key_) {
      conflicting_key_ = key;
    }
  }
  // A key read (a claim's, a replayed batch's) that differs from the state's: its
  // changelog is corrupt or was written by a defective owner, and nobody can tell
  // which hashes its filter holds. Such a state must not be claimed.
  std::optional<filter::IdHashKey> hash_key_conflict() const { return conflicting_key_; }
  // nullopt: not known yet (a state made by Create that no claim has reached).
  std::optional<filter::IdHashKey> hash_key() const { return hash_key_; }
  // Drops the filter and keeps the counters, position and statistics: a replica that
  // only answers queries. Later batches replay their counters alone; such a state
  // can no longer become an active shard.
  void ForgetFilter();
  bool forgot_filter() const { return forgot_filter_; }

  // The whole state as of everything applied (committed, in flight and pending), in
  // the snapshot format: written in the same transaction as the newest of those
  // batches (or alone, after it committed), it stands for that batch's seq. Take it
  // right after Seal for the batch being committed.
  std::string EncodeSnapshot(base::Epoch epoch) const;

  base::Partition partition() const { return partition_; }
  base::Offset position() const { return position_; }  // next input offset to apply
  base::Epoch epoch() const { return epoch_; }
  uint64_t claim() const { return claim_; }  // the id of the claim it runs under
  base::Seq committed_seq() const { return committed_seq_; }
  // The last batch sealed: committed_seq() plus the batches in flight.
  base::Seq sealed_seq() const { return committed_seq_.Plus(in_flight_batches_); }
  const changelog::ShardStats& stats() const { return stats_; }
  const ClockStats& clock() const { return clock_; }
  const filter::DedupFilter& filter() const { return *filter_; }
  const CounterTable& counters() const { return counters_; }

  // A view of the state as of the last seal (call with no pending batch: right after
  // Seal, to publish once that batch is committed, or when idle); `base` supplies
  // what the owner knows beyond the state (role, phase, high watermark, transaction
  // counts, target FPP). kReuse keeps base's filter summary, digest and digest_seq
  // instead of computing them again (a pass over every filter bit).
  enum class FilterDetail : uint8_t { kRefresh, kReuse };
  // kReuse: `base` carries the counters, recent counters and counters_behind_ms of an
  // earlier view of this shard, and the changes since stay noted for the next kRefresh.
  enum class CounterDetail : uint8_t { kRefresh, kReuse };
  std::shared_ptr<const ShardView> MakeView(ShardView base, int64_t now_ms,
                                            FilterDetail detail = FilterDetail::kRefresh,
                                            CounterDetail counters = CounterDetail::kRefresh) const;

 private:
  // The body of a snapshot, after its envelope (magic, version, codec, checksum).
  // Checks a snapshot's magic, version and checksum and gives its body: decompressed
  // into `unpacked`, or, for a plain (version 1) snapshot, a view of `bytes`.
  static base::Result<std::string_view> SnapshotBody(std::string_view bytes, uint16_t& version,
                                                     std::string& unpacked);
  static base::Result<std::unique_ptr<ShardState>> FromSnapshotBody(
      std::string_view body, uint16_t version, const filter::DecodeLimits& limits);
  ShardState(base::Partition partition, std::unique_ptr<filter::DedupFilter> filter);

  // The shard's clock for a record (and the clock statistics it changes); `late` when
  // the record is late (SPEC §2.1).
  struct EventClock {
    filter::Millis time;
    bool late = false;
  };
  EventClock EventTime(int64_t timestamp_ms, filter::Millis wall);
  // The record is late and the rules dead-letter late records: counts it and returns
  // the dead-letter decision; nullopt when the record goes on to the filter.
  std::optional<Decision> RefuseLate(const EventClock& at);
  // Starts a new filter segment when time moved since the last one.
  void AdvanceFilter(filter::Millis now);
  // Cuts the open batch when `events` more events might not fit under the limit;
  // returns how many events fit (at least one).
  size_t MakeRoomFor(size_t events);
  // Closes the open batch (a later one begins with the next event).
  void CutBatch();
  changelog::BatchRecord OpenBatch() const;
  changelog::ShardStats PendingStats() const;
  // Remembers that a counter changed since the last view.
  void NoteChanged(CounterTable::Index counter);
  // Puts the last kRecentCounters of `changed` (a batch's counters, in order) at the
  // front of the recently changed counters.
  void NoteRecent(std::span<const CounterTable::Index> changed);
  std::shared_ptr<const CounterSnapshot> CounterView() const;
  // Applies messages that fit in the open batch.
  void ApplyFitting(std::span<const InputMessage> messages, filter::Millis wall,
                    std::span<Decision> decisions);
  // The first steps of Apply: position, parsing, the id's hash. Returns the hash of
  // an event to test, or nullopt with `decision` set to its dead-letter outcome.
  std::optional<filter::IdHash> Admit(const InputMessage& message, event::IncrementEvent& event,
                                      Decision& decision);
  // The last steps: statistics and the counter, given the filter's verdict.
  // `counter_hash`: CounterTable::Hash of the event's counter name.
  Decision Conclude(event::IncrementEvent& event, uint64_t counter_hash, filter::Verdict verdict);

  base::Partition partition_;
  std::unique_ptr<filter::DedupFilter> filter_;
  event::EventParser parser_;
  // An entry's mark is the batch_mark_ of the last open batch that touched it.
  CounterTable counters_;
  base::Offset position_ = kUnknownOffset;
  base::Epoch epoch_;
  uint64_t claim_ = 0;
  std::optional<filter::IdHashKey> hash_key_;
  std::optional<filter::IdHashKey> conflicting_key_;  // the first that differed
  base::Seq committed_seq_;
  changelog::ShardStats stats_;

  ShardRules rules_;
  ClockStats clock_;

  // The batches in flight: sealed, not yet committed.
  uint64_t in_flight_batches_ = 0;
  changelog::ShardStats in_flight_stats_;

  // Since the last seal: batches already cut, then the open batch.
  std::vector<changelog::BatchRecord> closed_batches_;
  base::Offset pending_from_ = kUnknownOffset;
  std::vector<changelog::FilterSegment> pending_segments_;
  std::vector<CounterTable::Index> pending_counters_;  // each once, first touch first
  uint32_t batch_mark_ = 1;                            // the open batch's
  size_t pending_new_names_ = 0;                       // counters the open batch inserted
  changelog::ShardStats pending_stats_;
  size_t pending_bytes_ = changelog::kBatchRecordFixedBytes;  // the open batch, encoded
  size_t pending_events_ = 0;
  bool has_pending_ = false;  // the open batch holds something

  bool forgot_filter_ = false;

  // The counters of the last view and the names changed since, from which the next
  // view is made (CounterView); null: the next view copies every counter. A state
  // restored from a snapshot starts with the snapshot's counters (FromSnapshot). Owner
  // thread only; MakeView is const for its callers, so these are mutable.
  mutable std::shared_ptr<const CounterSnapshot> view_counters_;
  mutable std::vector<CounterTable::Index> view_dirty_;
  mutable size_t view_new_names_ = 0;  // how many of view_dirty_ the last view lacks
  // The counters changed most recently (newest first, each once, at most
  // kRecentCounters) and the names the last view got of them.
  std::deque<CounterTable::Index> recent_;
  mutable bool recent_changed_ = false;
  mutable std::shared_ptr<const std::vector<std::string>> recent_view_;

  // ApplyAll's scratch space, kept between calls.
  std::vector<event::IncrementEvent> scratch_events_;
  std::vector<filter::IdHash> scratch_hashes_;
  std::vector<uint64_t> scratch_counter_hashes_;     // by message, as scratch_events_
  std::vector<CounterTable::Index> scratch_recent_;  // Replay's counters, for NoteRecent
  std::vector<filter::Millis> scratch_times_;
  std::vector<filter::Verdict> scratch_verdicts_;
  std::vector<size_t> scratch_index_;
};

}  // namespace oncecount::shard
