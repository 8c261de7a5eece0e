// BlockedBloom: a cache-line-blocked Bloom filter, the constituent filter of every
// Forgetful Bloom Filter and the whole of the `bloom` dedup mode.
//
// Each id maps to one 64-byte block (512 bits) and sets k bits inside it, so a
// test or an insert touches exactly one cache line. A 1024-bit block (two adjacent
// lines, 128-byte aligned) is the other choice: the same memory holds ids at a
// lower false-positive rate (less variance in ids per block) for a second line
// that the adjacent-line prefetcher usually brings along. The block and the bits
// come from FilterMix(id hash, seed): two filters with different seeds make
// independent choices for the same id.
//
//   mixed = FilterMix(hash, seed)
//   block = (mixed >> 32) * num_blocks >> 32        multiply-shift, no division
//   x     = low 32 bits of mixed                    bit j = top 9 (10) bits of
//                                                   x * kBitMultipliers[j]
// The k products are independent of each other, so they issue one per cycle
// instead of waiting on a chain. (Double hashing, a + j * step, is cheaper still but
// measured 2x the false-positive rate of independent positions at k = 11 in a
// 512-bit block.)
//
// Thread-safety: a BlockedBloom is owned by one thread (its shard's). Const
// methods may run concurrently with each other, never with Insert or Clear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "processor/base/result.h"
#include "processor/filter/bit_buffer.h"
#include "processor/filter/id_hash.h"

namespace oncecount::filter {

// The default block: one cache line. Supported: 512 and 1024.
inline constexpr uint32_t kBlockBits = 512;
inline constexpr int kMinHashes = 1;
inline constexpr int kMaxHashes = 30;
// Block indices are 32-bit (multiply-shift range reduction): 2^32 blocks = 256 GiB.
inline constexpr uint64_t kMaxBlocks = uint64_t{1} << 32;

// Odd 32-bit constants, one per hash function: bit j of an id is the top bits of
// x * kBitMultipliers[j]. Part of the state format: changing them changes every
// filter's bits.
inline constexpr uint32_t kBitMultipliers[kMaxHashes] = {
    0xF0480FF9u, 0x86DC283Du, 0x2CB6916Du, 0x47EAA099u, 0x593942A5u, 0xCA118783u,
    0x9BF13331u, 0x1509BB0Bu, 0x56670B15u, 0x12E1BC77u, 0x01088475u, 0xF5EC52EDu,
    0x2E416789u, 0x2909406Du, 0x5C906159u, 0x59BA1B0Du, 0x2BB29977u, 0x2A095EE9u,
    0x985FB4E7u, 0x5D32FE61u, 0x64C7A501u, 0x59E2D153u, 0x58151A99u, 0x9A1E40B5u,
    0xE693AE2Du, 0x1D8A4EADu, 0x3EAABE17u, 0x68B4AEF7u, 0xEB04B39Bu, 0x13E783E7u,
};

// The hot-path view of one blocked filter: raw words plus what is needed to map
// an id to its bits. Cheap to copy; valid while the owning BlockedBloom lives and
// is not resized. The *Mixed variants take Mix(hash), so a caller that probes the
// same id twice (test, then insert) mixes once.
struct BloomView {
  uint64_t* words = nullptr;
  uint64_t num_blocks = 0;
  uint64_t seed = 0;
  uint32_t hashes = 0;
  uint32_t block_word_shift = 3;  // log2(64-bit words per block): 3 or 4
  uint32_t bit_shift = 23;        // 32 - log2(block bits): 23 or 22

  const uint64_t* BlockFor(uint64_t mixed) const {
    const uint64_t block = ((mixed >> 32) * num_blocks) >> 32;
    return words + (block << block_word_shift);
  }
  uint64_t* BlockFor(uint64_t mixed) {
    const uint64_t block = ((mixed >> 32) * num_blocks) >> 32;
    return words + (block << block_word_shift);
  }

  uint64_t Mix(IdHash hash) const { return FilterMix(hash, seed); }

  void PrefetchMixed(uint64_t mixed) const {
    const uint64_t* block = BlockFor(mixed);
    PrefetchLine(block);
    if (block_word_shift > 3) PrefetchLine(block + 8);
  }

  // Two stages. A non-member of a half-full filter fails a given bit half the
  // time, so the first kFirstStageBits bits, tested without branches, reject it
  // with probability 1 - 2^-4; only the rest (one in sixteen) pays for all k bits.
  // One predictable branch instead of an early exit per bit (which mispredicts
  // about once per test) or all k bits every time.
  static constexpr uint32_t kFirstStageBits = 4;

  bool MayContainMixed(uint64_t mixed) const {
    const uint64_t* block = BlockFor(mixed);
    const auto x = static_cast<uint32_t>(mixed);
    const uint32_t first = hashes < kFirstStageBits ? hashes : kFirstStageBits;
    uint64_t all = 1;
    for (uint32_t i = 0; i < first; ++i) {
      const uint32_t bit = (x * kBitMultipliers[i]) >> bit_shift;
      all &= block[bit >> 6] >> (bit & 63);
    }
    if ((all & 1) == 0) return false;
    for (uint32_t i = first; i < hashes; ++i) {
      const uint32_t bit = (x * kBitMultipliers[i]) >> bit_shift;
      all &= block[bit >> 6] >> (bit & 63);
    }
    return (all & 1) != 0;
  }

  void InsertMixed(uint64_t mixed) {
    uint64_t* block = BlockFor(mixed);
    const auto x = static_cast<uint32_t>(mixed);
    for (uint32_t i = 0; i < hashes; ++i) {
      const uint32_t bit = (x * kBitMultipliers[i]) >> bit_shift;
      block[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
  }

  void Prefetch(IdHash hash) const { PrefetchMixed(Mix(hash)); }
  bool MayContain(IdHash hash) const { return MayContainMixed(Mix(hash)); }
  void Insert(IdHash hash) { InsertMixed(Mix(hash)); }
};

class BlockedBloom {
 public:
  // `bits` is rounded up to whole blocks. Errors name the bad parameter.
  static base::Result<BlockedBloom> Create(uint64_t bits, int hashes, uint64_t seed,
                                           uint32_t block_bits = kBlockBits);

  BlockedBloom(BlockedBloom&&) noexcept = default;
  BlockedBloom& operator=(BlockedBloom&&) noexcept = default;

  bool MayContain(IdHash hash) const { return view_.MayContain(hash); }
  void Insert(IdHash hash) {
    view_.Insert(hash);
    ++inserted_;
    dirty_ = true;
  }
  void Prefetch(IdHash hash) const { view_.Prefetch(hash); }
  // For callers that set the bits through view() themselves.
  void CountInsert() {
    ++inserted_;
    dirty_ = true;
  }

  // Empties the filter and gives it a new seed (a recycled filter must not
  // correlate with its previous life).
  void Reset(uint64_t new_seed);

  uint64_t bits() const { return view_.num_blocks * block_bits(); }
  uint32_t block_bits() const { return 64u << view_.block_word_shift; }
  int hashes() const { return static_cast<int>(view_.hashes); }
  uint64_t seed() const { return view_.seed; }
  // Number of Insert calls since the last Reset: the `l` of the paper's Equation 1.
  uint64_t inserted() const { return inserted_; }
  // Fraction of bits set; O(bits), for statistics only.
  double FillRatio() const;

  const BloomView& view() const { return view_; }
  BloomView& view() { return view_; }
  std::span<const uint64_t> words() const {
    return {view_.words, view_.num_blocks << view_.block_word_shift};
  }

  // Replaces the contents (used by deserialization). `words` must match bits().
  void Restore(std::span<const uint64_t> words, uint64_t inserted);

 private:
  BlockedBloom(BitBuffer buffer, uint64_t num_blocks, int hashes, uint64_t seed,
               uint32_t block_bits);

  BitBuffer buffer_;
  BloomView view_;
  uint64_t inserted_ = 0;
  bool dirty_ = false;  // some bit may be set: Reset must clear
};

}  // namespace oncecount::filter
