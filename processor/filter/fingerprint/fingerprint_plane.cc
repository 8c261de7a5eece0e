#include "processor/filter/fingerprint/fingerprint_plane.h"

#include <algorithm>
#include <new>
#include <string>
#include <utility>

namespace oncecount::filter {

template <class Word>
base::Result<FingerprintPlane<Word>> FingerprintPlane<Word>::Create(uint64_t groups) {
  if (groups == 0 || groups > kMaxGroups) {
    return base::InvalidArgument("fingerprint groups must be in 1..2^32 (got " +
                                 std::to_string(groups) + ")");
  }
  try {
    return FingerprintPlane(BitBuffer(groups * 8), groups);
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument("cannot allocate " + std::to_string(groups) +
                                 " fingerprint groups of 64 bytes");
  }
}

template <class Word>
FingerprintPlane<Word>::FingerprintPlane(BitBuffer buffer, uint64_t groups)
    : buffer_(std::move(buffer)), groups_(groups) {}

template <class Word>
bool FingerprintPlane<Word>::PlaceInBucket(uint32_t slot, uint64_t bucket, uint32_t fingerprint,
                                           const FingerprintFields<Word>& f) {
  uint64_t* group = GroupWords(bucket);
  const Word word = Load(group, slot);
  if (!f.HasRoom(f.BitWidth(word))) return false;
  Store(group, slot, f.Push(word, fingerprint));
  return true;
}

template <class Word>
std::optional<typename FingerprintPlane<Word>::Homeless> FingerprintPlane<Word>::Kick(
    uint32_t slot, const Buckets& b, uint32_t fingerprint, const FingerprintFields<Word>& f,
    uint64_t kick_seed) {
  // Each step swaps the fingerprint in hand with a field of the current bucket (all
  // occupied) and carries the displaced one to its other bucket.
  uint64_t bucket = (SeededMix(IdHash{kick_seed}, 1) & 1) != 0 ? b.first : b.second;
  uint32_t in_hand = fingerprint;
  for (uint32_t kick = 0; kick < kMaxKicks; ++kick) {
    const uint64_t draw = SeededMix(IdHash{kick_seed}, kick + 0x5EED);
    const auto field = static_cast<uint32_t>(((draw >> 32) * f.count()) >> 32);
    uint64_t* group = GroupWords(bucket);
    const Word word = Load(group, slot);
    const uint32_t displaced = f.Get(word, field);
    Store(group, slot, f.Set(word, field, in_hand));
    in_hand = displaced;
    bucket = Alternate(bucket, in_hand);
    if (PlaceInBucket(slot, bucket, in_hand, f)) return std::nullopt;
  }
  return Homeless{bucket, in_hand};
}

template <class Word>
void FingerprintPlane<Word>::ClearSlot(uint32_t slot) {
  for (uint64_t g = 0; g < groups_; ++g) Store(GroupWords(g), slot, Word{0});
}

template <class Word>
uint64_t FingerprintPlane<Word>::CountOccupied(uint32_t slot,
                                               const FingerprintFields<Word>& f) const {
  uint64_t n = 0;
  for (uint64_t g = 0; g < groups_; ++g) n += f.Occupied(Load(GroupWords(g), slot));
  return n;
}

template <class Word>
void FingerprintPlane<Word>::Restore(std::span<const uint64_t> words) {
  std::memcpy(buffer_.data(), words.data(), std::min<size_t>(words.size(), groups_ * 8) * 8);
}

template class FingerprintPlane<uint64_t>;
template class FingerprintPlane<Bucket128>;

}  // namespace oncecount::filter
