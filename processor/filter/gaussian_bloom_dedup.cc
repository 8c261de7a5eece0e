#include "processor/filter/gaussian_bloom_dedup.h"

#include <algorithm>

#include "processor/filter/fpp_model.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {

Result<GaussianBloomDedup> GaussianBloomDedup::Create(uint32_t cells, int hashes, CellCoding coding,
                                                      uint64_t seed) {
  auto filter = GaussianBloom::Create(cells, hashes, coding, seed);
  if (!filter) return Error{filter.error()};
  return GaussianBloomDedup(std::move(filter).value());
}

void GaussianBloomDedup::AdvanceTo(Millis now) {
  now_ = std::max(now_, now);
}

Verdict GaussianBloomDedup::TestAndInsert(IdHash hash) {
  if (filter_.MayContain(hash)) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  filter_.Insert(hash);
  return Verdict::kNew;
}

FilterSummary GaussianBloomDedup::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kGaussian;
  s.inserted = filter_.inserted();
  s.duplicates = duplicates_;
  s.estimated_fpp = ClassicBloomFpp(static_cast<double>(filter_.cells()), filter_.hashes(),
                                    static_cast<double>(filter_.inserted()));
  s.estimated_fpp_eq1 = s.estimated_fpp;
  s.bits_total = filter_.memory_bits();
  s.filters = 1;
  s.constituents.push_back({filter_.inserted(), filter_.PeakFill(), s.estimated_fpp});
  s.window_ms_guaranteed = -1;  // never forgets
  return s;
}

void GaussianBloomDedup::Serialize(std::string& out) const {
  GaussianStateCodec::Encode(*this, out);
}

}  // namespace oncecount::filter
