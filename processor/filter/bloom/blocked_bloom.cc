#include "processor/filter/bloom/blocked_bloom.h"

#include <algorithm>
#include <bit>
#include <string>

namespace oncecount::filter {

base::Result<BlockedBloom> BlockedBloom::Create(uint64_t bits, int hashes, uint64_t seed,
                                                uint32_t block_bits) {
  if (bits == 0) return base::InvalidArgument("bits must be at least 1 (got 0)");
  if (block_bits != 512 && block_bits != 1024) {
    return base::InvalidArgument("block bits must be 512 or 1024 (got " +
                                 std::to_string(block_bits) + ")");
  }
  if (hashes < kMinHashes || hashes > kMaxHashes) {
    return base::InvalidArgument("hashes must be in " + std::to_string(kMinHashes) + ".." +
                                 std::to_string(kMaxHashes) + " (got " + std::to_string(hashes) +
                                 ")");
  }
  const uint64_t num_blocks = (bits + block_bits - 1) / block_bits;
  if (num_blocks > kMaxBlocks) {
    return base::InvalidArgument("bits must be at most " + std::to_string(kMaxBlocks * block_bits) +
                                 " (got " + std::to_string(bits) + ")");
  }
  return BlockedBloom(BitBuffer(num_blocks * (block_bits / 64)), num_blocks, hashes, seed,
                      block_bits);
}

BlockedBloom::BlockedBloom(BitBuffer buffer, uint64_t num_blocks, int hashes, uint64_t seed,
                           uint32_t block_bits)
    : buffer_(std::move(buffer)) {
  view_.block_word_shift = block_bits == 1024 ? 4 : 3;
  view_.bit_shift = block_bits == 1024 ? 22 : 23;
  view_.words = buffer_.data();
  view_.num_blocks = num_blocks;
  view_.seed = seed;
  view_.hashes = static_cast<uint32_t>(hashes);
}

void BlockedBloom::Reset(uint64_t new_seed) {
  if (dirty_) buffer_.Zero();
  dirty_ = false;
  inserted_ = 0;
  view_.seed = new_seed;
}

double BlockedBloom::FillRatio() const {
  uint64_t set = 0;
  for (uint64_t w : words()) set += static_cast<uint64_t>(std::popcount(w));
  return static_cast<double>(set) / static_cast<double>(bits());
}

void BlockedBloom::Restore(std::span<const uint64_t> words, uint64_t inserted) {
  std::copy(words.begin(), words.end(), buffer_.data());
  inserted_ = inserted;
  dirty_ = true;
}

}  // namespace oncecount::filter
