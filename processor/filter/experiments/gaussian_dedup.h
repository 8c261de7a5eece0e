// GaussianDedup: one Gaussian Bloom filter that never forgets (filter-eval's
// `--mode gaussian`), the Gaussian counterpart of PlainBloomDedup. Like it, its
// false-positive rate grows without bound; it exists to measure the Gaussian
// construction on its own, not for the service, and lives with the other
// experiments (MakeExperimentFilter builds it, DecodeExperimentFilter reads its state).
//
// Thread-safety: owned by one thread; see DedupFilter.
#pragma once

#include <memory>
#include <string_view>

#include "processor/filter/bloom/gaussian_bloom.h"
#include "processor/filter/dedup_filter.h"

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
  friend base::Result<std::unique_ptr<DedupFilter>> DecodeGaussianDedup(std::string_view payload);
  explicit GaussianDedup(GaussianBloom filter) : filter_(std::move(filter)) {}

  GaussianBloom filter_;
  Millis now_{0};
  uint64_t duplicates_ = 0;
};

// The payload of a mode-gaussian state (state_frame.h): cells, hashes, cell bits,
// exponential, seed, inserted, clock, duplicates, cells. kCorrupt when it does not
// decode.
base::Result<std::unique_ptr<DedupFilter>> DecodeGaussianDedup(std::string_view payload);

}  // namespace oncecount::filter
