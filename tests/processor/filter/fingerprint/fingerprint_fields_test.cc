#include "processor/filter/fingerprint/fingerprint_fields.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>

namespace oncecount::filter {
namespace {

// The reference: one field at a time.
template <class Word>
bool HoldsFieldByField(const FingerprintFields<Word>& f, Word bucket, uint32_t fingerprint) {
  for (uint32_t j = 0; j < f.count(); ++j) {
    if (f.Get(bucket, j) == fingerprint) return true;
  }
  return false;
}

// A bucket with `used` fields drawn from `pick`, pushed one by one.
template <class Word, class Pick>
Word BucketOf(const FingerprintFields<Word>& f, uint32_t used, Pick&& pick) {
  Word bucket = 0;
  for (uint32_t j = 0; j < used; ++j) bucket = f.Push(bucket, pick());
  return bucket;
}

template <class Word>
void CheckEveryWidth() {
  std::mt19937_64 rng(11);
  for (uint32_t bits = kMinFingerprintBits; bits <= kMaxFingerprintBits; ++bits) {
    const FingerprintFields<Word> f(bits);
    ASSERT_EQ(f.count(), kWordBits<Word> / bits);
    const auto any_fingerprint = [&] { return f.FingerprintOf(static_cast<uint32_t>(rng())); };
    for (int trial = 0; trial < 2000; ++trial) {
      const auto used = static_cast<uint32_t>(rng() % (f.count() + 1));
      // Small fingerprints collide often, so that hits and near misses both occur.
      const auto near = [&] { return 1 + static_cast<uint32_t>(rng() % 5); };
      const Word bucket =
          trial % 2 == 0 ? BucketOf(f, used, any_fingerprint) : BucketOf(f, used, near);
      const uint32_t probe = trial % 3 == 0 ? any_fingerprint() : near();
      ASSERT_EQ(f.Holds(bucket, f.Pattern(probe)), HoldsFieldByField(f, bucket, probe))
          << "bits " << bits << " used " << used << " probe " << probe;
      ASSERT_EQ(f.Occupied(bucket), used) << "bits " << bits;
      ASSERT_EQ(f.HasRoom(f.BitWidth(bucket)), used < f.count()) << "bits " << bits;
    }
  }
}

TEST(FingerprintFields, FindsAFingerprintExactlyWhenSomeFieldHoldsIt64) {
  CheckEveryWidth<uint64_t>();
}

TEST(FingerprintFields, FindsAFingerprintExactlyWhenSomeFieldHoldsIt128) {
  CheckEveryWidth<Bucket128>();
}

TEST(FingerprintFields, NeverFindsAFingerprintInAnEmptyBucket) {
  const FingerprintFields<Bucket128> f(25);
  for (uint32_t fp = 1; fp < 100000; fp += 7) EXPECT_FALSE(f.Holds(0, f.Pattern(fp)));
}

TEST(FingerprintFields, DrawsFingerprintsFromOneToTheLargestField) {
  for (uint32_t bits : {8u, 16u, 25u, 32u}) {
    const FingerprintFields<uint64_t> f(bits);
    EXPECT_EQ(f.FingerprintOf(0), 1u);
    EXPECT_EQ(f.FingerprintOf(0xFFFFFFFFu), f.max_fingerprint());
    std::mt19937_64 rng(bits);
    for (int i = 0; i < 10000; ++i) {
      const uint32_t fp = f.FingerprintOf(static_cast<uint32_t>(rng()));
      ASSERT_GE(fp, 1u);
      ASSERT_LE(fp, f.max_fingerprint());
    }
  }
}

TEST(FingerprintFields, PushKeepsTheOccupiedFieldsAPrefix) {
  const FingerprintFields<uint64_t> f(16);
  uint64_t bucket = 0;
  for (uint32_t fp = 1; fp <= 4; ++fp) {
    bucket = f.Push(bucket, fp);
    EXPECT_EQ(f.Get(bucket, 0), fp);
    EXPECT_EQ(f.Occupied(bucket), fp);
  }
  EXPECT_EQ(bucket, 0x0001000200030004u);
  EXPECT_FALSE(f.HasRoom(f.BitWidth(bucket)));
}

TEST(FingerprintFields, SetReplacesOneFieldOnly) {
  const FingerprintFields<Bucket128> f(25);
  Bucket128 bucket = 0;
  for (uint32_t fp = 1; fp <= 5; ++fp) bucket = f.Push(bucket, fp * 1000);
  bucket = f.Set(bucket, 2, 77);
  EXPECT_EQ(f.Get(bucket, 2), 77u);
  EXPECT_EQ(f.Get(bucket, 1), 4000u);
  EXPECT_EQ(f.Get(bucket, 3), 2000u);
  EXPECT_EQ(f.Occupied(bucket), 5u);
}

TEST(FingerprintFields, DividesBitPositionsByTheWidthWithoutError) {
  for (uint32_t bits = kMinFingerprintBits; bits <= kMaxFingerprintBits; ++bits) {
    const FingerprintFields<Bucket128> f(bits);
    for (uint32_t bit = 0; bit < 160; ++bit) ASSERT_EQ(f.FieldOfBit(bit), bit / bits) << bits;
  }
}

}  // namespace
}  // namespace oncecount::filter
