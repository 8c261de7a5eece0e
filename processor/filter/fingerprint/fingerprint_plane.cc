#include "processor/filter/fingerprint/fingerprint_plane.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <new>
#include <string>
#include <utility>

namespace oncecount::filter {

template <class Word>
base::Result<FingerprintPlane<Word>> FingerprintPlane<Word>::Create(uint64_t groups,
                                                                    uint32_t width) {
  if (groups == 0 || groups > kMaxGroups) {
    return base::InvalidArgument("fingerprint groups must be in 1..2^32 (got " +
                                 std::to_string(groups) + ")");
  }
  if (width == 0 || width > kSlots) {
    return base::InvalidArgument("fingerprint plane width must be in 1.." + std::to_string(kSlots) +
                                 " (got " + std::to_string(width) + ")");
  }
  try {
    return FingerprintPlane(BitBuffer(groups * width * kWordsPerBucket), groups, width);
  } catch (const std::bad_alloc&) {
    return base::InvalidArgument("cannot allocate " + std::to_string(groups) +
                                 " fingerprint groups of " + std::to_string(width * sizeof(Word)) +
                                 " bytes");
  }
}

template <class Word>
FingerprintPlane<Word>::FingerprintPlane(BitBuffer buffer, uint64_t groups, uint32_t width)
    : buffer_(std::move(buffer)),
      groups_(groups),
      width_(width),
      stride_(uint64_t{width} * kWordsPerBucket) {}

template <class Word>
void FingerprintPlane<Word>::Widen() {
  const uint64_t old_stride = stride_;
  const uint64_t new_stride = old_stride + kWordsPerBucket;
  buffer_.Resize(groups_ * new_stride);  // throws before anything moved
  uint64_t* words = buffer_.data();
  // From the last group: a group's new place is at or after its old one, so no group
  // is overwritten before it has moved.
  for (uint64_t g = groups_; g-- > 0;) {
    std::memmove(words + g * new_stride, words + g * old_stride, old_stride * 8);
    std::memset(words + g * new_stride + old_stride, 0, kWordsPerBucket * 8);
  }
  ++width_;
  stride_ = new_stride;
}

template <class Word>
void FingerprintPlane<Word>::Compact(uint32_t kept) {
  kept &= AllSlots();
  const auto new_width = static_cast<uint32_t>(std::popcount(kept));
  if (new_width == 0 || new_width == width_) return;
  const uint64_t new_stride = uint64_t{new_width} * kWordsPerBucket;
  uint64_t* words = buffer_.data();
  // From the first group, each kept bucket in slot order: every bucket's new place is
  // at or before its old one, and after every place written so far.
  for (uint64_t g = 0; g < groups_; ++g) {
    uint64_t* to = words + g * new_stride;
    const uint64_t* from = words + g * stride_;
    for (uint32_t s = 0; s < width_; ++s) {
      if ((kept >> s & 1) == 0) continue;
      std::memmove(to, from + s * kWordsPerBucket, kWordsPerBucket * 8);
      to += kWordsPerBucket;
    }
  }
  width_ = new_width;
  stride_ = new_stride;
  // Shrinking releases memory; should it fail, the tail is only unused.
  try {
    buffer_.Resize(groups_ * new_stride);
  } catch (const std::bad_alloc&) {
  }
}

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
  if (slot >= width_) return;
  for (uint64_t g = 0; g < groups_; ++g) Store(GroupWords(g), slot, Word{0});
}

template <class Word>
uint64_t FingerprintPlane<Word>::CountOccupied(uint32_t slot,
                                               const FingerprintFields<Word>& f) const {
  uint64_t n = 0;
  if (slot >= width_) return 0;
  for (uint64_t g = 0; g < groups_; ++g) n += f.Occupied(Load(GroupWords(g), slot));
  return n;
}

template class FingerprintPlane<uint64_t>;
template class FingerprintPlane<Bucket128>;

}  // namespace oncecount::filter
