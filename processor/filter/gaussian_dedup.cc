#include "processor/filter/gaussian_dedup.h"

#include <algorithm>

#include "processor/filter/fpp_model.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {

base::Result<GaussianDedup> GaussianDedup::Create(const GaussianParams& params) {
  auto filter = GaussianBloom::Create(params);
  if (!filter) return filter.error();
  return GaussianDedup(std::move(filter).value());
}

void GaussianDedup::AdvanceTo(Millis now) {
  now_ = std::max(now_, now);
}

Verdict GaussianDedup::TestAndInsert(IdHash hash) {
  const uint64_t mixed = filter_.Mix(hash);
  if (filter_.MayContainMixed(mixed)) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  filter_.InsertMixed(mixed);
  filter_.CountInsert();
  return Verdict::kNew;
}

FilterSummary GaussianDedup::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kGaussian;
  s.inserted = filter_.inserted();
  s.duplicates = duplicates_;
  // The underlying classic filter's Equation 1: an upper bound (Lemma 2).
  s.estimated_fpp = ClassicBloomFpp(static_cast<double>(filter_.cells()), filter_.hashes(),
                                    static_cast<double>(filter_.inserted()));
  s.estimated_fpp_eq1 = s.estimated_fpp;
  s.bits_total = filter_.bits();
  s.filters = 1;
  s.constituents.push_back({filter_.inserted(), filter_.FillRatio(), s.estimated_fpp});
  s.window_ms_guaranteed = -1;
  return s;
}

void GaussianDedup::Serialize(std::string& out) const {
  GaussianStateCodec::Encode(*this, out);
}

}  // namespace oncecount::filter
