#include "processor/shard/shard_state.h"

#include <xxhash.h>
#include <zstd.h>

#include <algorithm>
#include <memory>
#include <new>

#include "processor/base/byte_io.h"
#include "processor/filter/no_dedup.h"
#include "processor/filter/state_codec.h"

namespace oncecount::shard {
namespace {

// Snapshot layout (little-endian): magic "OCSS", u16 version, the body, then XXH3-64
// of everything before it.
//  - version 1 (read): the body as is;
//  - versions 2, 3 (read) and 4 (written): u8 codec (1: zstd), u64 body length, the
//    compressed body. A filter far from full and counters with common prefixes
//    compress several times, which is what keeps a shard's snapshot inside a
//    changelog partition's retention (the embedded cluster keeps 5 MB of one).
//  - version 4 (written) adds the id hash key to the body.
// Body: u32 partition, u64 epoch, u64 committed seq, i64 position, (version 3 on) i64
// shard clock, (version 4) u64 id hash key, stats (3 + 8 u64; versions 1 and 2:
// 3 + 7, no `late`), u32 counter count, counters (u32-length name, i64 value) sorted
// by name, u32-length filter state (state_codec.h). A state from a version 1 or 2
// snapshot starts with clock 0: the next record or replayed batch sets it. One from
// versions 1 to 3 holds unkeyed hashes: its key is kUnkeyed.
constexpr char kSnapshotMagic[4] = {'O', 'C', 'S', 'S'};
constexpr uint16_t kPlainSnapshotVersion = 1;
constexpr uint16_t kClocklessSnapshotVersion = 2;
constexpr uint16_t kUnkeyedSnapshotVersion = 3;
constexpr uint16_t kSnapshotVersion = 4;
// Dead-letter reasons in the stats of versions 1 and 2 (no `late`).
constexpr size_t kClocklessSnapshotDlqReasons = 7;
constexpr uint8_t kZstdCodec = 1;
// Level 1: a 100 MB body compresses in a few hundred milliseconds on the worker thread.
constexpr int kZstdLevel = 1;
constexpr size_t kMaxFilterStateBytes = size_t{1} << 31;
constexpr size_t kMaxSnapshotBodyBytes = size_t{1} << 32;

// Decompresses one zstd frame of `size` bytes into `out`, growing it only as bytes
// come out: a frame's header may claim any size up to kMaxSnapshotBodyBytes, and
// memory must follow what the frame really holds, not what it claims.
bool Decompress(std::string_view packed, uint64_t size, std::string& out) {
  std::unique_ptr<ZSTD_DCtx, decltype(&ZSTD_freeDCtx)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!ctx) throw std::bad_alloc();
  ZSTD_inBuffer in{packed.data(), packed.size(), 0};
  constexpr uint64_t kStep = uint64_t{1} << 20;
  const uint64_t room = size + 1;  // one spare byte shows a frame longer than it claims
  size_t produced = 0;
  while (true) {
    if (produced == out.size()) {
      if (out.size() >= room) return false;
      out.resize(static_cast<size_t>(
          std::min<uint64_t>(room, out.size() + std::max<uint64_t>(kStep, out.size()))));
    }
    const size_t consumed = in.pos;
    ZSTD_outBuffer o{out.data(), out.size(), produced};
    const size_t left = ZSTD_decompressStream(ctx.get(), &o, &in);
    if (ZSTD_isError(left)) return false;
    const bool progressed = o.pos > produced || in.pos > consumed;
    produced = o.pos;
    if (left == 0) break;           // the frame is complete
    if (!progressed) return false;  // it needs input that is not there
  }
  out.resize(produced);
  return produced == size && in.pos == in.size;
}

}  // namespace

ShardState::ShardState(base::Partition partition, std::unique_ptr<filter::DedupFilter> filter)
    : partition_(partition), filter_(std::move(filter)) {}

base::Result<std::unique_ptr<ShardState>> ShardState::Create(base::Partition partition,
                                                             const filter::DedupSpec& spec,
                                                             filter::Millis now) {
  auto made = filter::MakeDedupFilter(spec, now);
  if (!made) return made.error();
  return std::unique_ptr<ShardState>(new ShardState(partition, std::move(made.value())));
}

void ShardState::set_changelog_limits(const ChangelogLimits& limits) {
  rules_.max_record_bytes =
      std::clamp(limits.max_record_bytes, changelog::kMinRecordBytes, changelog::kMaxRecordBytes);
  rules_.changelog_retention_bytes = limits.retention_bytes;
}

void ShardState::set_rules(const ShardRules& rules) {
  rules_ = rules;
  set_changelog_limits({rules.max_record_bytes, rules.changelog_retention_bytes});
  // SPEC §2.1 needs the filter to hold the window plus the tolerance. A filter made
  // under a smaller tolerance (or window) holds less, and only a new filter could hold
  // more: until then a record later than what it holds is late, whatever the
  // configured tolerance, or the first copy of its retry may be forgotten already.
  rules_.record_window_held.reset();
  const filter::FilterSummary summary = filter_->Summary();
  rules_.filter_unbounded = rules_.bounds_filters && summary.GrowsWithoutABound();
  if (!rules_.late_after || !rules_.record_window) return;
  if (summary.mode == filter::DedupMode::kNone) {
    // A filter that keeps no ids: nothing to hold, and lateness stays as configured.
    // Under a configuration that dedups (the shard was made under dedup.mode none),
    // it holds no window at all, and says so.
    if (rules_.dedups) rules_.record_window_held = filter::Millis{0};
    return;
  }
  const int64_t held = summary.window_ms_configured;  // -1: forever
  if (held < 0) return;
  const int64_t covers = held - rules_.record_window->count();
  // It holds the window and the tolerance: nothing to lower, nothing to say (with a
  // tolerance of 0, as for LogAppendTime input, exactly the window).
  if (covers >= rules_.late_after->count()) return;
  if (covers > 0) {
    rules_.late_after = std::min(*rules_.late_after, filter::Millis{covers});
  } else {
    // Not even the window itself: lowering the tolerance cannot make up for it (it
    // would only call every record behind the clock late). A retry up to the
    // tolerance behind the clock is still judged on time, so what is held in record
    // time is the filter's window less the tolerance. Said instead.
    rules_.record_window_held =
        filter::Millis{std::max<int64_t>(0, held - rules_.late_after->count())};
  }
}

ShardState::EventClock ShardState::EventTime(int64_t timestamp_ms, filter::Millis wall) {
  if (timestamp_ms < 0) {
    ++clock_.without_timestamp;
    return {filter::Millis{clock_.clock_ms}};
  }
  int64_t t = timestamp_ms;
  // Lateness is judged against the shard's clock, whatever the wall clock says: a
  // record late and also ahead of a wall clock that stepped back (NTP, a failover to
  // an instance whose clock is behind) is late all the same.
  bool late = false;
  if (rules_.late_after && clock_.clock_ms - t > rules_.late_after->count()) {
    ++clock_.late;
    late = true;
  }
  if (t - wall.count() > rules_.max_clock_ahead.count()) {
    ++clock_.ahead_of_wall;
    t = clock_.clock_ms;
  }
  clock_.clock_ms = std::max(clock_.clock_ms, t);
  return {filter::Millis{clock_.clock_ms}, late};
}

std::optional<Decision> ShardState::RefuseLate(const EventClock& at) {
  if (!at.late || rules_.late_records != LatePolicy::kDeadLetter) return std::nullopt;
  ++pending_stats_.dead_lettered[static_cast<size_t>(event::DlqReason::kLate)];
  return Decision{Outcome::kDeadLetter, event::DlqReason::kLate};
}

void ShardState::AdvanceFilter(filter::Millis now) {
  if (!pending_segments_.empty() && pending_segments_.back().time_ms == now.count()) return;
  filter_->AdvanceTo(now);
  pending_segments_.push_back({now.count(), {}});
  pending_bytes_ += changelog::kSegmentBytes;
}

size_t ShardState::MakeRoomFor(size_t events) {
  if (pending_bytes_ + changelog::kMaxEventBatchBytes > rules_.max_record_bytes) CutBatch();
  const size_t room = (rules_.max_record_bytes - pending_bytes_) / changelog::kMaxEventBatchBytes;
  return std::min(events, room);
}

void ShardState::NoteChanged(CounterTable::Index counter) {
  if (!view_counters_) return;
  // Past as many changes as counters, a whole new copy costs less than the updates.
  if (view_dirty_.size() >= counters_.size()) {
    view_counters_.reset();
    view_dirty_.clear();
    view_new_names_ = 0;
    return;
  }
  view_dirty_.push_back(counter);
}

void ShardState::NoteRecent(std::span<const CounterTable::Index> changed) {
  if (changed.empty()) return;
  const size_t from = changed.size() > kRecentCounters ? changed.size() - kRecentCounters : 0;
  for (size_t k = from; k < changed.size(); ++k) {
    const CounterTable::Index i = changed[k];
    if (const auto it = std::find(recent_.begin(), recent_.end(), i); it != recent_.end()) {
      recent_.erase(it);
    }
    recent_.push_front(i);
  }
  while (recent_.size() > kRecentCounters) recent_.pop_back();
  recent_changed_ = true;
}

std::shared_ptr<const CounterSnapshot> ShardState::CounterView() const {
  if (!view_counters_) {
    std::vector<CounterRef> all;
    all.reserve(counters_.size());
    for (const CounterTable::Entry& e : counters_) all.push_back({e.name, e.value});
    view_counters_ = std::make_shared<const CounterSnapshot>(CounterSnapshot::From(std::move(all)));
    view_new_names_ = 0;
  } else if (!view_dirty_.empty()) {
    std::vector<CounterRef> updates;
    updates.reserve(view_dirty_.size());
    for (const CounterTable::Index i : view_dirty_) {
      updates.push_back({counters_[i].name, counters_[i].value});
    }
    view_counters_ = std::make_shared<const CounterSnapshot>(
        view_counters_->With(std::move(updates), view_new_names_));
    view_new_names_ = 0;
  }
  view_dirty_.clear();
  return view_counters_;
}

void ShardState::CutBatch() {
  if (!has_pending_) return;
  closed_batches_.push_back(OpenBatch());
  for (const CounterTable::Index i : pending_counters_) NoteChanged(i);
  NoteRecent(pending_counters_);
  if (view_counters_) view_new_names_ += pending_new_names_;
  pending_new_names_ = 0;
  pending_segments_.clear();
  pending_counters_.clear();
  if (++batch_mark_ == 0) {  // wrapped: no entry may keep a mark the next batches use
    counters_.ClearMarks();
    batch_mark_ = 1;
  }
  pending_stats_ = {};
  pending_bytes_ = changelog::kBatchRecordFixedBytes;
  has_pending_ = false;
}

changelog::BatchRecord ShardState::OpenBatch() const {
  changelog::BatchRecord batch;
  batch.partition = partition_;
  batch.hash_key = hash_key_.value_or(filter::kUnkeyed).value;
  batch.input_from = pending_from_;
  batch.input_to = position_;
  batch.segments = pending_segments_;
  batch.counters.reserve(pending_counters_.size());
  for (const CounterTable::Index i : pending_counters_) {
    batch.counters.push_back({counters_[i].name, counters_[i].value});
  }
  batch.stats = pending_stats_;
  return batch;
}

changelog::ShardStats ShardState::PendingStats() const {
  changelog::ShardStats stats = pending_stats_;
  for (const changelog::BatchRecord& b : closed_batches_) stats.Add(b.stats);
  return stats;
}

std::optional<filter::IdHash> ShardState::Admit(const InputMessage& message,
                                                event::IncrementEvent& event, Decision& decision) {
  if (!has_pending_) {
    pending_from_ = message.offset;
    has_pending_ = true;
  }
  position_ = message.offset.Next();
  event::ParseResult parsed = parser_.Parse(message.key, message.value);
  if (const auto* reason = std::get_if<event::DlqReason>(&parsed)) {
    ++pending_stats_.dead_lettered[static_cast<size_t>(*reason)];
    decision = {Outcome::kDeadLetter, *reason};
    return std::nullopt;
  }
  event = std::move(std::get<event::IncrementEvent>(parsed));
  // An owner's key comes with its claim; a state applied without one (tests,
  // benchmarks) settles on kUnkeyed at its first id, which its snapshots then carry.
  if (!hash_key_) hash_key_ = filter::kUnkeyed;
  return filter::HashIdempotencyId(*message.key, *hash_key_);
}

Decision ShardState::Conclude(event::IncrementEvent& event, uint64_t counter_hash,
                              filter::Verdict verdict) {
  ++pending_events_;
  if (filter::IsDuplicate(verdict)) {
    ++pending_stats_.duplicates;
    if (verdict == filter::Verdict::kDuplicateNearEdge) ++pending_stats_.near_edge_duplicates;
    return {Outcome::kDuplicate, {}};
  }
  // A new counter starts at 0, which no delta overflows: an overflow leaves no entry.
  const auto [i, inserted] = counters_.FindOrInsert(std::move(event.counter), counter_hash);
  if (inserted) ++pending_new_names_;
  CounterTable::Entry& counter = counters_[i];
  const std::optional<int64_t> sum = event::AddWithoutOverflow(counter.value, event.delta);
  if (!sum) {
    ++pending_stats_.dead_lettered[static_cast<size_t>(event::DlqReason::kOverflow)];
    return {Outcome::kDeadLetter, event::DlqReason::kOverflow};
  }
  counter.value = *sum;
  if (counter.mark != batch_mark_) {
    counter.mark = batch_mark_;
    pending_counters_.push_back(i);
    pending_bytes_ += changelog::CounterUpdateBytes(counter.name.size());
  }
  ++pending_stats_.applied;
  return {Outcome::kApplied, {}};
}

Decision ShardState::Apply(const InputMessage& message, filter::Millis wall) {
  MakeRoomFor(1);
  event::IncrementEvent event;
  Decision decision;
  const std::optional<filter::IdHash> hash = Admit(message, event, decision);
  if (!hash) return decision;
  const EventClock at = EventTime(message.timestamp_ms, wall);
  if (const std::optional<Decision> refused = RefuseLate(at)) return *refused;
  AdvanceFilter(at.time);
  const filter::Verdict verdict = filter_->TestAndInsert(*hash);
  pending_segments_.back().hashes.push_back(hash->value);
  pending_bytes_ += changelog::kHashBytes;
  return Conclude(event, CounterTable::Hash(event.counter), verdict);
}

void ShardState::ApplyAll(std::span<const InputMessage> messages, filter::Millis wall,
                          std::span<Decision> decisions) {
  size_t done = 0;
  while (done < messages.size()) {
    const size_t n = MakeRoomFor(messages.size() - done);
    ApplyFitting(messages.subspan(done, n), wall, decisions.subspan(done, n));
    done += n;
  }
}

void ShardState::ApplyFitting(std::span<const InputMessage> messages, filter::Millis wall,
                              std::span<Decision> decisions) {
  scratch_events_.resize(messages.size());
  scratch_counter_hashes_.resize(messages.size());
  scratch_hashes_.clear();
  scratch_index_.clear();
  scratch_times_.clear();
  for (size_t i = 0; i < messages.size(); ++i) {
    decisions[i] = {};
    const auto hash = Admit(messages[i], scratch_events_[i], decisions[i]);
    if (!hash) continue;
    const EventClock at = EventTime(messages[i].timestamp_ms, wall);
    if (const std::optional<Decision> refused = RefuseLate(at)) {
      decisions[i] = *refused;
      continue;
    }
    // With many counters most lookups miss the caches: the slots are asked for now,
    // to arrive while the filter works, and each entry a few events ahead below.
    scratch_counter_hashes_[i] = CounterTable::Hash(scratch_events_[i].counter);
    counters_.PrefetchSlot(scratch_counter_hashes_[i]);
    scratch_hashes_.push_back(*hash);
    scratch_index_.push_back(i);
    scratch_times_.push_back(at.time);
  }
  scratch_verdicts_.resize(scratch_hashes_.size());
  // Runs of events at one clock reading go to the filter as one batch.
  for (size_t from = 0; from < scratch_hashes_.size();) {
    size_t to = from + 1;
    while (to < scratch_hashes_.size() && scratch_times_[to] == scratch_times_[from]) ++to;
    AdvanceFilter(scratch_times_[from]);
    const auto hashes = std::span<const filter::IdHash>(scratch_hashes_).subspan(from, to - from);
    filter_->TestAndInsertBatch(hashes, std::span(scratch_verdicts_).subspan(from, to - from));
    std::vector<uint64_t>& recorded = pending_segments_.back().hashes;
    for (const filter::IdHash& h : hashes) recorded.push_back(h.value);
    pending_bytes_ += changelog::kHashBytes * hashes.size();
    from = to;
  }
  constexpr size_t kEntriesAhead = 8;
  const size_t admitted = scratch_index_.size();
  for (size_t j = 0; j < std::min(kEntriesAhead, admitted); ++j) {
    counters_.PrefetchEntry(scratch_counter_hashes_[scratch_index_[j]]);
  }
  for (size_t j = 0; j < admitted; ++j) {
    if (j + kEntriesAhead < admitted) {
      counters_.PrefetchEntry(scratch_counter_hashes_[scratch_index_[j + kEntriesAhead]]);
    }
    const size_t i = scratch_index_[j];
    decisions[i] = Conclude(scratch_events_[i], scratch_counter_hashes_[i], scratch_verdicts_[j]);
  }
}

std::vector<changelog::BatchRecord> ShardState::PendingBatches(base::Epoch epoch) const {
  std::vector<changelog::BatchRecord> batches = closed_batches_;
  if (has_pending_) batches.push_back(OpenBatch());
  for (size_t i = 0; i < batches.size(); ++i) {
    batches[i].epoch = epoch;
    batches[i].claim = claim_;
    batches[i].seq = sealed_seq().Plus(1 + i);
  }
  return batches;
}

std::vector<changelog::BatchRecord> ShardState::Seal(base::Epoch epoch, int64_t sealed_at_ms) {
  CutBatch();
  std::vector<changelog::BatchRecord> batches = std::move(closed_batches_);
  closed_batches_.clear();
  if (batches.empty()) return batches;
  in_flight_stats_ = {};
  for (size_t i = 0; i < batches.size(); ++i) {
    batches[i].epoch = epoch;
    batches[i].claim = claim_;
    batches[i].seq = committed_seq_.Plus(1 + i);
    batches[i].sealed_at_ms = sealed_at_ms;
    in_flight_stats_.Add(batches[i].stats);
  }
  in_flight_batches_ = batches.size();
  epoch_ = epoch;
  pending_events_ = 0;
  return batches;
}

void ShardState::MarkCommitted(base::Epoch epoch) {
  if (in_flight_batches_ == 0 && Seal(epoch).empty()) return;
  committed_seq_ = committed_seq_.Plus(in_flight_batches_);
  in_flight_batches_ = 0;
  stats_.Add(in_flight_stats_);
  in_flight_stats_ = {};
}

void ShardState::Replay(const changelog::BatchRecord& batch) {
  AdoptHashKey(filter::IdHashKey{batch.hash_key});
  for (const changelog::FilterSegment& segment : batch.segments) {
    filter_->AdvanceTo(filter::Millis{segment.time_ms});
    clock_.clock_ms = std::max(clock_.clock_ms, segment.time_ms);
    scratch_hashes_.resize(segment.hashes.size());
    for (size_t i = 0; i < segment.hashes.size(); ++i) {
      scratch_hashes_[i] = filter::IdHash{segment.hashes[i]};
    }
    scratch_verdicts_.resize(segment.hashes.size());
    filter_->TestAndInsertBatch(scratch_hashes_, scratch_verdicts_);
  }
  scratch_recent_.clear();
  for (const changelog::CounterUpdate& c : batch.counters) {
    const auto [i, inserted] = counters_.Assign(c.name, c.value);
    if (inserted && view_counters_) ++view_new_names_;
    NoteChanged(i);
    scratch_recent_.push_back(i);
  }
  NoteRecent(scratch_recent_);
  stats_.Add(batch.stats);
  position_ = batch.input_to;
  epoch_ = std::max(epoch_, batch.epoch);
  committed_seq_ = batch.seq;
}

void ShardState::ForgetFilter() {
  filter_ = std::make_unique<filter::NoDedup>();
  forgot_filter_ = true;
}

std::string ShardState::EncodeSnapshot(base::Epoch epoch) const {
  changelog::ShardStats stats = stats_;
  stats.Add(in_flight_stats_);
  stats.Add(PendingStats());
  std::string body;
  base::ByteWriter b(body);
  b.U32(static_cast<uint32_t>(partition_.value()));
  b.U64((has_pending() || has_batch_in_flight() ? epoch : epoch_).value());
  b.U64(sealed_seq().Plus(closed_batches_.size() + (has_pending_ ? 1 : 0)).value());
  b.I64(position_.value());
  b.I64(clock_.clock_ms);
  b.U64(hash_key_.value_or(filter::kUnkeyed).value);
  b.U64(stats.applied);
  b.U64(stats.duplicates);
  b.U64(stats.near_edge_duplicates);
  for (uint64_t n : stats.dead_lettered) b.U64(n);
  // The published view's counters are sorted already: with the pending batch's
  // counters (none right after Seal) on top, they are the snapshot's.
  std::shared_ptr<const CounterSnapshot> counters = CounterView();
  if (!pending_counters_.empty()) {
    std::vector<CounterRef> pending;
    for (const CounterTable::Index i : pending_counters_) {
      pending.push_back({counters_[i].name, counters_[i].value});
    }
    counters = std::make_shared<const CounterSnapshot>(counters->With(std::move(pending)));
  }
  b.U32(static_cast<uint32_t>(counters->size()));
  counters->ForEach([&b](std::string_view name, int64_t value) {
    b.Bytes(name);
    b.I64(value);
  });
  std::string filter_state;
  filter_->Serialize(filter_state);
  b.Bytes(filter_state);

  std::string out;
  base::ByteWriter w(out);
  for (char c : kSnapshotMagic) w.U8(static_cast<uint8_t>(c));
  w.U16(kSnapshotVersion);
  w.U8(kZstdCodec);
  w.U64(body.size());
  const size_t header = out.size();
  out.resize(header + ZSTD_compressBound(body.size()));
  const size_t packed =
      ZSTD_compress(out.data() + header, out.size() - header, body.data(), body.size(), kZstdLevel);
  // Compressing into a buffer of ZSTD_compressBound bytes cannot fail but for memory.
  if (ZSTD_isError(packed)) throw std::bad_alloc();
  out.resize(header + packed);
  w.U64(XXH3_64bits(out.data(), out.size()));
  return out;
}

base::Result<std::string_view> ShardState::SnapshotBody(std::string_view bytes, uint16_t& version,
                                                        std::string& unpacked) {
  if (bytes.size() < 4 + 8 || bytes.substr(0, 4) != std::string_view(kSnapshotMagic, 4)) {
    return base::Corrupt("shard snapshot: bad magic");
  }
  const std::string_view covered = bytes.substr(0, bytes.size() - 8);
  base::ByteReader tail(bytes.substr(covered.size()));
  if (tail.U64() != XXH3_64bits(covered.data(), covered.size())) {
    return base::Corrupt("shard snapshot: checksum mismatch");
  }
  base::ByteReader r(covered.substr(4));
  version = r.U16();
  if (version == kPlainSnapshotVersion) return covered.substr(6);
  if (version != kSnapshotVersion && version != kUnkeyedSnapshotVersion &&
      version != kClocklessSnapshotVersion) {
    return base::Corrupt("shard snapshot: unsupported version " + std::to_string(version));
  }
  const uint8_t codec = r.U8();
  const uint64_t body_bytes = r.U64();
  if (!r.ok() || codec != kZstdCodec) return base::Corrupt("shard snapshot: unknown codec");
  const std::string_view packed = covered.substr(4 + 2 + 1 + 8);
  if (body_bytes > kMaxSnapshotBodyBytes ||
      ZSTD_getFrameContentSize(packed.data(), packed.size()) != body_bytes) {
    return base::Corrupt("shard snapshot: bad body length");
  }
  if (!Decompress(packed, body_bytes, unpacked)) {
    return base::Corrupt("shard snapshot: cannot decompress");
  }
  return std::string_view(unpacked);
}

base::Result<std::unique_ptr<ShardState>> ShardState::FromSnapshot(
    std::string_view bytes, const filter::DecodeLimits& limits) {
  uint16_t version = 0;
  std::string unpacked;
  auto body = SnapshotBody(bytes, version, unpacked);
  if (!body) return body.error();
  return FromSnapshotBody(body.value(), version, limits);
}

base::Result<std::unique_ptr<ShardState>> ShardState::FromSnapshot(
    std::string&& bytes, const filter::DecodeLimits& limits) {
  uint16_t version = 0;
  std::string unpacked;
  auto body = SnapshotBody(bytes, version, unpacked);
  if (!body) return body.error();
  if (version != kPlainSnapshotVersion) std::string().swap(bytes);  // the body is unpacked
  return FromSnapshotBody(body.value(), version, limits);
}

base::Result<std::unique_ptr<ShardState>> ShardState::FromSnapshotBody(
    std::string_view body, uint16_t version, const filter::DecodeLimits& limits) {
  base::ByteReader r(body);
  const base::Partition partition{static_cast<int32_t>(r.U32())};
  const base::Epoch epoch{r.U64()};
  const base::Seq seq{r.U64()};
  const base::Offset position{r.I64()};
  const int64_t clock_ms = version >= kUnkeyedSnapshotVersion ? r.I64() : 0;
  const filter::IdHashKey hash_key{version >= kSnapshotVersion ? r.U64() : 0};
  changelog::ShardStats stats;
  stats.applied = r.U64();
  stats.duplicates = r.U64();
  stats.near_edge_duplicates = r.U64();
  const size_t reasons =
      version >= kUnkeyedSnapshotVersion ? changelog::kDlqReasons : kClocklessSnapshotDlqReasons;
  for (size_t i = 0; i < reasons; ++i) stats.dead_lettered[i] = r.U64();
  if (clock_ms < 0) return base::Corrupt("shard snapshot: negative clock");
  const uint32_t count = r.U32();
  if (!r.ok() || count > r.remaining() / 12) return base::Corrupt("shard snapshot: bad counters");
  CounterTable counters;
  counters.reserve(count);
  // The counters are stored by name (EncodeSnapshot writes a view's), so the first
  // view is built here in the same pass, and costs the processor thread only what the
  // replayed batches change. Bytes not in order (no snapshot written so) fall back
  // to a copy and sort at the first view.
  std::optional<CounterSnapshot::SortedBuilder> view{std::in_place};
  for (uint32_t i = 0; i < count; ++i) {
    const std::string_view name = r.Bytes(event::kMaxCounterBytes);
    const int64_t value = r.I64();
    counters.Assign(name, value);
    if (view && !view->Add(name, value)) view.reset();
  }
  const std::string_view filter_state = r.Bytes(kMaxFilterStateBytes);
  if (!r.done()) return base::Corrupt("shard snapshot: truncated or trailing bytes");
  auto decoded = filter::DecodeDedupFilter(filter_state, limits);
  if (!decoded) return base::Corrupt("shard snapshot: " + decoded.message());
  std::unique_ptr<ShardState> state(new ShardState(partition, std::move(decoded.value())));
  state->epoch_ = epoch;
  state->committed_seq_ = seq;
  state->position_ = position;
  state->clock_.clock_ms = clock_ms;
  state->hash_key_ = hash_key;
  state->stats_ = stats;
  state->counters_ = std::move(counters);
  if (view) {
    state->view_counters_ = std::make_shared<const CounterSnapshot>(std::move(*view).Finish());
  }
  return state;
}

std::shared_ptr<const ShardView> ShardState::MakeView(ShardView base, int64_t now_ms,
                                                      FilterDetail detail,
                                                      CounterDetail counters) const {
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
  base.event_clock_ms = clock_.clock_ms;
  base.timestamps_ahead = clock_.ahead_of_wall;
  base.late_events = clock_.late;
  base.timestamps_missing = clock_.without_timestamp;
  base.filter_unbounded = rules_.filter_unbounded;
  if (rules_.record_window_held && rules_.record_window) {
    base.record_window_held_ms = rules_.record_window_held->count();
    base.record_window_ms = rules_.record_window->count();
  }
  base.hash_keyed = hash_key_.has_value() && *hash_key_ != filter::kUnkeyed;
  if (detail == FilterDetail::kRefresh) {
    base.filter = filter_->Summary();
    base.digest = filter_->Digest();
    base.digest_seq = sealed_seq();
  }
  base.published_at_ms = now_ms;
  if (counters == CounterDetail::kReuse && base.counters) {
    return std::make_shared<const ShardView>(std::move(base));
  }
  base.counters = CounterView();
  base.counters_behind_ms = 0;
  if (recent_changed_) {
    auto names = std::make_shared<std::vector<std::string>>();
    names->reserve(recent_.size());
    for (const CounterTable::Index i : recent_) names->emplace_back(counters_[i].name);
    recent_view_ = std::move(names);
    recent_changed_ = false;
  }
  base.recent_counters = recent_view_;
  return std::make_shared<const ShardView>(std::move(base));
}

}  // namespace oncecount::shard
