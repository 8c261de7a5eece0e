// PlainBloomDedup: the `bloom` mode, one blocked Bloom filter that never forgets
// (the paper's approach 3). Its false-positive rate climbs without bound as ids
// accumulate; it exists as a baseline.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include "processor/filter/bloom/blocked_bloom.h"
#include "processor/filter/dedup_filter.h"

namespace oncecount::filter {

class PlainBloomDedup final : public DedupFilter {
 public:
  static base::Result<PlainBloomDedup> Create(uint64_t bits, int hashes, uint64_t seed,
                                              uint32_t block_bits = kBlockBits);

  DedupMode mode() const override { return DedupMode::kBloom; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override { return bloom_.MayContain(hash); }
  Verdict TestAndInsert(IdHash hash) override;
  void TestAndInsertBatch(std::span<const IdHash> hashes, std::span<Verdict> verdicts) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

 private:
  friend struct BloomStateCodec;
  explicit PlainBloomDedup(BlockedBloom bloom) : bloom_(std::move(bloom)) {}

  BlockedBloom bloom_;
  Millis now_{0};
  uint64_t duplicates_ = 0;
};

}  // namespace oncecount::filter
