// GaussianBloom: the Gaussian Bloom filter of Werner & Schoenfeld (Definition 2):
// m cells instead of m bits. Inserting an id writes, for each hash function i = 1..k,
// a Gaussian normalized to peak 1 with mean h_i(id) and sigma = i over the cells
// (cyclic), every cell keeping the maximum of what was written to it; an id tests
// positive iff every cell is at least the id's own signature there. The extra
// information is in the non-peak cells: they say which hash function (sigma) set a
// neighbouring peak, so a query whose peaks were all set, but by the wrong hash
// functions, is rejected (Lemma 2: its false positives are a subset of the classic
// filter's).
//
// As built:
//  - positions come from cell_positions.h, shared with ClassicBloom (an experiment),
//    so UnderlyingBloom (Definition 3: the cells at the peak value) equals a
//    ClassicBloom of the same cells, hashes and seed fed the same ids;
//  - cells are B-bit codes (B = 4 or 8, Sec. 3.2) or doubles (B = 64), coded as in
//    cell_coding.h, never rounding a non-peak value up to the peak;
//  - the 3-sigma rule (Sec. 3.3): kernel i covers offsets |d| <= 3i (at most
//    (m - 1) / 2, so no cell is reached twice) and stops early at the first offset
//    whose code is 0;
//  - since sigma = i and offsets are whole cells, the kernel values depend on (i, d)
//    only: they are computed once per filter, with std::exp or with the paper's fast
//    exponential (FastExp), and inserts and tests read a table. The fast exponential
//    therefore changes the values (and the false-positive rate, a little), not the
//    speed; the paper's speed-up is subsumed by the table.
//
// Test checks the k peaks first (the classic filter's test, one cell each) and the
// kernels' flanks only when every peak is set.
//
// Thread-safety: owned by one thread. Const methods may run concurrently with each
// other, never with Insert, Reset or Restore.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "processor/base/enum_names.h"
#include "processor/base/result.h"
#include "processor/filter/bloom/cell_positions.h"
#include "processor/filter/id_hash.h"

namespace oncecount::filter {

enum class ExpKind : uint8_t { kExact = 0, kFast = 1 };

inline constexpr std::array<base::EnumName<ExpKind>, 2> kExpKindNames = {{
    {ExpKind::kFast, "fast"},
    {ExpKind::kExact, "exact"},
}};

// Cells beyond this are refused (2^40 cells of 8 bytes is 8 TiB).
inline constexpr uint64_t kMaxGaussianCells = uint64_t{1} << 40;

struct GaussianParams {
  uint64_t cells = 0;
  int hashes = 0;
  int cell_bits = 8;  // 4, 8 or 64 (double)
  ExpKind exp = ExpKind::kFast;
  uint64_t seed = 0;
};

struct GaussianView;

// The tabulated kernels, for the insert and test loops (gaussian_bloom.cc).
struct KernelTables {
  const uint64_t* half;         // half + offset[i]: codes at offsets 0..radius
  const uint32_t* offset;       //
  const uint64_t* full;         // full + full_offset[i]: codes at -reach..reach
  const uint32_t* full_offset;  //
  const uint32_t* reach;        // last offset with a code above 0
};

class GaussianBloom {
 public:
  // Errors name the bad parameter.
  static base::Result<GaussianBloom> Create(const GaussianParams& params);

  GaussianBloom(GaussianBloom&&) noexcept = default;
  GaussianBloom& operator=(GaussianBloom&&) noexcept = default;
  GaussianBloom(const GaussianBloom&) = default;
  GaussianBloom& operator=(const GaussianBloom&) = default;

  uint64_t Mix(IdHash hash) const { return CellMix(hash, params_.seed); }
  bool MayContain(IdHash hash) const { return MayContainMixed(Mix(hash)); }
  bool MayContainMixed(uint64_t mixed) const;
  void Insert(IdHash hash) {
    InsertMixed(Mix(hash));
    CountInsert();
  }
  // Writes the id's signature without counting it (the FBF counts separately).
  void InsertMixed(uint64_t mixed);
  void CountInsert() {
    ++inserted_;
    dirty_ = true;
  }
  // Brings the cell of the first peak toward the cache (the other peaks are
  // elsewhere in the field; one line is what a blocked filter would fetch).
  void Prefetch(IdHash hash) const;

  // Empties the filter and gives it a new seed.
  void Reset(uint64_t new_seed);

  // The handle the FBF's hot path keeps (valid while this filter does not move).
  GaussianView view();

  uint64_t cells() const { return params_.cells; }
  int hashes() const { return params_.hashes; }
  int cell_bits() const { return params_.cell_bits; }
  ExpKind exp() const { return params_.exp; }
  uint64_t seed() const { return params_.seed; }
  const GaussianParams& params() const { return params_; }
  // Memory of the cells: cells x cell bits.
  uint64_t bits() const { return params_.cells * static_cast<uint64_t>(params_.cell_bits); }
  uint64_t inserted() const { return inserted_; }
  // Fraction of cells at the peak (the underlying filter's fill); O(cells).
  double FillRatio() const;

  // The code of one cell (cell_coding.h) and the value it stands for.
  uint64_t CellCode(uint64_t cell) const;
  double CellValue(uint64_t cell) const;
  // The code hash function i (1-based) writes at offset d >= 0 from its peak; 0
  // beyond the kernel's reach.
  uint64_t KernelCode(int i, uint64_t d) const;

  // Cells packed into words (64 / cell_bits per word, cell 0 in the low bits).
  std::span<const uint64_t> words() const { return words_; }
  // Replaces the contents (deserialization); `words` must match words().size().
  void Restore(std::span<const uint64_t> words, uint64_t inserted);

 private:
  explicit GaussianBloom(const GaussianParams& params);
  void BuildKernels();
  KernelTables Tables() const;

  GaussianParams params_;
  std::vector<uint64_t> words_;
  // kernel_[offset_[i - 1] + d] = code of hash i at offset d, d = 0..radius_[i - 1].
  std::vector<uint64_t> kernel_;
  std::vector<uint32_t> offset_;
  std::vector<uint32_t> radius_;
  std::vector<uint64_t> full_;
  std::vector<uint32_t> full_offset_;
  std::vector<uint32_t> reach_;
  uint64_t inserted_ = 0;
  bool dirty_ = false;
};

// The FBF's hot-path handle on one GaussianBloom, the counterpart of BloomView.
struct GaussianView {
  GaussianBloom* filter = nullptr;

  uint64_t Mix(IdHash hash) const { return filter->Mix(hash); }
  bool MayContain(IdHash hash) const { return filter->MayContain(hash); }
  bool MayContainMixed(uint64_t mixed) const { return filter->MayContainMixed(mixed); }
  void InsertMixed(uint64_t mixed) const { filter->InsertMixed(mixed); }
  void Prefetch(IdHash hash) const { filter->Prefetch(hash); }
};

inline GaussianView GaussianBloom::view() {
  return GaussianView{this};
}

}  // namespace oncecount::filter
