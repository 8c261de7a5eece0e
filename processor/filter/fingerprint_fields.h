// FingerprintFields: how a bucket (a 64- or 128-bit word) holds fingerprints, and
// the branch-free word operations the fingerprint filter's hot path is made of.
//
// A bucket holds `count` fields of `bits` bits each, field j at bits
// [j * bits, (j + 1) * bits); bits above count * bits stay zero. A field of zero is
// empty, so fingerprints are never zero (FingerprintOf draws them from
// 1 .. 2^bits - 1).
//
// Testing a bucket for a fingerprint compares all its fields at once (SWAR): xor the
// bucket with the fingerprint repeated in every field, and look for a zero field
// with the has-zero-byte expression generalised to `bits`-bit fields,
//   (x - ones) & ~x & highs,
// which is non-zero exactly when some field of x is zero. It may also flag fields
// above the lowest zero one (a borrow runs upwards), never below it, so its lowest
// flag is the lowest zero field: that is how an insert finds a free field.
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
constexpr uint32_t LowestSetBit(Word x) {
  if constexpr (sizeof(Word) == 8) {
    return static_cast<uint32_t>(std::countr_zero(x));
  } else {
    const auto low = static_cast<uint64_t>(x);
    return low != 0 ? static_cast<uint32_t>(std::countr_zero(low))
                    : 64 + static_cast<uint32_t>(std::countr_zero(static_cast<uint64_t>(x >> 64)));
  }
}

template <class Word>
class FingerprintFields {
 public:
  // bits in kMinFingerprintBits..kMaxFingerprintBits (callers check).
  explicit constexpr FingerprintFields(uint32_t bits)
      : bits_(bits), count_(kWordBits<Word> / bits), inverse_((65536 + bits - 1) / bits) {
    for (uint32_t j = 0; j < count_; ++j) ones_ |= Word{1} << (j * bits_);
    highs_ = ones_ << (bits_ - 1);
  }

  constexpr uint32_t bits() const { return bits_; }
  constexpr uint32_t count() const { return count_; }
  // Fingerprints are 1 .. max_fingerprint().
  constexpr uint32_t max_fingerprint() const {
    return static_cast<uint32_t>((uint64_t{1} << bits_) - 1);
  }

  // A fingerprint from 32 hash bits, uniform over 1 .. 2^bits - 1 (multiply-shift,
  // no division).
  constexpr uint32_t FingerprintOf(uint32_t hash_bits) const {
    return static_cast<uint32_t>((uint64_t{hash_bits} * max_fingerprint()) >> 32) + 1;
  }

  // The fingerprint in every field: what a bucket is xored with to test it.
  constexpr Word Pattern(uint32_t fingerprint) const { return Word{fingerprint} * ones_; }

  // Non-zero when some field of `x` is zero; its lowest set bit is the top bit of
  // the lowest zero field.
  constexpr Word ZeroFields(Word x) const { return (x - ones_) & ~x & highs_; }

  constexpr bool Holds(Word bucket, Word pattern) const {
    return ZeroFields(bucket ^ pattern) != 0;
  }

  // Index of the lowest empty field of `bucket`, or count() when it is full.
  constexpr uint32_t FirstEmpty(Word bucket) const {
    const Word zero = ZeroFields(bucket);
    return zero == 0 ? count_ : FieldOfBit(LowestSetBit(zero));
  }

  constexpr uint32_t Get(Word bucket, uint32_t field) const {
    return static_cast<uint32_t>((bucket >> (field * bits_)) & Word{max_fingerprint()});
  }
  constexpr Word Set(Word bucket, uint32_t field, uint32_t fingerprint) const {
    const uint32_t shift = field * bits_;
    return (bucket & ~(Word{max_fingerprint()} << shift)) | (Word{fingerprint} << shift);
  }

  // bit / bits without a division (a divide costs more than the rest of an
  // insert): exact for bit < 128, where the rounding error stays below 1 / bits.
  constexpr uint32_t FieldOfBit(uint32_t bit) const { return (bit * inverse_) >> 16; }

  // Occupied fields of `bucket`.
  constexpr uint32_t Occupied(Word bucket) const {
    uint32_t n = 0;
    for (uint32_t j = 0; j < count_; ++j) n += Get(bucket, j) != 0 ? 1 : 0;
    return n;
  }

 private:
  uint32_t bits_;
  uint32_t count_;
  uint32_t inverse_;  // ceil(2^16 / bits)
  Word ones_ = 0;
  Word highs_ = 0;
};

}  // namespace oncecount::filter
