// GaussianBloomDedup: `filter-eval --mode gaussian`, one Gaussian Bloom filter that
// never forgets — the `bloom` mode's counterpart, to compare the two on the same
// workloads. The service does not offer it (docs/gaussian-bloom-filter.md).
//
// Its estimated FPP is the classic Bloom filter's over the same cells, an upper
// bound (Lemma 2 of seeds/001); filter-eval measures the real rate.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include "processor/filter/dedup_filter.h"
#include "processor/filter/gaussian_bloom.h"

namespace oncecount::filter {

class GaussianBloomDedup final : public DedupFilter {
 public:
  static Result<GaussianBloomDedup> Create(uint32_t cells, int hashes, CellCoding coding,
                                           uint64_t seed);

  DedupMode mode() const override { return DedupMode::kGaussian; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override { return filter_.MayContain(hash); }
  Verdict TestAndInsert(IdHash hash) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

 private:
  friend struct GaussianStateCodec;
  explicit GaussianBloomDedup(GaussianBloom filter) : filter_(std::move(filter)) {}

  GaussianBloom filter_;
  Millis now_{0};
  uint64_t duplicates_ = 0;
};

}  // namespace oncecount::filter
