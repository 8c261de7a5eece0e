#include "processor/filter/experiments/classic_bloom.h"

#include <bit>
#include <string>

#include "processor/filter/bloom/blocked_bloom.h"
#include "processor/filter/bloom/cell_coding.h"

namespace oncecount::filter {

base::Result<ClassicBloom> ClassicBloom::Create(uint64_t bits, int hashes, uint64_t seed) {
  if (bits == 0) return base::InvalidArgument("bits must be at least 1 (got 0)");
  if (bits > (uint64_t{1} << 40)) return base::InvalidArgument("bits must be at most 2^40");
  if (hashes < kMinHashes || hashes > kMaxHashes) {
    return base::InvalidArgument("hashes must be in " + std::to_string(kMinHashes) + ".." +
                                 std::to_string(kMaxHashes) + " (got " + std::to_string(hashes) +
                                 ")");
  }
  return ClassicBloom(bits, hashes, seed);
}

ClassicBloom::ClassicBloom(uint64_t bits, int hashes, uint64_t seed)
    : bits_(bits), hashes_(hashes), seed_(seed), words_((bits + 63) / 64, 0) {}

bool ClassicBloom::MayContain(IdHash hash) const {
  const uint64_t mixed = CellMix(hash, seed_);
  for (int i = 1; i <= hashes_; ++i) {
    if (!Test(CellPosition(mixed, i, bits_))) return false;
  }
  return true;
}

void ClassicBloom::Insert(IdHash hash) {
  const uint64_t mixed = CellMix(hash, seed_);
  for (int i = 1; i <= hashes_; ++i) Set(CellPosition(mixed, i, bits_));
}

uint64_t ClassicBloom::CountSet() const {
  uint64_t n = 0;
  for (uint64_t w : words_) n += static_cast<uint64_t>(std::popcount(w));
  return n;
}

ClassicBloom UnderlyingBloom(const GaussianBloom& g) {
  // The Gaussian filter's parameters were validated when it was created.
  ClassicBloom bloom = std::move(ClassicBloom::Create(g.cells(), g.hashes(), g.seed())).value();
  const uint64_t max = MaxCellCode(g.cell_bits());
  for (uint64_t c = 0; c < g.cells(); ++c) {
    if (g.CellCode(c) == max) bloom.Set(c);
  }
  return bloom;
}

}  // namespace oncecount::filter
