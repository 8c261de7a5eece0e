// FingerprintFields: how a bucket (a 64- or 128-bit word) holds fingerprints, and
// the branch-free word operations the fingerprint filter's hot path is made of.
//
// A bucket holds `count` fields of `bits` bits each, field j at bits
// [j * bits, (j + 1) * bits); bits above count * bits stay zero. A field of zero is
// empty, so fingerprints are never zero (FingerprintOf draws them from
// 1 .. 2^bits - 1). The occupied fields are always fields 0 .. n-1: an insert
// shifts the bucket up by one field and puts the new fingerprint in field 0
// (Push), and a kick only overwrites an occupied field. So a bucket's bit width
// says how full it is, and it is full when its top field is occupied.
//
// Testing a bucket for a fingerprint compares all its fields at once (SWAR): xor the
// bucket with the fingerprint repeated in every field, and look for a zero field
// with the has-zero-byte expression generalised to `bits`-bit fields,
//   (x - ones) & ~x & highs,
// which is non-zero exactly when some field of x is zero (it may also flag fields
// above the lowest zero one: a borrow runs upwards).
//
// Thread-safety: values and pure functions.
#pragma once

#include <bit>
#include <cstdint>

namespace oncecount::filter {

// A 128-bit bucket: four 25-bit fingerprints where a 64-bit one holds two.
__extension__ using Bucket128 = unsigned __int128;

inline constexpr uint32_t kMinFingerprintBits = 8;
inline constexpr uint32_t kMaxFingerprintBits = 32;

template <class Word>
inline constexpr uint32_t kWordBits = sizeof(Word) * 8;

template <class Word>
class FingerprintFields {
 public:
  // bits in kMinFingerprintBits..kMaxFingerprintBits (callers check).
  explicit constexpr FingerprintFields(uint32_t bits)
      : bits_(bits),
        count_(kWordBits<Word> / bits),
        max_fingerprint_(static_cast<uint32_t>((uint64_t{1} << bits) - 1)),
        full_width_((count_ - 1) * bits),
        inverse_((65536 + bits - 1) / bits) {
    for (uint32_t j = 0; j < count_; ++j) ones_ |= Word{1} << (j * bits_);
    highs_ = ones_ << (bits_ - 1);
    for (uint32_t lane = 0; lane < 8; ++lane) {
      ones_lanes_[lane] = LaneOf(ones_, lane);
      highs_lanes_[lane] = LaneOf(highs_, lane);
    }
  }

  // A bucket value as 64-bit vector lanes: (w, w, ...), or for a 128-bit bucket
  // (low, high, low, high, ...), the layout of the buckets of a group in memory.
  static constexpr uint64_t LaneOf(Word w, uint32_t lane) {
    if constexpr (sizeof(Word) == 8) {
      return w;
    } else {
      return static_cast<uint64_t>(lane % 2 == 0 ? w : w >> 64);
    }
  }
  const uint64_t* ones_lanes() const { return ones_lanes_; }
  const uint64_t* highs_lanes() const { return highs_lanes_; }

  constexpr uint32_t bits() const { return bits_; }
  constexpr uint32_t count() const { return count_; }
  // Fingerprints are 1 .. max_fingerprint().
  constexpr uint32_t max_fingerprint() const { return max_fingerprint_; }

  // A fingerprint from 32 hash bits, uniform over 1 .. 2^bits - 1 (multiply-shift,
  // no division).
  constexpr uint32_t FingerprintOf(uint32_t hash_bits) const {
    return static_cast<uint32_t>((uint64_t{hash_bits} * max_fingerprint()) >> 32) + 1;
  }

  // The fingerprint in every field: what a bucket is xored with to test it.
  constexpr Word Pattern(uint32_t fingerprint) const { return Word{fingerprint} * ones_; }

  // Non-zero when some field of `x` is zero.
  constexpr Word ZeroFields(Word x) const { return (x - ones_) & ~x & highs_; }

  constexpr Word ones() const { return ones_; }
  constexpr Word highs() const { return highs_; }

  constexpr bool Holds(Word bucket, Word pattern) const {
    return ZeroFields(bucket ^ pattern) != 0;
  }

  // The bucket's highest set bit + 1: grows with the occupied fields.
  //
  // With masks and no branches: whether a bucket is empty, or reaches the high word
  // of a 128-bit one, is a coin toss at the loads the sizing uses, and GCC makes
  // branches of the plain selects.
  static constexpr uint32_t BitWidth(Word bucket) {
    if constexpr (sizeof(Word) == 8) {
      return BitWidth64(bucket);
    } else {
      const auto high = static_cast<uint64_t>(bucket >> 64);
      const uint64_t wide = uint64_t{0} - static_cast<uint64_t>(high != 0);
      const uint64_t top = (high & wide) | (static_cast<uint64_t>(bucket) & ~wide);
      return static_cast<uint32_t>(wide & 64) + BitWidth64(top);
    }
  }
  // std::bit_width without its branch for 0.
  static constexpr uint32_t BitWidth64(uint64_t x) {
    return static_cast<uint32_t>(std::bit_width(x | 1)) - static_cast<uint32_t>(x == 0);
  }
  // Whether a bucket of this bit width has an empty field.
  constexpr bool HasRoom(uint32_t bit_width) const { return bit_width <= full_width_; }
  // The bucket with `fingerprint` added in field 0 (it must have room).
  constexpr Word Push(Word bucket, uint32_t fingerprint) const {
    return (bucket << bits_) | Word{fingerprint};
  }
  // Occupied fields of a bucket of this bit width.
  constexpr uint32_t OccupiedOfWidth(uint32_t bit_width) const {
    return FieldOfBit(bit_width + bits_ - 1);
  }

  constexpr uint32_t Get(Word bucket, uint32_t field) const {
    return static_cast<uint32_t>((bucket >> (field * bits_)) & Word{max_fingerprint()});
  }
  constexpr Word Set(Word bucket, uint32_t field, uint32_t fingerprint) const {
    const uint32_t shift = field * bits_;
    return (bucket & ~(Word{max_fingerprint()} << shift)) | (Word{fingerprint} << shift);
  }

  // bit / bits without a division (a divide costs more than the rest of an
  // insert): exact for bit < 160, where the rounding error stays below 1 / bits.
  constexpr uint32_t FieldOfBit(uint32_t bit) const { return (bit * inverse_) >> 16; }

  // Occupied fields of `bucket`.
  constexpr uint32_t Occupied(Word bucket) const { return OccupiedOfWidth(BitWidth(bucket)); }

 private:
  uint32_t bits_;
  uint32_t count_;
  uint32_t max_fingerprint_;
  uint32_t full_width_;  // a bucket wider than this has its top field occupied
  uint32_t inverse_;     // ceil(2^16 / bits)
  Word ones_ = 0;
  Word highs_ = 0;
  uint64_t ones_lanes_[8] = {};
  uint64_t highs_lanes_[8] = {};
};

// The load a slice with `count` fingerprints per bucket is sized to fill to: about
// 0.06 below where a random walk of FingerprintPlane::kMaxKicks kicks first fails
// (measured: 0.87 with two fingerprints a bucket, 0.94 with three, 0.96 with four,
// 0.98 with five or more). Inserts stay a few kicks long, and a load a few percent
// above the sizing still fits before adaptation resizes the slices. Every width
// gives at least two fingerprints a bucket (kWidths).
constexpr double MaxLoadFor(uint32_t count) {
  switch (count) {
    case 2:
      return 0.81;
    case 3:
      return 0.88;
    case 4:
      return 0.90;
    case 5:
      return 0.915;
    default:
      return 0.92;
  }
}

}  // namespace oncecount::filter
