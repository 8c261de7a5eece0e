// GaussianBloom: the Gaussian Bloom filter (seeds/001, Definition 2), a Bloom filter
// whose cells hold small numbers in [0, 1] instead of bits, so that a cell also
// records which hash function set it.
//
// Inserting an id writes, for each hash function i = 1..k, the normalized Gaussian
// exp(-d^2 / (2 i^2)) around the cell h_i(id) (d: cyclic distance in cells, sigma =
// i), each cell keeping the maximum of what it held and what is written. Testing an
// id computes the same signature and answers "maybe present" only if every cell is
// at least the signature's value there. Cells farther than 3 sigma from h_i(id) are
// skipped (the 3-sigma rule: the Gaussian is below 0.0045 there), so an insert or a
// test touches sum(6i + 1) cells, independent of m.
//
// Cells are kept as doubles (the reference) or coded in 4 or 8 bits (Sec. 3.2): the
// peak 1 is the all-ones code, any other value v the nearest of 0..2^B-2 to
// v * (2^B - 1), capped at 2^B - 2 so that no non-maximal value is ever coded as
// the peak. Coding is monotone, so comparisons in code space keep Lemma 1 (no false
// negatives) and Lemma 2 (every false positive is one of the underlying Bloom
// filter's): a cell is at the peak only where some id's h_i landed.
//
// The exponential is Schraudolph's approximation (Sec. 3.3) by default, or std::exp;
// insert and test use the same one, which is all correctness needs. The peak is
// exactly 1 and values beside it are capped below 1 whichever is used.
//
// UnderlyingBloom() extracts the classic Bloom filter (Definition 3): bit t is set
// iff cell t holds the peak. It equals ClassicBloom built from the same ids with
// the same positions (GaussianPositions).
//
// Thread-safety: owned by one thread; const methods may run concurrently with each
// other, never with Insert or Clear.
#pragma once

#include <cstdint>
#include <vector>

#include "processor/filter/id_hash.h"
#include "processor/filter/result.h"

namespace oncecount::filter {

enum class CellCoding : uint8_t { kDouble = 0, kBits4 = 4, kBits8 = 8 };

// The cell h_i(id) of hash function i (0-based here; sigma is i + 1), in [0, cells).
uint32_t GaussianPosition(IdHash hash, uint64_t seed, int i, uint32_t cells);

// The classic Bloom filter over the same positions: the baseline of Lemma 2 and of
// the paper's figures, and what UnderlyingBloom() must equal.
class ClassicBloom {
 public:
  ClassicBloom(uint32_t bits, int hashes, uint64_t seed)
      : bits_(bits), hashes_(hashes), seed_(seed), set_(bits, false) {}
  void Insert(IdHash hash);
  bool MayContain(IdHash hash) const;
  const std::vector<bool>& bits() const { return set_; }

 private:
  uint32_t bits_;
  int hashes_;
  uint64_t seed_;
  std::vector<bool> set_;
};

class GaussianBloom {
 public:
  static constexpr int kMaxHashes = 30;

  // cells >= 1, hashes in 1..kMaxHashes.
  static Result<GaussianBloom> Create(uint32_t cells, int hashes, CellCoding coding, uint64_t seed,
                                      bool fast_exp = true);

  void Insert(IdHash hash);
  bool MayContain(IdHash hash) const;
  void Clear();

  // Definition 3: bit t is set iff cell t holds the peak value.
  std::vector<bool> UnderlyingBloom() const;

  uint32_t cells() const { return cells_; }
  int hashes() const { return hashes_; }
  CellCoding coding() const { return coding_; }
  uint64_t seed() const { return seed_; }
  uint64_t inserted() const { return inserted_; }
  // Memory of the cells: cells * B bits (64 for doubles).
  uint64_t memory_bits() const;
  // Fraction of cells at the peak (the underlying filter's fill).
  double PeakFill() const;

  // The raw cells, for the state codec: values() for kDouble, codes() otherwise
  // (two 4-bit cells per byte, the lower-numbered in the low nibble).
  const std::vector<double>& values() const { return values_; }
  const std::vector<uint8_t>& codes() const { return codes_; }
  // Replaces the cells with ones read back; false (and nothing changed) when their
  // sizes do not fit this filter or a value is outside [0, 1].
  bool RestoreCells(std::vector<double> values, std::vector<uint8_t> codes, uint64_t inserted);

  // The code of value v in [0, 1] for `coding` (the identity's bit pattern for
  // kDouble is not used). Exposed for tests: codes are monotone, the peak 1 alone
  // gets the all-ones code.
  static uint32_t Encode(double v, CellCoding coding);
  // The signature's value at distance d from the peak of hash function i (0-based).
  double Signature(int i, uint32_t distance) const;

 private:
  GaussianBloom(uint32_t cells, int hashes, CellCoding coding, uint64_t seed, bool fast_exp);
  uint32_t Radius(int i) const;  // 3 sigma, at most (cells - 1) / 2
  uint32_t CellCode(uint32_t t) const;
  double CellValue(uint32_t t) const;

  uint32_t cells_;
  int hashes_;
  CellCoding coding_;
  uint64_t seed_;
  bool fast_exp_;
  uint64_t inserted_ = 0;
  std::vector<double> values_;  // kDouble
  std::vector<uint8_t> codes_;  // kBits8: one per byte; kBits4: two per byte, low first
};

}  // namespace oncecount::filter
