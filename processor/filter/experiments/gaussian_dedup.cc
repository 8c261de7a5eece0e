#include "processor/filter/experiments/gaussian_dedup.h"

#include <algorithm>
#include <vector>

#include "processor/filter/bloom/cell_coding.h"
#include "processor/filter/bloom/fpp_model.h"
#include "processor/filter/state_frame.h"

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
  s.window_ms_configured = -1;
  return s;
}

void GaussianDedup::Serialize(std::string& out) const {
  WriteStateFrame(DedupMode::kGaussian, 0, out, [&](base::ByteWriter& w) {
    const GaussianBloom& g = filter_;
    w.U64(g.cells());
    w.U32(static_cast<uint32_t>(g.hashes()));
    w.U8(static_cast<uint8_t>(g.cell_bits()));
    w.U8(static_cast<uint8_t>(g.exp()));
    w.U64(g.seed());
    w.U64(g.inserted());
    w.Ms(now_);
    w.U64(duplicates_);
    w.Words(g.words());
  });
}

base::Result<std::unique_ptr<DedupFilter>> DecodeGaussianDedup(std::string_view payload) {
  base::ByteReader r(payload);
  GaussianParams p;
  p.cells = r.U64();
  p.hashes = static_cast<int>(r.U32());
  p.cell_bits = r.U8();
  const uint8_t exp = r.U8();
  p.seed = r.U64();
  const uint64_t inserted = r.U64();
  const Millis now = r.Ms();
  const uint64_t duplicates = r.U64();
  if (!r.ok()) return CorruptState("truncated gaussian state");
  if (exp > 1 || !ValidCellBits(p.cell_bits)) return CorruptState("bad cell bits or exponential");
  p.exp = static_cast<ExpKind>(exp);
  if (p.cells / 8 > payload.size() / static_cast<uint64_t>(p.cell_bits)) {
    return CorruptState("filter size beyond the payload");
  }
  auto created = GaussianDedup::Create(p);
  if (!created) return CorruptState(created.message());
  GaussianDedup f = std::move(created).value();
  std::vector<uint64_t> words;
  if (!r.Words(words, f.filter_.words().size())) return CorruptState("truncated filter cells");
  if (!r.done()) return CorruptState("trailing bytes after gaussian state");
  if (!ValidCellWords(words, p.cell_bits)) return CorruptState("cell above the peak value");
  f.filter_.Restore(words, inserted);
  f.now_ = now;
  f.duplicates_ = duplicates;
  return std::unique_ptr<DedupFilter>(new GaussianDedup(std::move(f)));
}

}  // namespace oncecount::filter
