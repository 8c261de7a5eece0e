#include "processor/filter/gaussian_bloom.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace oncecount::filter {
namespace {

// Schraudolph (1999): a*y + b written into the high 32 bits of an IEEE-754 double
// is close to e^y (within a few percent) for |y| < 700. a = 2^20 / ln 2; b = 1023 *
// 2^20 - 60801, the shift that minimizes the RMS error.
double SchraudolphExp(double y) {
  const int64_t high = static_cast<int64_t>(1512775.3951951856 * y) + (1072693248 - 60801);
  const uint64_t bits = static_cast<uint64_t>(high) << 32;
  double out;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

// The largest double below 1: values beside a peak are capped here, so that only a
// hashed cell ever holds exactly 1 (the approximation can overshoot near the peak).
constexpr double kBelowPeak = 1.0 - 1.0 / 9007199254740992.0;  // 1 - 2^-53

}  // namespace

uint32_t GaussianPosition(IdHash hash, uint64_t seed, int i, uint32_t cells) {
  const uint64_t mixed = SeededMix(hash, seed + static_cast<uint64_t>(i) + 1);
  return static_cast<uint32_t>(((mixed >> 32) * cells) >> 32);
}

void ClassicBloom::Insert(IdHash hash) {
  for (int i = 0; i < hashes_; ++i) set_[GaussianPosition(hash, seed_, i, bits_)] = true;
}

bool ClassicBloom::MayContain(IdHash hash) const {
  for (int i = 0; i < hashes_; ++i) {
    if (!set_[GaussianPosition(hash, seed_, i, bits_)]) return false;
  }
  return true;
}

Result<GaussianBloom> GaussianBloom::Create(uint32_t cells, int hashes, CellCoding coding,
                                            uint64_t seed, bool fast_exp) {
  if (cells < 1) return Error{"a Gaussian Bloom filter needs at least one cell"};
  if (hashes < 1 || hashes > kMaxHashes) {
    return Error{"hashes must be in 1.." + std::to_string(kMaxHashes) + ", got " +
                 std::to_string(hashes)};
  }
  if (coding != CellCoding::kDouble && coding != CellCoding::kBits4 &&
      coding != CellCoding::kBits8) {
    return Error{"cell coding must be 4 bits, 8 bits or double"};
  }
  return GaussianBloom(cells, hashes, coding, seed, fast_exp);
}

GaussianBloom::GaussianBloom(uint32_t cells, int hashes, CellCoding coding, uint64_t seed,
                             bool fast_exp)
    : cells_(cells), hashes_(hashes), coding_(coding), seed_(seed), fast_exp_(fast_exp) {
  Clear();
}

void GaussianBloom::Clear() {
  inserted_ = 0;
  values_.clear();
  codes_.clear();
  switch (coding_) {
    case CellCoding::kDouble:
      values_.assign(cells_, 0.0);
      break;
    case CellCoding::kBits8:
      codes_.assign(cells_, 0);
      break;
    case CellCoding::kBits4:
      codes_.assign((cells_ + 1) / 2, 0);
      break;
  }
}

uint32_t GaussianBloom::Encode(double v, CellCoding coding) {
  const uint32_t peak = (uint32_t{1} << static_cast<int>(coding)) - 1;
  if (v >= 1.0) return peak;
  if (!(v > 0.0)) return 0;
  // Sec. 3.2: scale by alpha = (2^B - 1) / 2^B and read B binary digits, i.e. round
  // v * (2^B - 1); the all-ones pattern is reserved for the peak.
  const auto code = static_cast<uint32_t>(std::lround(v * peak));
  return std::min(code, peak - 1);
}

uint32_t GaussianBloom::Radius(int i) const {
  const uint32_t three_sigma = 3 * static_cast<uint32_t>(i + 1);
  return std::min(three_sigma, (cells_ - 1) / 2);
}

double GaussianBloom::Signature(int i, uint32_t distance) const {
  if (distance == 0) return 1.0;
  const double sigma = i + 1;
  const double d = distance;
  const double y = -(d * d) / (2 * sigma * sigma);
  return std::min(fast_exp_ ? SchraudolphExp(y) : std::exp(y), kBelowPeak);
}

uint32_t GaussianBloom::CellCode(uint32_t t) const {
  if (coding_ == CellCoding::kBits8) return codes_[t];
  return (codes_[t / 2] >> ((t % 2) * 4)) & 0xF;
}

double GaussianBloom::CellValue(uint32_t t) const {
  return values_[t];
}

void GaussianBloom::Insert(IdHash hash) {
  ++inserted_;
  for (int i = 0; i < hashes_; ++i) {
    const uint32_t center = GaussianPosition(hash, seed_, i, cells_);
    const uint32_t radius = Radius(i);
    for (uint32_t d = 0; d <= radius; ++d) {
      const double v = Signature(i, d);
      const uint32_t code = coding_ == CellCoding::kDouble ? 0 : Encode(v, coding_);
      for (const uint32_t t : {(center + d) % cells_, (center + cells_ - d % cells_) % cells_}) {
        switch (coding_) {
          case CellCoding::kDouble:
            values_[t] = std::max(values_[t], v);
            break;
          case CellCoding::kBits8:
            codes_[t] = static_cast<uint8_t>(std::max<uint32_t>(codes_[t], code));
            break;
          case CellCoding::kBits4: {
            const uint32_t shift = (t % 2) * 4;
            const uint32_t now = (codes_[t / 2] >> shift) & 0xF;
            if (code > now) {
              codes_[t / 2] =
                  static_cast<uint8_t>((codes_[t / 2] & ~(0xF << shift)) | (code << shift));
            }
            break;
          }
        }
        if (d == 0) break;  // one cell at the peak
      }
    }
  }
}

bool GaussianBloom::MayContain(IdHash hash) const {
  // Peaks first: a miss there is a miss of the underlying Bloom filter, the common
  // case, and costs k cells instead of the whole signature.
  for (int i = 0; i < hashes_; ++i) {
    const uint32_t t = GaussianPosition(hash, seed_, i, cells_);
    const bool peak =
        coding_ == CellCoding::kDouble ? CellValue(t) >= 1.0 : CellCode(t) == Encode(1.0, coding_);
    if (!peak) return false;
  }
  for (int i = 0; i < hashes_; ++i) {
    const uint32_t center = GaussianPosition(hash, seed_, i, cells_);
    const uint32_t radius = Radius(i);
    for (uint32_t d = 1; d <= radius; ++d) {
      const double v = Signature(i, d);
      for (const uint32_t t : {(center + d) % cells_, (center + cells_ - d % cells_) % cells_}) {
        const bool covered =
            coding_ == CellCoding::kDouble ? CellValue(t) >= v : CellCode(t) >= Encode(v, coding_);
        if (!covered) return false;
      }
    }
  }
  return true;
}

std::vector<bool> GaussianBloom::UnderlyingBloom() const {
  std::vector<bool> bits(cells_);
  for (uint32_t t = 0; t < cells_; ++t) {
    bits[t] =
        coding_ == CellCoding::kDouble ? CellValue(t) >= 1.0 : CellCode(t) == Encode(1.0, coding_);
  }
  return bits;
}

bool GaussianBloom::RestoreCells(std::vector<double> values, std::vector<uint8_t> codes,
                                 uint64_t inserted) {
  if (values.size() != values_.size() || codes.size() != codes_.size()) return false;
  for (const double v : values) {
    if (!(v >= 0.0 && v <= 1.0)) return false;
  }
  values_ = std::move(values);
  codes_ = std::move(codes);
  inserted_ = inserted;
  return true;
}

uint64_t GaussianBloom::memory_bits() const {
  return uint64_t{cells_} * (coding_ == CellCoding::kDouble ? 64 : static_cast<uint64_t>(coding_));
}

double GaussianBloom::PeakFill() const {
  const auto bits = UnderlyingBloom();
  return static_cast<double>(std::count(bits.begin(), bits.end(), true)) / cells_;
}

}  // namespace oncecount::filter
