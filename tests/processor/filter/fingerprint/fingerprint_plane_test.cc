#include "processor/filter/fingerprint/fingerprint_plane.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <random>
#include <vector>

namespace oncecount::filter {
namespace {

template <class Word>
FingerprintPlane<Word> MakePlane(uint64_t groups) {
  auto made = FingerprintPlane<Word>::Create(groups);
  if (!made.ok()) ADD_FAILURE() << made.error();
  return std::move(made).value();
}

struct Stored {
  uint64_t mixed;
  uint32_t fingerprint;
  uint32_t slot;
};

TEST(FingerprintPlane, AlternateIsItsOwnInverse) {
  for (uint64_t groups : {1ull, 2ull, 3ull, 1000ull, 1000003ull}) {
    auto plane = MakePlane<uint64_t>(groups);
    std::mt19937_64 rng(groups);
    for (int i = 0; i < 10000; ++i) {
      const auto fp = static_cast<uint32_t>(rng() | 1);
      const auto b = plane.BucketsOf(rng(), fp);
      ASSERT_LT(b.first, groups);
      ASSERT_LT(b.second, groups);
      ASSERT_EQ(plane.Alternate(b.second, fp), b.first);
    }
  }
}

TEST(FingerprintPlane, FindsWhatItPlacedInItsSlotOnly) {
  const FingerprintFields<Bucket128> f(25);
  auto plane = MakePlane<Bucket128>(64);
  std::mt19937_64 rng(3);
  std::vector<Stored> stored;
  for (int i = 0; i < 600; ++i) {
    const Stored s{rng(), f.FingerprintOf(static_cast<uint32_t>(rng())),
                   static_cast<uint32_t>(i % FingerprintPlane<Bucket128>::kSlots)};
    if (plane.Place(s.slot, plane.BucketsOf(s.mixed, s.fingerprint), s.fingerprint, f, i)) {
      continue;  // homeless: not stored
    }
    stored.push_back(s);
  }
  ASSERT_GT(stored.size(), 550u);
  for (const Stored& s : stored) {
    const auto b = plane.BucketsOf(s.mixed, s.fingerprint);
    EXPECT_NE(plane.MatchingSlotsOneByOne(b, f.Pattern(s.fingerprint), f) & (1u << s.slot), 0u);
    EXPECT_NE(plane.MatchingSlots(b, f.Pattern(s.fingerprint), f) & (1u << s.slot), 0u);
  }
  uint64_t held = 0;
  for (uint32_t slot = 0; slot < FingerprintPlane<Bucket128>::kSlots; ++slot) {
    held += plane.CountOccupied(slot, f);
  }
  EXPECT_EQ(held, stored.size());
}

template <class Word>
void CheckEveryLaneWidthFindsTheSlotsOneByOneDoes(uint32_t bits) {
  const FingerprintFields<Word> f(bits);
  auto plane = MakePlane<Word>(16);
  std::mt19937_64 rng(bits);
  for (int i = 0; i < 150; ++i) {
    // Fingerprints from a small range, so that probes hit often.
    const uint32_t fp = 1 + static_cast<uint32_t>(rng() % 50);
    const auto slot = static_cast<uint32_t>(rng() % FingerprintPlane<Word>::kSlots);
    (void)plane.Place(slot, plane.BucketsOf(rng(), fp), fp, f, i);
  }
  int hits = 0;
  int multiple = 0;
  for (int i = 0; i < 5000; ++i) {
    const uint32_t fp = 1 + static_cast<uint32_t>(rng() % 60);
    const auto b = plane.BucketsOf(rng(), fp);
    const uint32_t slots = plane.MatchingSlotsOneByOne(b, f.Pattern(fp), f);
    hits += slots != 0 ? 1 : 0;
    multiple += std::popcount(slots) > 1 ? 1 : 0;
    ASSERT_EQ(plane.template MatchingSlots<4>(b, f.Pattern(fp), f), slots);
    ASSERT_EQ(plane.template MatchingSlots<8>(b, f.Pattern(fp), f), slots);
  }
  EXPECT_GT(hits, 100);
  EXPECT_LT(hits, 4900);
  EXPECT_GT(multiple, 10) << "ids held by several slots at once";
}

TEST(FingerprintPlane, EveryLaneWidthFindsTheSlotsOneByOneDoes64) {
  for (uint32_t bits : {8u, 13u, 16u, 21u, 32u}) {
    CheckEveryLaneWidthFindsTheSlotsOneByOneDoes<uint64_t>(bits);
  }
}

TEST(FingerprintPlane, EveryLaneWidthFindsTheSlotsOneByOneDoes128) {
  for (uint32_t bits : {16u, 21u, 25u, 32u}) {
    CheckEveryLaneWidthFindsTheSlotsOneByOneDoes<Bucket128>(bits);
  }
}

TEST(FingerprintPlane, HandsBackAHomelessFingerprintWhenKicksFailAndLosesNoOther) {
  const FingerprintFields<uint64_t> f(32);  // two a bucket
  auto plane = MakePlane<uint64_t>(8);      // room for 16 a slot
  std::mt19937_64 rng(5);
  std::vector<Stored> placed;
  for (int i = 0; i < 40; ++i) {
    const Stored s{rng(), f.FingerprintOf(static_cast<uint32_t>(rng())), 2};
    const auto homeless = plane.Place(2, plane.BucketsOf(s.mixed, s.fingerprint), s.fingerprint, f,
                                      static_cast<uint64_t>(i));
    if (!homeless) {
      placed.push_back(s);
      continue;
    }
    // Exactly one fingerprint is out: the homeless one, whichever it is.
    uint32_t missing = 0;
    for (const Stored& p : placed) {
      const auto b = plane.BucketsOf(p.mixed, p.fingerprint);
      missing += (plane.MatchingSlotsOneByOne(b, f.Pattern(p.fingerprint), f) & 4u) == 0 ? 1 : 0;
    }
    const auto nb = plane.BucketsOf(s.mixed, s.fingerprint);
    const bool new_one_in =
        (plane.MatchingSlotsOneByOne(nb, f.Pattern(s.fingerprint), f) & 4u) != 0;
    EXPECT_EQ(missing + (new_one_in ? 0 : 1), 1u);
    EXPECT_EQ(plane.CountOccupied(2, f), placed.size());
    EXPECT_LT(homeless->bucket, 8u);
    return;
  }
  FAIL() << "16 fields took 40 fingerprints";
}

TEST(FingerprintPlane, ClearsOneSlotAndLeavesTheOthers) {
  const FingerprintFields<uint64_t> f(16);
  auto plane = MakePlane<uint64_t>(32);
  std::mt19937_64 rng(9);
  for (int i = 0; i < 200; ++i) {
    const uint32_t fp = f.FingerprintOf(static_cast<uint32_t>(rng()));
    (void)plane.Place(static_cast<uint32_t>(i % 2), plane.BucketsOf(rng(), fp), fp, f, i);
  }
  const uint64_t other = plane.CountOccupied(1, f);
  plane.ClearSlot(0);
  EXPECT_EQ(plane.CountOccupied(0, f), 0u);
  EXPECT_EQ(plane.CountOccupied(1, f), other);
}

TEST(FingerprintPlane, RefusesZeroAndTooManyGroups) {
  EXPECT_FALSE(FingerprintPlane<uint64_t>::Create(0).ok());
  EXPECT_FALSE(FingerprintPlane<uint64_t>::Create((uint64_t{1} << 32) + 1).ok());
}

}  // namespace
}  // namespace oncecount::filter
