#include "processor/shard/shard_state.h"

#include <xxhash.h>

#include <algorithm>

#include "processor/filter/byte_io.h"
#include "processor/filter/no_dedup.h"
#include "processor/filter/state_codec.h"

namespace oncecount::shard {
namespace {

// Snapshot layout (little-endian): magic "OCSS", u16 version, u32 partition,
// u64 epoch, u64 committed seq, i64 position, stats (3 + 7 u64), u32 counter count,
// counters (u32-length name, i64 value) sorted by name, u32-length filter state
// (state_codec.h), then XXH3-64 of everything before it.
constexpr char kSnapshotMagic[4] = {'O', 'C', 'S', 'S'};
constexpr uint16_t kSnapshotVersion = 1;
constexpr size_t kMaxFilterStateBytes = size_t{1} << 31;

}  // namespace

ShardState::ShardState(int32_t partition, std::unique_ptr<filter::DedupFilter> filter)
    : partition_(partition), filter_(std::move(filter)) {}

filter::Result<std::unique_ptr<ShardState>> ShardState::Create(int32_t partition,
                                                               const filter::DedupSpec& spec,
                                                               filter::Millis now) {
  auto made = filter::MakeDedupFilter(spec, now);
  if (!made) return filter::Error{made.error()};
  return std::unique_ptr<ShardState>(new ShardState(partition, std::move(made.value())));
}

void ShardState::AdvanceFilter(filter::Millis now) {
  if (!pending_segments_.empty() && pending_segments_.back().time_ms == now.count()) return;
  filter_->AdvanceTo(now);
  pending_segments_.push_back({now.count(), {}});
}

std::optional<filter::IdHash> ShardState::Admit(const InputMessage& message,
                                                event::IncrementEvent& event, Decision& decision) {
  if (!has_pending_) {
    pending_from_ = message.offset;
    has_pending_ = true;
  }
  position_ = message.offset + 1;
  event::ParseResult parsed = parser_.Parse(message.key, message.value);
  if (const auto* reason = std::get_if<event::DlqReason>(&parsed)) {
    ++pending_stats_.dead_lettered[static_cast<size_t>(*reason)];
    decision = {Outcome::kDeadLetter, *reason};
    return std::nullopt;
  }
  event = std::move(std::get<event::IncrementEvent>(parsed));
  return filter::HashIdempotencyId(*message.key);
}

Decision ShardState::Conclude(event::IncrementEvent& event, filter::Verdict verdict) {
  ++pending_events_;
  if (filter::IsDuplicate(verdict)) {
    ++pending_stats_.duplicates;
    if (verdict == filter::Verdict::kDuplicateNearEdge) ++pending_stats_.near_edge_duplicates;
    return {Outcome::kDuplicate, {}};
  }
  auto [it, inserted] = counters_.try_emplace(std::move(event.counter), 0);
  const std::optional<int64_t> sum = event::AddWithoutOverflow(it->second, event.delta);
  if (!sum) {
    if (inserted) counters_.erase(it);
    ++pending_stats_.dead_lettered[static_cast<size_t>(event::DlqReason::kOverflow)];
    return {Outcome::kDeadLetter, event::DlqReason::kOverflow};
  }
  it->second = *sum;
  pending_counters_.insert(it->first);
  ++pending_stats_.applied;
  return {Outcome::kApplied, {}};
}

Decision ShardState::Apply(const InputMessage& message, filter::Millis now) {
  event::IncrementEvent event;
  Decision decision;
  const std::optional<filter::IdHash> hash = Admit(message, event, decision);
  if (!hash) return decision;
  AdvanceFilter(now);
  const filter::Verdict verdict = filter_->TestAndInsert(*hash);
  pending_segments_.back().hashes.push_back(hash->value);
  return Conclude(event, verdict);
}

void ShardState::ApplyAll(std::span<const InputMessage> messages, filter::Millis now,
                          std::span<Decision> decisions) {
  scratch_events_.resize(messages.size());
  scratch_hashes_.clear();
  scratch_index_.clear();
  for (size_t i = 0; i < messages.size(); ++i) {
    decisions[i] = {};
    if (const auto hash = Admit(messages[i], scratch_events_[i], decisions[i])) {
      scratch_hashes_.push_back(*hash);
      scratch_index_.push_back(i);
    }
  }
  if (scratch_hashes_.empty()) return;
  AdvanceFilter(now);
  scratch_verdicts_.resize(scratch_hashes_.size());
  filter_->TestAndInsertBatch(scratch_hashes_, scratch_verdicts_);
  std::vector<uint64_t>& recorded = pending_segments_.back().hashes;
  for (size_t j = 0; j < scratch_hashes_.size(); ++j) {
    recorded.push_back(scratch_hashes_[j].value);
    const size_t i = scratch_index_[j];
    decisions[i] = Conclude(scratch_events_[i], scratch_verdicts_[j]);
  }
}

std::optional<changelog::BatchRecord> ShardState::PendingBatch(uint64_t epoch) const {
  if (!has_pending_) return std::nullopt;
  changelog::BatchRecord batch;
  batch.partition = partition_;
  batch.epoch = epoch;
  batch.claim = claim_;
  batch.seq = sealed_seq() + 1;
  batch.input_from = pending_from_;
  batch.input_to = position_;
  batch.segments = pending_segments_;
  batch.counters.reserve(pending_counters_.size());
  for (const std::string& name : pending_counters_) {
    batch.counters.push_back({name, counters_.at(name)});
  }
  std::sort(batch.counters.begin(), batch.counters.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  batch.stats = pending_stats_;
  return batch;
}

std::optional<changelog::BatchRecord> ShardState::Seal(uint64_t epoch, int64_t sealed_at_ms) {
  std::optional<changelog::BatchRecord> batch = PendingBatch(epoch);
  if (!batch) return batch;
  batch->sealed_at_ms = sealed_at_ms;
  in_flight_ = true;
  in_flight_stats_ = pending_stats_;
  epoch_ = epoch;
  pending_segments_.clear();
  pending_counters_.clear();
  pending_stats_ = {};
  pending_events_ = 0;
  has_pending_ = false;
  return batch;
}

void ShardState::MarkCommitted(uint64_t epoch) {
  if (!in_flight_ && !Seal(epoch)) return;
  in_flight_ = false;
  ++committed_seq_;
  stats_.Add(in_flight_stats_);
  in_flight_stats_ = {};
}

void ShardState::Replay(const changelog::BatchRecord& batch) {
  for (const changelog::FilterSegment& segment : batch.segments) {
    filter_->AdvanceTo(filter::Millis{segment.time_ms});
    scratch_hashes_.resize(segment.hashes.size());
    for (size_t i = 0; i < segment.hashes.size(); ++i) {
      scratch_hashes_[i] = filter::IdHash{segment.hashes[i]};
    }
    scratch_verdicts_.resize(segment.hashes.size());
    filter_->TestAndInsertBatch(scratch_hashes_, scratch_verdicts_);
  }
  for (const changelog::CounterUpdate& c : batch.counters) counters_[c.name] = c.value;
  stats_.Add(batch.stats);
  position_ = batch.input_to;
  epoch_ = std::max(epoch_, batch.epoch);
  committed_seq_ = batch.seq;
}

void ShardState::ForgetFilter() {
  filter_ = std::make_unique<filter::NoDedup>();
  forgot_filter_ = true;
}

std::string ShardState::EncodeSnapshot(uint64_t epoch) const {
  changelog::ShardStats stats = stats_;
  stats.Add(in_flight_stats_);
  stats.Add(pending_stats_);
  std::string out;
  filter::ByteWriter w(out);
  for (char c : kSnapshotMagic) w.U8(static_cast<uint8_t>(c));
  w.U16(kSnapshotVersion);
  w.U32(static_cast<uint32_t>(partition_));
  w.U64(has_pending_ || in_flight_ ? epoch : epoch_);
  w.U64(sealed_seq() + (has_pending_ ? 1 : 0));
  w.I64(position_);
  w.U64(stats.applied);
  w.U64(stats.duplicates);
  w.U64(stats.near_edge_duplicates);
  for (uint64_t n : stats.dead_lettered) w.U64(n);
  std::vector<const std::pair<const std::string, int64_t>*> sorted;
  sorted.reserve(counters_.size());
  for (const auto& entry : counters_) sorted.push_back(&entry);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->first < b->first; });
  w.U32(static_cast<uint32_t>(sorted.size()));
  for (const auto* entry : sorted) {
    w.Bytes(entry->first);
    w.I64(entry->second);
  }
  std::string filter_state;
  filter_->Serialize(filter_state);
  w.Bytes(filter_state);
  w.U64(XXH3_64bits(out.data(), out.size()));
  return out;
}

filter::Result<std::unique_ptr<ShardState>> ShardState::FromSnapshot(std::string_view bytes) {
  if (bytes.size() < 4 + 8 || bytes.substr(0, 4) != std::string_view(kSnapshotMagic, 4)) {
    return filter::Error{"shard snapshot: bad magic"};
  }
  const std::string_view covered = bytes.substr(0, bytes.size() - 8);
  filter::ByteReader tail(bytes.substr(covered.size()));
  if (tail.U64() != XXH3_64bits(covered.data(), covered.size())) {
    return filter::Error{"shard snapshot: checksum mismatch"};
  }
  filter::ByteReader r(covered.substr(4));
  if (const uint16_t version = r.U16(); version != kSnapshotVersion) {
    return filter::Error{"shard snapshot: unsupported version " + std::to_string(version)};
  }
  const auto partition = static_cast<int32_t>(r.U32());
  const uint64_t epoch = r.U64();
  const uint64_t seq = r.U64();
  const int64_t position = r.I64();
  changelog::ShardStats stats;
  stats.applied = r.U64();
  stats.duplicates = r.U64();
  stats.near_edge_duplicates = r.U64();
  for (uint64_t& n : stats.dead_lettered) n = r.U64();
  const uint32_t count = r.U32();
  if (!r.ok() || count > r.remaining() / 12) return filter::Error{"shard snapshot: bad counters"};
  std::unordered_map<std::string, int64_t> counters;
  counters.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    std::string name(r.Bytes(event::kMaxCounterBytes));
    counters[std::move(name)] = r.I64();
  }
  const std::string_view filter_state = r.Bytes(kMaxFilterStateBytes);
  if (!r.done()) return filter::Error{"shard snapshot: truncated or trailing bytes"};
  auto decoded = filter::DecodeDedupFilter(filter_state);
  if (!decoded) return filter::Error{"shard snapshot: " + decoded.error()};
  std::unique_ptr<ShardState> state(new ShardState(partition, std::move(decoded.value())));
  state->epoch_ = epoch;
  state->committed_seq_ = seq;
  state->position_ = position;
  state->stats_ = stats;
  state->counters_ = std::move(counters);
  return state;
}

std::shared_ptr<const ShardView> ShardState::MakeView(ShardView base, int64_t now_ms,
                                                      FilterDetail detail) const {
  base.partition = partition_;
  base.input_offset = position_;
  base.epoch = epoch_;
  changelog::ShardStats stats = stats_;
  stats.Add(in_flight_stats_);
  base.changelog_seq = sealed_seq();
  base.events_applied = stats.applied;
  base.duplicates_dropped = stats.duplicates;
  base.near_edge_duplicates = stats.near_edge_duplicates;
  base.dead_lettered = stats.dead_lettered_total();
  base.dead_lettered_by_reason = stats.dead_lettered;
  if (detail == FilterDetail::kRefresh) {
    base.filter = filter_->Summary();
    base.digest = filter_->Digest();
    base.digest_seq = sealed_seq();
  }
  base.counters = std::make_shared<const CounterSnapshot>(CounterSnapshot::FromMap(counters_));
  base.published_at_ms = now_ms;
  return std::make_shared<const ShardView>(std::move(base));
}

}  // namespace oncecount::shard
