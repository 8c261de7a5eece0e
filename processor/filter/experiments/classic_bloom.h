// ClassicBloom: the textbook Bloom filter (Definition 1 of the Gaussian Bloom filter
// paper) over m bits with positions from cell_positions.h. It is the reference the
// Gaussian Bloom filter is compared with, and the filter UnderlyingBloom returns; the
// service's filters are BlockedBloom (one cache line per id), not this. An
// experiment: it lives in processor/filter/experiments/.
//
// Thread-safety: owned by one thread; const methods may run concurrently with each
// other, never with Insert or Set.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "processor/base/result.h"
#include "processor/filter/bloom/cell_positions.h"
#include "processor/filter/bloom/gaussian_bloom.h"
#include "processor/filter/id_hash.h"

namespace oncecount::filter {

class ClassicBloom {
 public:
  // bits >= 1, hashes in kMinHashes..kMaxHashes (blocked_bloom.h).
  static base::Result<ClassicBloom> Create(uint64_t bits, int hashes, uint64_t seed);

  bool MayContain(IdHash hash) const;
  void Insert(IdHash hash);

  bool Test(uint64_t bit) const { return (words_[bit >> 6] >> (bit & 63)) & 1; }
  void Set(uint64_t bit) { words_[bit >> 6] |= uint64_t{1} << (bit & 63); }

  uint64_t bits() const { return bits_; }
  int hashes() const { return hashes_; }
  uint64_t seed() const { return seed_; }
  uint64_t CountSet() const;
  std::span<const uint64_t> words() const { return words_; }

  friend bool operator==(const ClassicBloom&, const ClassicBloom&) = default;

 private:
  ClassicBloom(uint64_t bits, int hashes, uint64_t seed);

  uint64_t bits_ = 0;
  int hashes_ = 0;
  uint64_t seed_ = 0;
  std::vector<uint64_t> words_;
};

// Definition 3 of the Gaussian Bloom filter paper: the classic filter of the cells
// at the peak value. Its false positives include every one of `g` (Lemma 2).
ClassicBloom UnderlyingBloom(const GaussianBloom& g);

}  // namespace oncecount::filter
