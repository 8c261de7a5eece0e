// GaussianDedup: one Gaussian Bloom filter that never forgets (filter-eval's
// `--mode gaussian`), the Gaussian counterpart of PlainBloomDedup. Like it, its
// false-positive rate grows without bound; it exists to measure the Gaussian
// construction on its own, not for the service.
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include "processor/filter/dedup_filter.h"
#include "processor/filter/gaussian_bloom.h"

namespace oncecount::filter {

class GaussianDedup final : public DedupFilter {
 public:
  static base::Result<GaussianDedup> Create(const GaussianParams& params);

  DedupMode mode() const override { return DedupMode::kGaussian; }
  void AdvanceTo(Millis now) override;
  bool Contains(IdHash hash) const override { return filter_.MayContain(hash); }
  Verdict TestAndInsert(IdHash hash) override;
  FilterSummary Summary() const override;
  void Serialize(std::string& out) const override;

  const GaussianBloom& filter() const { return filter_; }

 private:
  friend struct GaussianStateCodec;
  explicit GaussianDedup(GaussianBloom filter) : filter_(std::move(filter)) {}

  GaussianBloom filter_;
  Millis now_{0};
  uint64_t duplicates_ = 0;
};

}  // namespace oncecount::filter
