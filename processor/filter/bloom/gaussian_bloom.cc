#include "processor/filter/bloom/gaussian_bloom.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "processor/filter/bloom/blocked_bloom.h"
#include "processor/filter/bloom/cell_coding.h"

namespace oncecount::filter {
namespace {

// Cell access for a cell width W of 4, 8 or 64 bits; codes compare as integers.
template <int W>
struct Cells {
  static constexpr uint64_t kPerWord = 64 / W;
  static constexpr uint64_t kMask = W == 64 ? ~uint64_t{0} : (uint64_t{1} << W) - 1;

  static uint64_t Get(const uint64_t* words, uint64_t cell) {
    if constexpr (W == 64) {
      return words[cell];
    } else {
      return (words[cell / kPerWord] >> (W * (cell % kPerWord))) & kMask;
    }
  }
  static void Raise(uint64_t* words, uint64_t cell, uint64_t code) {
    if constexpr (W == 64) {
      words[cell] = std::max(words[cell], code);
    } else {
      uint64_t& word = words[cell / kPerWord];
      const unsigned shift = W * (cell % kPerWord);
      if (((word >> shift) & kMask) < code) word = (word & ~(kMask << shift)) | (code << shift);
    }
  }
};

// Positions of the k hash functions, 1-based i at index i - 1, and a prefetch of
// each: the k kernels are k random places in a field far larger than the cache, and
// asking for all their lines first overlaps the k misses instead of taking them one
// by one. `radius` (inserts) adds the lines of each kernel's two ends.
void Positions(uint64_t mixed, int k, uint64_t m, const uint64_t* words, int cell_bits,
               const uint32_t* radius, uint64_t* out) {
  const auto line_of = [&](uint64_t cell) {
    return words + cell * static_cast<uint64_t>(cell_bits) / 64;
  };
  for (int i = 1; i <= k; ++i) {
    const uint64_t p = CellPosition(mixed, i, m);
    out[i - 1] = p;
    PrefetchLine(line_of(p));
    if (radius == nullptr) continue;
    const uint64_t r = radius[i - 1];
    PrefetchLine(line_of(p + r >= m ? p + r - m : p + r));
    PrefetchLine(line_of(p >= r ? p - r : p + m - r));
  }
}

// Runs of contiguous cells: a kernel that does not wrap around the field (all but
// about 6k/m of them) is compared or raised in one branch-free pass over its cells,
// instead of two cyclic indices, a read-modify-write and a branch per offset.
template <int W>
bool RunAtLeast(const uint64_t* words, uint64_t first, const uint64_t* codes, uint64_t n) {
  uint64_t below = 0;
  if constexpr (W == 8 && std::endian::native == std::endian::little) {
    const auto* bytes = reinterpret_cast<const uint8_t*>(words) + first;
    for (uint64_t j = 0; j < n; ++j) below |= bytes[j] < codes[j];
  } else if constexpr (W == 64) {
    for (uint64_t j = 0; j < n; ++j) below |= words[first + j] < codes[j];
  } else {
    for (uint64_t j = 0; j < n; ++j) below |= Cells<W>::Get(words, first + j) < codes[j];
  }
  return below == 0;
}

template <int W>
void RaiseRun(uint64_t* words, uint64_t first, const uint64_t* codes, uint64_t n) {
  if constexpr (W == 8 && std::endian::native == std::endian::little) {
    auto* bytes = reinterpret_cast<uint8_t*>(words) + first;
    for (uint64_t j = 0; j < n; ++j) {
      bytes[j] = std::max(bytes[j], static_cast<uint8_t>(codes[j]));
    }
  } else if constexpr (W == 64) {
    for (uint64_t j = 0; j < n; ++j) words[first + j] = std::max(words[first + j], codes[j]);
  } else {
    // Packed cells keep the per-cell branch: in a filling filter most cells are
    // already at or above the kernel, and a skipped store beats a register-resident
    // word (measured 55 vs 75 ns per 43-cell kernel).
    for (uint64_t j = 0; j < n; ++j) Cells<W>::Raise(words, first + j, codes[j]);
  }
}

template <int W>
bool TestCells(const uint64_t* words, const uint64_t* pos, int k, uint64_t m, uint64_t max,
               const KernelTables& t) {
  // Peaks first: this is the classic filter's test, and it rejects most non-members
  // after one or two cells.
  for (int i = 0; i < k; ++i) {
    if (Cells<W>::Get(words, pos[i]) != max) return false;
  }
  for (int i = 0; i < k; ++i) {
    const uint64_t p = pos[i];
    const uint64_t e = t.reach[i];
    if (p >= e && p + e < m) {
      if (!RunAtLeast<W>(words, p - e, t.full + t.full_offset[i], 2 * e + 1)) return false;
      continue;
    }
    const uint64_t* codes = t.half + t.offset[i];
    for (uint64_t d = 1; d <= e; ++d) {
      const uint64_t code = codes[d];
      const uint64_t right = p + d >= m ? p + d - m : p + d;
      const uint64_t left = p >= d ? p - d : p + m - d;
      if (Cells<W>::Get(words, right) < code || Cells<W>::Get(words, left) < code) return false;
    }
  }
  return true;
}

template <int W>
void InsertCells(uint64_t* words, const uint64_t* pos, int k, uint64_t m, const KernelTables& t) {
  for (int i = 0; i < k; ++i) {
    const uint64_t p = pos[i];
    const uint64_t e = t.reach[i];
    if (p >= e && p + e < m) {
      RaiseRun<W>(words, p - e, t.full + t.full_offset[i], 2 * e + 1);
      continue;
    }
    const uint64_t* codes = t.half + t.offset[i];
    Cells<W>::Raise(words, p, codes[0]);
    for (uint64_t d = 1; d <= e; ++d) {
      Cells<W>::Raise(words, p + d >= m ? p + d - m : p + d, codes[d]);
      Cells<W>::Raise(words, p >= d ? p - d : p + m - d, codes[d]);
    }
  }
}

}  // namespace

base::Result<GaussianBloom> GaussianBloom::Create(const GaussianParams& params) {
  if (params.cells == 0) return base::InvalidArgument("cells must be at least 1 (got 0)");
  if (params.cells > kMaxGaussianCells) {
    return base::InvalidArgument("cells must be at most 2^40 (got " + std::to_string(params.cells) +
                                 ")");
  }
  if (params.hashes < kMinHashes || params.hashes > kMaxHashes) {
    return base::InvalidArgument("hashes must be in " + std::to_string(kMinHashes) + ".." +
                                 std::to_string(kMaxHashes) + " (got " +
                                 std::to_string(params.hashes) + ")");
  }
  if (!ValidCellBits(params.cell_bits)) {
    return base::InvalidArgument("cell bits must be 4, 8 or 64 (got " +
                                 std::to_string(params.cell_bits) + ")");
  }
  if (params.exp != ExpKind::kExact && params.exp != ExpKind::kFast) {
    return base::InvalidArgument("exponential must be exact or fast");
  }
  return GaussianBloom(params);
}

GaussianBloom::GaussianBloom(const GaussianParams& params)
    : params_(params),
      words_((params.cells * static_cast<uint64_t>(params.cell_bits) + 63) / 64, 0) {
  BuildKernels();
}

void GaussianBloom::BuildKernels() {
  const int bits = params_.cell_bits;
  const uint64_t max = MaxCellCode(bits);
  // An offset d and d - m reach the same cell once 3 sigma exceeds half the field.
  const uint64_t half = (params_.cells - 1) / 2;
  for (int i = 1; i <= params_.hashes; ++i) {
    const auto radius =
        static_cast<uint32_t>(std::min<uint64_t>(3 * static_cast<uint64_t>(i), half));
    offset_.push_back(static_cast<uint32_t>(kernel_.size()));
    radius_.push_back(radius);
    kernel_.push_back(max);  // the peak is exactly the maximum, whatever exp gives at 0
    const double two_sigma_sq = 2.0 * i * i;
    for (uint32_t d = 1; d <= radius; ++d) {
      const double y = -static_cast<double>(d) * d / two_sigma_sq;
      const double v = params_.exp == ExpKind::kFast ? FastExp(y) : std::exp(y);
      // Off the peak the Gaussian is below 1; the approximation may not be, and a
      // value at 1 there would add a bit to the underlying filter.
      kernel_.push_back(EncodeCell(std::min(v, std::nextafter(1.0, 0.0)), bits));
    }
    // The reach: the last offset whose code is above 0 (the codes only decrease), and
    // the kernel spelled out over [-reach, reach] for the contiguous passes.
    const uint64_t* codes = kernel_.data() + offset_.back();
    uint32_t reach = radius;
    while (reach > 0 && codes[reach] == 0) --reach;
    reach_.push_back(reach);
    full_offset_.push_back(static_cast<uint32_t>(full_.size()));
    for (uint32_t d = reach; d > 0; --d) full_.push_back(codes[d]);
    for (uint32_t d = 0; d <= reach; ++d) full_.push_back(codes[d]);
  }
}

KernelTables GaussianBloom::Tables() const {
  return {kernel_.data(), offset_.data(), full_.data(), full_offset_.data(), reach_.data()};
}

bool GaussianBloom::MayContainMixed(uint64_t mixed) const {
  uint64_t pos[kMaxHashes];
  const int k = params_.hashes;
  const uint64_t m = params_.cells;
  Positions(mixed, k, m, words_.data(), params_.cell_bits, nullptr, pos);
  const uint64_t max = MaxCellCode(params_.cell_bits);
  switch (params_.cell_bits) {
    case 4:
      return TestCells<4>(words_.data(), pos, k, m, max, Tables());
    case 8:
      return TestCells<8>(words_.data(), pos, k, m, max, Tables());
    default:
      return TestCells<64>(words_.data(), pos, k, m, max, Tables());
  }
}

void GaussianBloom::InsertMixed(uint64_t mixed) {
  uint64_t pos[kMaxHashes];
  const int k = params_.hashes;
  const uint64_t m = params_.cells;
  Positions(mixed, k, m, words_.data(), params_.cell_bits, reach_.data(), pos);
  switch (params_.cell_bits) {
    case 4:
      InsertCells<4>(words_.data(), pos, k, m, Tables());
      break;
    case 8:
      InsertCells<8>(words_.data(), pos, k, m, Tables());
      break;
    default:
      InsertCells<64>(words_.data(), pos, k, m, Tables());
      break;
  }
  dirty_ = true;
}

void GaussianBloom::Prefetch(IdHash hash) const {
  const uint64_t cell = CellPosition(Mix(hash), 1, params_.cells);
  PrefetchLine(&words_[cell * static_cast<uint64_t>(params_.cell_bits) / 64]);
}

void GaussianBloom::Reset(uint64_t new_seed) {
  if (dirty_) std::fill(words_.begin(), words_.end(), 0);
  dirty_ = false;
  inserted_ = 0;
  params_.seed = new_seed;
}

uint64_t GaussianBloom::CellCode(uint64_t cell) const {
  switch (params_.cell_bits) {
    case 4:
      return Cells<4>::Get(words_.data(), cell);
    case 8:
      return Cells<8>::Get(words_.data(), cell);
    default:
      return Cells<64>::Get(words_.data(), cell);
  }
}

double GaussianBloom::CellValue(uint64_t cell) const {
  return DecodeCell(CellCode(cell), params_.cell_bits);
}

uint64_t GaussianBloom::KernelCode(int i, uint64_t d) const {
  if (i < 1 || i > params_.hashes || d > radius_[i - 1]) return 0;
  return kernel_[offset_[i - 1] + d];
}

double GaussianBloom::FillRatio() const {
  const uint64_t max = MaxCellCode(params_.cell_bits);
  uint64_t peaks = 0;
  for (uint64_t c = 0; c < params_.cells; ++c) peaks += CellCode(c) == max ? 1 : 0;
  return static_cast<double>(peaks) / static_cast<double>(params_.cells);
}

void GaussianBloom::Restore(std::span<const uint64_t> words, uint64_t inserted) {
  std::copy(words.begin(), words.end(), words_.begin());
  inserted_ = inserted;
  dirty_ = true;
}

}  // namespace oncecount::filter
