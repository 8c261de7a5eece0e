// ExactWindowDedup: the `exact` mode, every id of the window kept as its 64-bit
// hash in an open-addressing hash set (linear probing, backward-shift deletion),
// with a FIFO of (hash, insert time) driving expiry after `window` (the paper's
// approach 2, bounded by the window). No false positives beyond 64-bit hash
// collisions; memory grows with the rate times the window, up to the memory bound:
// a full filter drops its oldest id for a new one and records it (early_forgetting.h),
// and its guaranteed window says what it holds. The table's capacity is a
// performance detail, not state: it is not serialized, and a decoded filter sizes
// its table from the ids it holds.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include <deque>
#include <vector>

#include "processor/base/result.h"
#include "processor/filter/dedup_filter.h"
#include "processor/filter/early_forgetting.h"

namespace oncecount::filter {

class ExactWindowDedup final : public DedupFilter {
 public:
  // `expected_ids` presizes the table (it grows past it by doubling, up to the ids
  // `memory_limit_bytes` holds; 0: no bound).
  static base::Result<ExactWindowDedup> Create(Millis window, uint64_t expected_ids, Millis start,
                                               uint64_t memory_limit_bytes = 0);

  DedupMode mode() const override { return DedupMode::kExact; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override;
  Verdict TestAndInsert(IdHash hash) override;
  void TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

  size_t size() const { return size_; }
  // The table size for `ids` live ids: a power of two, load factor at most 1/2.
  static uint64_t CapacityFor(uint64_t ids);
  // The most ids whose table and FIFO fit in `memory_limit_bytes` (0: no bound).
  static uint64_t MaxIdsWithin(uint64_t memory_limit_bytes);
  const EarlyForgetting& forgotten_early() const { return forgotten_; }

 private:
  friend struct ExactStateCodec;
  struct Entry {
    uint64_t key;
    Millis at;
  };

  ExactWindowDedup(Millis window, uint64_t capacity, Millis start, uint64_t memory_limit_bytes);
  static uint64_t KeyOf(IdHash hash) { return hash.value == 0 ? 1 : hash.value; }
  size_t SlotOf(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  bool Find(uint64_t key) const;
  void Add(uint64_t key);
  void Erase(uint64_t key);
  void Grow();
  // At the bound: the oldest id makes way for a new one.
  void ForgetOldest();

  Millis window_;
  uint64_t memory_limit_bytes_ = 0;
  uint64_t max_ids_ = 0;
  EarlyForgetting forgotten_;
  Millis now_;
  std::vector<uint64_t> table_;  // 0 = empty
  unsigned shift_ = 64;
  size_t size_ = 0;
  std::deque<Entry> fifo_;
  uint64_t inserted_ = 0;
  uint64_t duplicates_ = 0;
};

}  // namespace oncecount::filter
