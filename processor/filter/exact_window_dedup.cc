#include "processor/filter/exact_window_dedup.h"

#include <algorithm>
#include <bit>
#include <new>
#include <stdexcept>
#include <string>

#include "processor/filter/state_codec.h"

namespace oncecount::filter {
namespace {

constexpr uint64_t kMinCapacity = 1024;
constexpr uint64_t kMaxCapacity = uint64_t{1} << 40;
// 2^31 ids: a 32 GiB table. Larger windows are not what the exact baseline is for.
constexpr uint64_t kMaxPresizedIds = uint64_t{1} << 31;

}  // namespace

uint64_t ExactWindowDedup::CapacityFor(uint64_t ids) {
  // Load factor at most 1/2 keeps linear-probing runs short.
  return std::bit_ceil(std::clamp(ids * 2, kMinCapacity, kMaxCapacity));
}

uint64_t ExactWindowDedup::MaxIdsWithin(uint64_t memory_limit_bytes) {
  if (memory_limit_bytes == 0) return UINT64_MAX;
  // A table of C slots (8 bytes each) holds C / 2 ids, each with a 16-byte FIFO
  // entry: 16 C bytes in all.
  const uint64_t table = std::bit_floor(memory_limit_bytes / 16);
  return table < kMinCapacity ? 0 : table / 2;
}

base::Result<ExactWindowDedup> ExactWindowDedup::Create(Millis window, uint64_t expected_ids,
                                                        Millis start, uint64_t memory_limit_bytes) {
  if (window.count() <= 0 || window > kMaxPeriod) {
    return base::InvalidArgument("window must be in 1.." + std::to_string(kMaxPeriod.count()) +
                                 " ms (got " + std::to_string(window.count()) + " ms)");
  }
  if (expected_ids > kMaxPresizedIds) {
    return base::InvalidArgument(
        "exact mode presizes for at most " + std::to_string(kMaxPresizedIds) +
        " ids (the rate times the window asks for " + std::to_string(expected_ids) + ")");
  }
  if (expected_ids > MaxIdsWithin(memory_limit_bytes) || MaxIdsWithin(memory_limit_bytes) == 0) {
    return base::InvalidArgument(
        "a memory bound of " + std::to_string(memory_limit_bytes) + " bytes holds " +
        std::to_string(MaxIdsWithin(memory_limit_bytes)) +
        " ids; the window at the expected rate asks for " + std::to_string(expected_ids));
  }
  const uint64_t capacity = CapacityFor(expected_ids);
  try {
    return ExactWindowDedup(window, capacity, start, memory_limit_bytes);
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument("cannot allocate a table of " + std::to_string(capacity) +
                                 " ids (" + std::to_string(capacity * 8 >> 20) +
                                 " MiB) for the expected ids");
  } catch (const std::length_error&) {
    return base::InvalidArgument("a table of " + std::to_string(capacity) + " ids is too large");
  }
}

ExactWindowDedup::ExactWindowDedup(Millis window, uint64_t capacity, Millis start,
                                   uint64_t memory_limit_bytes)
    : window_(window),
      memory_limit_bytes_(memory_limit_bytes),
      max_ids_(MaxIdsWithin(memory_limit_bytes)),
      now_(start),
      table_(capacity, 0),
      shift_(64 - static_cast<unsigned>(std::countr_zero(capacity))) {}

bool ExactWindowDedup::Find(uint64_t key) const {
  const size_t mask = table_.size() - 1;
  for (size_t i = SlotOf(key);; i = (i + 1) & mask) {
    if (table_[i] == key) return true;
    if (table_[i] == 0) return false;
  }
}

void ExactWindowDedup::Add(uint64_t key) {
  if ((size_ + 1) * 2 > table_.size()) Grow();
  const size_t mask = table_.size() - 1;
  size_t i = SlotOf(key);
  while (table_[i] != 0) i = (i + 1) & mask;
  table_[i] = key;
  ++size_;
}

void ExactWindowDedup::Erase(uint64_t key) {
  const size_t mask = table_.size() - 1;
  size_t i = SlotOf(key);
  while (table_[i] != key) {
    if (table_[i] == 0) return;
    i = (i + 1) & mask;
  }
  // Backward-shift deletion: pull later members of the run into the hole when
  // their home slot lies at or before it, so no tombstones are needed.
  size_t hole = i;
  for (size_t j = (hole + 1) & mask; table_[j] != 0; j = (j + 1) & mask) {
    const size_t home = SlotOf(table_[j]);
    const bool movable = ((j - home) & mask) >= ((j - hole) & mask);
    if (movable) {
      table_[hole] = table_[j];
      hole = j;
    }
  }
  table_[hole] = 0;
  --size_;
}

void ExactWindowDedup::Grow() {
  std::vector<uint64_t> old = std::move(table_);
  table_.assign(old.size() * 2, 0);
  shift_ -= 1;
  size_ = 0;
  for (uint64_t key : old) {
    if (key != 0) Add(key);
  }
}

void ExactWindowDedup::AdvanceTo(Millis now) {
  now = std::min(now, kMaxFilterTime);
  if (now <= now_) return;
  now_ = now;
  // Expired keys leave in FIFO order; their table slots are random, so prefetch
  // a few ahead as the batch path does for lookups.
  constexpr size_t kDistance = 8;
  const auto expired = [&](size_t i) { return i < fifo_.size() && fifo_[i].at < now_ - window_; };
  for (size_t i = 0; i < kDistance && expired(i); ++i) PrefetchLine(&table_[SlotOf(fifo_[i].key)]);
  while (expired(0)) {
    if (expired(kDistance)) PrefetchLine(&table_[SlotOf(fifo_[kDistance].key)]);
    Erase(fifo_.front().key);
    fifo_.pop_front();
  }
}

bool ExactWindowDedup::Contains(IdHash hash) const {
  return Find(KeyOf(hash));
}

Verdict ExactWindowDedup::TestAndInsert(IdHash hash) {
  const uint64_t key = KeyOf(hash);
  if (Find(key)) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  if (size_ >= max_ids_) ForgetOldest();
  Add(key);
  fifo_.push_back({key, now_});
  ++inserted_;
  return Verdict::kNew;
}

void ExactWindowDedup::ForgetOldest() {
  const Entry oldest = fifo_.front();
  fifo_.pop_front();
  Erase(oldest.key);
  forgotten_.Record(oldest.at, 1);
}

void ExactWindowDedup::TestAndInsertBatch(std::span<const IdHash> hashes,
                                          std::span<Verdict> verdicts) {
  constexpr size_t kDistance = 8;
  const size_t count = std::min(hashes.size(), verdicts.size());
  const auto prefetch = [&](IdHash h) { PrefetchLine(&table_[SlotOf(KeyOf(h))]); };
  for (size_t i = 0; i < std::min(count, kDistance); ++i) prefetch(hashes[i]);
  for (size_t i = 0; i < count; ++i) {
    if (i + kDistance < count) prefetch(hashes[i + kDistance]);
    verdicts[i] = TestAndInsert(hashes[i]);
  }
}

FilterSummary ExactWindowDedup::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kExact;
  s.inserted = inserted_;
  s.duplicates = duplicates_;
  s.bits_total = table_.size() * 64 + fifo_.size() * sizeof(Entry) * 8;
  s.window_ms_guaranteed = forgotten_.Held(now_, window_).count();
  s.window_ms_configured = window_.count();
  s.memory_limit_bytes = memory_limit_bytes_;
  s.forgotten_early = forgotten_.ids;
  return s;
}

void ExactWindowDedup::Serialize(std::string& out) const {
  ExactStateCodec::Encode(*this, out);
}

}  // namespace oncecount::filter
