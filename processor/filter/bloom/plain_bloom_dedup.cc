#include "processor/filter/bloom/plain_bloom_dedup.h"

#include <algorithm>

#include "processor/filter/bloom/fpp_model.h"
#include "processor/filter/state_codec.h"

namespace oncecount::filter {

base::Result<PlainBloomDedup> PlainBloomDedup::Create(uint64_t bits, int hashes, uint64_t seed,
                                                      uint32_t block_bits) {
  auto bloom = BlockedBloom::Create(bits, hashes, seed, block_bits);
  if (!bloom) return bloom.error();
  return PlainBloomDedup(std::move(bloom).value());
}

void PlainBloomDedup::AdvanceTo(Millis now) {
  now_ = std::max(now_, now);
}

Verdict PlainBloomDedup::TestAndInsert(IdHash hash) {
  if (bloom_.MayContain(hash)) {
    ++duplicates_;
    return Verdict::kDuplicate;
  }
  bloom_.Insert(hash);
  return Verdict::kNew;
}

void PlainBloomDedup::TestAndInsertBatch(std::span<const IdHash> hashes,
                                         std::span<Verdict> verdicts) {
  constexpr size_t kDistance = 8;
  const size_t count = std::min(hashes.size(), verdicts.size());
  for (size_t i = 0; i < std::min(count, kDistance); ++i) bloom_.Prefetch(hashes[i]);
  for (size_t i = 0; i < count; ++i) {
    if (i + kDistance < count) bloom_.Prefetch(hashes[i + kDistance]);
    verdicts[i] = TestAndInsert(hashes[i]);
  }
}

FilterSummary PlainBloomDedup::Summary() const {
  FilterSummary s;
  s.mode = DedupMode::kBloom;
  s.inserted = bloom_.inserted();
  s.duplicates = duplicates_;
  const double bits = static_cast<double>(bloom_.bits());
  const double n = static_cast<double>(bloom_.inserted());
  s.estimated_fpp = BlockedBloomFpp(bits, bloom_.hashes(), n, bloom_.block_bits());
  s.estimated_fpp_eq1 = ClassicBloomFpp(bits, bloom_.hashes(), n);
  s.bits_total = bloom_.bits();
  s.filters = 1;
  s.constituents.push_back({bloom_.inserted(), bloom_.FillRatio(), s.estimated_fpp});
  // Never forgets: every id ever inserted is caught (until false positives swamp it).
  s.window_ms_guaranteed = -1;
  s.window_ms_configured = -1;
  return s;
}

void PlainBloomDedup::Serialize(std::string& out) const {
  BloomStateCodec::Encode(*this, out);
}

}  // namespace oncecount::filter
