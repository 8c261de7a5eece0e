// Cell positions h_1(e) .. h_k(e) of the Gaussian Bloom filter and of the classic
// (unblocked) Bloom filter it is compared with: both call these, so that the
// underlying filter of a Gaussian filter (Definition 3 of Werner & Schoenfeld) and a
// classic filter built from the same ids and seed are the same bits.
//
// Unlike BlockedBloom, positions spread over the whole field: the Gaussian kernels
// need neighbouring cells, and the paper's construction (and its Lemma 2) is stated
// for k independent positions over m cells.
//
//   mixed = CellMix(hash, seed)                       once per id and filter
//   h_i   = SeededMix(mixed, i) * m >> 64             i = 1..k, multiply-shift
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>

#include "processor/filter/id_hash.h"

namespace oncecount::filter {

inline uint64_t CellMix(IdHash hash, uint64_t seed) {
  return SeededMix(hash, seed);
}

// Hash function i (1-based, as in the paper: its index is the kernel's sigma) over
// `cells` cells.
inline uint64_t CellPosition(uint64_t mixed, int i, uint64_t cells) {
  __extension__ using U128 = unsigned __int128;  // GCC and Clang; -Wpedantic-clean
  const uint64_t h = SeededMix(IdHash{mixed}, static_cast<uint64_t>(i));
  return static_cast<uint64_t>((static_cast<U128>(h) * cells) >> 64);
}

}  // namespace oncecount::filter
