// BlockedBloom: a cache-line-blocked Bloom filter, the constituent filter of every
// Forgetful Bloom Filter and the whole of the `bloom` dedup mode.
//
// Each id maps to one 64-byte block (512 bits) and sets k bits inside it, so a
// test or an insert touches exactly one cache line. The block and the bits come
// from SeededMix(id hash, seed): two filters with different seeds make
// independent choices for the same id.
//
//   mixed = SeededMix(hash, seed)
//   block = (mixed >> 32) * num_blocks >> 32        multiply-shift, no division
//   x     = low 32 bits of mixed; repeat k times:   x *= 0x9E3779B9 (odd, so a
//           bijection); bit = top 9 bits of x       one 9-bit position per round
//
// Thread-safety: a BlockedBloom is owned by one thread (its shard's). Const
// methods may run concurrently with each other, never with Insert or Clear.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "processor/filter/bit_buffer.h"
#include "processor/filter/id_hash.h"
#include "processor/filter/result.h"

namespace oncecount::filter {

inline constexpr uint32_t kBlockBits = 512;
inline constexpr uint32_t kBlockBytes = kBlockBits / 8;
inline constexpr uint32_t kWordsPerBlock = kBlockBits / 64;
inline constexpr int kMinHashes = 1;
inline constexpr int kMaxHashes = 30;
// Block indices are 32-bit (multiply-shift range reduction): 2^32 blocks = 256 GiB.
inline constexpr uint64_t kMaxBlocks = uint64_t{1} << 32;

// The hot-path view of one blocked filter: raw words plus what is needed to map
// an id to its bits. Cheap to copy; valid while the owning BlockedBloom lives and
// is not resized.
struct BloomView {
  uint64_t* words = nullptr;
  uint64_t num_blocks = 0;
  uint64_t seed = 0;
  uint32_t hashes = 0;

  const uint64_t* BlockFor(uint64_t mixed) const {
    const uint64_t block = ((mixed >> 32) * num_blocks) >> 32;
    return words + block * kWordsPerBlock;
  }
  uint64_t* BlockFor(uint64_t mixed) {
    const uint64_t block = ((mixed >> 32) * num_blocks) >> 32;
    return words + block * kWordsPerBlock;
  }

  void Prefetch(IdHash hash) const { __builtin_prefetch(BlockFor(SeededMix(hash, seed)), 1, 3); }

  bool MayContain(IdHash hash) const {
    const uint64_t mixed = SeededMix(hash, seed);
    const uint64_t* block = BlockFor(mixed);
    uint32_t x = static_cast<uint32_t>(mixed);
    for (uint32_t i = 0; i < hashes; ++i) {
      x *= 0x9E3779B9u;
      const uint32_t bit = x >> 23;
      if (((block[bit >> 6] >> (bit & 63)) & 1) == 0) return false;
    }
    return true;
  }

  void Insert(IdHash hash) {
    const uint64_t mixed = SeededMix(hash, seed);
    uint64_t* block = BlockFor(mixed);
    uint32_t x = static_cast<uint32_t>(mixed);
    for (uint32_t i = 0; i < hashes; ++i) {
      x *= 0x9E3779B9u;
      const uint32_t bit = x >> 23;
      block[bit >> 6] |= uint64_t{1} << (bit & 63);
    }
  }
};

class BlockedBloom {
 public:
  // `bits` is rounded up to whole 512-bit blocks. Errors name the bad parameter.
  static Result<BlockedBloom> Create(uint64_t bits, int hashes, uint64_t seed);

  BlockedBloom(BlockedBloom&&) noexcept = default;
  BlockedBloom& operator=(BlockedBloom&&) noexcept = default;

  bool MayContain(IdHash hash) const { return view_.MayContain(hash); }
  void Insert(IdHash hash) {
    view_.Insert(hash);
    ++inserted_;
    dirty_ = true;
  }
  void Prefetch(IdHash hash) const { view_.Prefetch(hash); }

  // Empties the filter and gives it a new seed (a recycled filter must not
  // correlate with its previous life).
  void Reset(uint64_t new_seed);

  uint64_t bits() const { return view_.num_blocks * kBlockBits; }
  int hashes() const { return static_cast<int>(view_.hashes); }
  uint64_t seed() const { return view_.seed; }
  // Number of Insert calls since the last Reset: the `l` of the paper's Equation 1.
  uint64_t inserted() const { return inserted_; }
  // Fraction of bits set; O(bits), for statistics only.
  double FillRatio() const;

  const BloomView& view() const { return view_; }
  BloomView& view() { return view_; }
  std::span<const uint64_t> words() const {
    return {view_.words, view_.num_blocks * kWordsPerBlock};
  }

  // Replaces the contents (used by deserialization). `words` must match bits().
  void Restore(std::span<const uint64_t> words, uint64_t inserted);

 private:
  BlockedBloom(BitBuffer buffer, uint64_t num_blocks, int hashes, uint64_t seed);

  BitBuffer buffer_;
  BloomView view_;
  uint64_t inserted_ = 0;
  bool dirty_ = false;  // some bit may be set: Reset must clear
};

}  // namespace oncecount::filter
