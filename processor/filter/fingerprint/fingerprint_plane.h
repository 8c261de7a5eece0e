// FingerprintPlane: the memory of the fingerprint slices of one size, laid out so
// that one id's bucket in every slice of the plane sits in one cache line.
//
// A plane has `groups` groups of `width` buckets of Word; bucket s of group g is
// bucket g of the slice in slot s. At its full width, kSlots (eight 64-bit or four
// 128-bit buckets), a group is one 64-byte line. A plane is only as wide as the
// slices it holds: it widens by one slot when one more slice of its size comes and
// is compacted when slices leave (Widen, Compact), so its memory follows its slices.
// A narrower group can straddle two lines; planes are narrow only while the load
// changes size, and a lookup in one compares slot by slot.
// An id has two candidate buckets (partial-key cuckoo hashing): `first` from its
// mixed hash, `second` = Alternate(first, fingerprint), and Alternate is its own
// inverse, so a fingerprint moved out of one bucket knows its other one without the
// id. A lookup reads the two groups, two lines, whatever the number of slices in
// the plane; an insert writes one bucket of one of them, and only when both are full
// does it move fingerprints to their other buckets (kicks).
//
//   first  = (mixed >> 32) * groups >> 32                 multiply-shift
//   second = (T(fingerprint) - first) mod groups,  T uniform in [0, groups)
//
// Thread-safety: owned by one filter (one thread).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

#include "processor/base/result.h"
#include "processor/filter/bit_buffer.h"
#include "processor/filter/fingerprint/fingerprint_fields.h"
#include "processor/filter/id_hash.h"

namespace oncecount::filter {

// Vectors of 4 and 8 64-bit lanes (GCC vector extensions, which Clang also has but
// for the shuffle: lanes 0..n-1 from the first vector, n..2n-1 from the second).
#if defined(__clang__)
#define FINGERPRINT_SHUFFLE(a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define FINGERPRINT_SHUFFLE(a, b, ...) __builtin_shuffle(a, b, V{__VA_ARGS__})
#endif
template <int kLanes>
struct VectorLanes;
template <>
struct VectorLanes<4> {
  using Unsigned = uint64_t __attribute__((vector_size(32)));
  using Signed = int64_t __attribute__((vector_size(32)));
};
template <>
struct VectorLanes<8> {
  using Unsigned = uint64_t __attribute__((vector_size(64)));
  using Signed = int64_t __attribute__((vector_size(64)));
};

template <class Word>
class FingerprintPlane {
 public:
  static constexpr uint32_t kSlots = 512 / kWordBits<Word>;  // buckets per group: one line
  static constexpr uint32_t kWordsPerBucket = sizeof(Word) / 8;
  static constexpr uint32_t kAllSlots = (1u << kSlots) - 1;
  // Group indices are 32-bit (multiply-shift): 2^32 groups = 256 GiB.
  static constexpr uint64_t kMaxGroups = uint64_t{1} << 32;
  // Kicks one insert may make before it gives up and hands back a homeless
  // fingerprint (the caller keeps it elsewhere; nothing is lost).
  static constexpr uint32_t kMaxKicks = 500;

  // Errors name the bad size or width (1..kSlots).
  static base::Result<FingerprintPlane> Create(uint64_t groups, uint32_t width = kSlots);

  FingerprintPlane(FingerprintPlane&&) noexcept = default;
  FingerprintPlane& operator=(FingerprintPlane&&) noexcept = default;

  uint64_t groups() const { return groups_; }
  // Slots a group has room for; slot indices are below it.
  uint32_t width() const { return width_; }
  // Every slot of the width, as a mask.
  uint32_t AllSlots() const { return (1u << width_) - 1; }
  uint64_t bytes() const { return groups_ * width_ * sizeof(Word); }

  // One more slot, empty, at index width() (the others keep theirs). The groups move
  // in place, from the last; the buffer is remapped, not copied (BitBuffer::Resize).
  // Throws std::bad_alloc when the memory cannot be had; the plane is then unchanged.
  void Widen();
  // Keeps the slots of `kept` (a non-empty mask below width()) and drops the others:
  // slot s moves to the number of kept slots below it, and the width becomes the
  // number kept. In place, from the first group; the buffer then shrinks.
  void Compact(uint32_t kept);

  struct Buckets {
    uint64_t first = 0;
    uint64_t second = 0;
  };
  Buckets BucketsOf(uint64_t mixed, uint32_t fingerprint) const {
    const uint64_t first = ((mixed >> 32) * groups_) >> 32;
    return {first, Alternate(first, fingerprint)};
  }
  uint64_t Alternate(uint64_t bucket, uint32_t fingerprint) const {
    const uint64_t t = (((fingerprint * 0x9E3779B97F4A7C15ULL) >> 32) * groups_) >> 32;
    return t >= bucket ? t - bucket : t + groups_ - bucket;
  }

  // kWholeLine (here and below): the caller knows the plane is kSlots wide, so a
  // group's place is a shift away, not a multiply by the stride, and the width need
  // not be checked (the batch loop's common case, BeginFreshRun).
  template <bool kWholeLine = false>
  void Prefetch(const Buckets& b) const {
    PrefetchLine(GroupWords<kWholeLine>(b.first));
    PrefetchLine(GroupWords<kWholeLine>(b.second));
  }

  // Bit s set: the slice in slot s holds `pattern`'s fingerprint in either bucket.
  // Free slots are kept empty (ClearSlot), so they never match. For a fresh id (most
  // of them) the answer is 0, and the test for it is the whole of a lookup.
  //
  // Both groups in 64-bit vector lanes, kLanes at a time (GCC vector extensions: 4
  // lanes are SSE2 pairs in a portable build and one AVX2 register inside the
  // filter's AVX2 batch path; 8 lanes are one AVX-512 register). A 128-bit bucket is
  // a (low, high) pair of lanes; its subtraction carries the low lane's borrow into
  // the high lane by hand. The zero-field test is exact per bucket, and the two
  // groups' buckets of one slot share lanes, so with 8 lanes (a whole group) the
  // lanes that are not zero are the slots. With 4 lanes a lane holds two slots'
  // buckets, and a lookup that matches is settled one slot at a time
  // (MatchingSlotsOneByOne).
  template <int kLanes = 4, bool kWholeLine = false>
  uint32_t MatchingSlots(const Buckets& b, Word pattern, const FingerprintFields<Word>& f) const {
    if constexpr (!kWholeLine) {
      if (width_ != kSlots) [[unlikely]] {
        return MatchingSlotsOneByOne(b, pattern, f);
      }
    }
    using V = typename VectorLanes<kLanes>::Unsigned;
    using Mask = typename VectorLanes<kLanes>::Signed;
    // The pattern's lanes are built in registers (broadcasts, and for 128-bit buckets
    // an interleave): written to memory lane by lane and loaded as one vector, they
    // would stall the load on store forwarding.
    V p = V{} + f.LaneOf(pattern, 0);
    if constexpr (sizeof(Word) == 16) {
      const V high = V{} + f.LaneOf(pattern, 1);
      if constexpr (kLanes == 4) {
        p = FINGERPRINT_SHUFFLE(p, high, 0, 5, 2, 7);
      } else {
        p = FINGERPRINT_SHUFFLE(p, high, 0, 9, 2, 11, 4, 13, 6, 15);
      }
    }
    V ones;
    V highs;
    std::memcpy(&ones, f.ones_lanes(), sizeof ones);
    std::memcpy(&highs, f.highs_lanes(), sizeof highs);
    V zero = {};
    // Takes the result by reference: a lambda returning a vector wider than 16 bytes
    // would change the ABI in a build without AVX (-Wpsabi).
    const auto add_zero_fields = [&](const uint64_t* lanes_in_memory) {
      V lanes;
      std::memcpy(&lanes, lanes_in_memory, sizeof lanes);
      const V x = lanes ^ p;
      V d = x - ones;
      if constexpr (sizeof(Word) == 16) {
        const V borrow = reinterpret_cast<const V&>(static_cast<const Mask&>(x < ones));
        // Lane 2i + 1 gets lane 2i's borrow; even lanes get nothing.
        if constexpr (kLanes == 4) {
          d += FINGERPRINT_SHUFFLE(V{}, borrow, 0, 4, 0, 6);
        } else {
          d += FINGERPRINT_SHUFFLE(V{}, borrow, 0, 8, 0, 10, 0, 12, 0, 14);
        }
      }
      zero |= d & ~x;
    };
    // A whole line wide from here on.
    const uint64_t* g1 = GroupWords<true>(b.first);
    const uint64_t* g2 = GroupWords<true>(b.second);
    for (int i = 0; i < 8; i += kLanes) add_zero_fields(g1 + i);
    for (int i = 0; i < 8; i += kLanes) add_zero_fields(g2 + i);
    zero &= highs;
    uint64_t any = 0;
    for (int i = 0; i < kLanes; ++i) any |= zero[i];
    if (any == 0) [[likely]] {
      return 0;
    }
    if constexpr (kLanes == 8) {
      uint32_t mask = 0;
      for (uint32_t s = 0; s < kSlots; ++s) {
        uint64_t lanes = 0;
        for (uint32_t w = 0; w < kWordsPerBucket; ++w) lanes |= zero[s * kWordsPerBucket + w];
        mask |= static_cast<uint32_t>(lanes != 0) << s;
      }
      return mask;
    } else {
      return MatchingSlotsOneByOne(b, pattern, f);
    }
  }

  // MatchingSlots, one bucket at a time: no vectors.
  uint32_t MatchingSlotsOneByOne(const Buckets& b, Word pattern,
                                 const FingerprintFields<Word>& f) const {
    const uint64_t* g1 = GroupWords(b.first);
    const uint64_t* g2 = GroupWords(b.second);
    uint32_t mask = 0;
    for (uint32_t s = 0; s < width_; ++s) {
      const bool hit = f.Holds(Load(g1, s), pattern) || f.Holds(Load(g2, s), pattern);
      mask |= static_cast<uint32_t>(hit) << s;
    }
    return mask;
  }

  // A fingerprint that no bucket could take, and one of its buckets.
  struct Homeless {
    uint64_t bucket = 0;
    uint32_t fingerprint = 0;
  };
  // Stores `fingerprint` in slot `slot`: in the emptier of its buckets, or after at
  // most kMaxKicks kicks. `kick_seed` makes the kicks' choices (deterministic:
  // replicas fed the same calls make the same moves). On failure the returned
  // fingerprint, the last one kicked out, is in no bucket of the slot.
  template <bool kWholeLine = false>
  std::optional<Homeless> Place(uint32_t slot, const Buckets& b, uint32_t fingerprint,
                                const FingerprintFields<Word>& f, uint64_t kick_seed) {
    uint64_t* first = GroupWords<kWholeLine>(b.first);
    uint64_t* second = GroupWords<kWholeLine>(b.second);
    const Word first_bucket = Load(first, slot);
    const Word second_bucket = Load(second, slot);
    const uint32_t first_width = f.BitWidth(first_bucket);
    const uint32_t second_width = f.BitWidth(second_bucket);
    // Balancing the two buckets halves the kicks at the loads the sizing uses. Which
    // one is emptier is a coin toss, so the choice is made with masks: GCC makes a
    // branch of a plain select, which mispredicts every other insert.
    const uint64_t pick_first = uint64_t{0} - static_cast<uint64_t>(first_width <= second_width);
    const uint32_t width =
        static_cast<uint32_t>((first_width & pick_first) | (second_width & ~pick_first));
    if (f.HasRoom(width)) {
      Word pick = pick_first;
      if constexpr (sizeof(Word) == 16) pick |= pick << 64;
      const uintptr_t group =
          reinterpret_cast<uintptr_t>(second) ^
          ((reinterpret_cast<uintptr_t>(first) ^ reinterpret_cast<uintptr_t>(second)) & pick_first);
      const Word bucket = (first_bucket & pick) | (second_bucket & ~pick);
      Store(reinterpret_cast<uint64_t*>(group), slot, f.Push(bucket, fingerprint));
      return std::nullopt;
    }
    return Kick(slot, b, fingerprint, f, kick_seed);
  }

  // Empties slot `slot` in every group.
  void ClearSlot(uint32_t slot);

  // Occupied fields of slot `slot`: O(groups), for checks.
  uint64_t CountOccupied(uint32_t slot, const FingerprintFields<Word>& f) const;

  // The groups as 64-bit words (a 128-bit bucket low word first).
  std::span<const uint64_t> words() const { return {buffer_.data(), WordCount()}; }
  uint64_t WordCount() const { return groups_ * stride_; }
  // The contents, for deserialization to write every word of in place (a plane near
  // the memory bound is tens of MiB: decoding it through a copy doubled a restore's
  // peak for it).
  std::span<uint64_t> words_to_restore() { return {buffer_.data(), WordCount()}; }

 private:
  FingerprintPlane(BitBuffer buffer, uint64_t groups, uint32_t width);
  template <bool kWholeLine = false>
  const uint64_t* GroupWords(uint64_t g) const {
    return buffer_.data() + g * (kWholeLine ? uint64_t{8} : stride_);
  }
  template <bool kWholeLine = false>
  uint64_t* GroupWords(uint64_t g) {
    return buffer_.data() + g * (kWholeLine ? uint64_t{8} : stride_);
  }
  // Buckets are copied in and out (a 128-bit one is two words of the buffer).
  static Word Load(const uint64_t* group, uint32_t slot) {
    Word w;
    std::memcpy(&w, group + slot * kWordsPerBucket, sizeof(Word));
    return w;
  }
  static void Store(uint64_t* group, uint32_t slot, Word w) {
    std::memcpy(group + slot * kWordsPerBucket, &w, sizeof(Word));
  }
  bool PlaceInBucket(uint32_t slot, uint64_t bucket, uint32_t fingerprint,
                     const FingerprintFields<Word>& f);
  // Place's slow path, both buckets full: a random walk of kicks.
  std::optional<Homeless> Kick(uint32_t slot, const Buckets& b, uint32_t fingerprint,
                               const FingerprintFields<Word>& f, uint64_t kick_seed);

  BitBuffer buffer_;
  uint64_t groups_ = 0;
  uint32_t width_ = kSlots;
  uint64_t stride_ = 8;  // words a group: width * kWordsPerBucket
};

extern template class FingerprintPlane<uint64_t>;
extern template class FingerprintPlane<Bucket128>;

#undef FINGERPRINT_SHUFFLE

}  // namespace oncecount::filter
