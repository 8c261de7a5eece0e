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

TEST(FingerprintPlane, RefusesWidthsOfNoSlotAndBeyondALine) {
  EXPECT_FALSE(FingerprintPlane<uint64_t>::Create(8, 0).ok());
  EXPECT_FALSE(FingerprintPlane<uint64_t>::Create(8, 9).ok());
  EXPECT_FALSE(FingerprintPlane<Bucket128>::Create(8, 5).ok());
  EXPECT_TRUE(FingerprintPlane<Bucket128>::Create(8, 4).ok());
}

// A plane widened one slot at a time and compacted as slices leave finds every
// fingerprint of the slots it keeps, in their new places, and no other; its memory is
// its width's. Large enough (a mapped buffer) that Widen and Compact remap it.
template <class Word>
void CheckWidenAndCompact(uint32_t bits) {
  const FingerprintFields<Word> f(bits);
  constexpr uint32_t kSlots = FingerprintPlane<Word>::kSlots;
  const uint64_t groups = 40000;  // 2.4 to 5 MiB at full width
  auto made = FingerprintPlane<Word>::Create(groups, 1);
  ASSERT_TRUE(made.ok()) << made.error();
  FingerprintPlane<Word> plane = std::move(made).value();
  EXPECT_EQ(plane.bytes(), groups * sizeof(Word));
  std::mt19937_64 rng(bits);
  std::vector<Stored> stored;
  const auto fill = [&](uint32_t slot) {
    for (int i = 0; i < 3000; ++i) {
      const Stored s{rng(), f.FingerprintOf(static_cast<uint32_t>(rng())), slot};
      ASSERT_FALSE(plane.Place(slot, plane.BucketsOf(s.mixed, s.fingerprint), s.fingerprint, f,
                               stored.size()));
      stored.push_back(s);
    }
  };
  fill(0);
  for (uint32_t width = 2; width <= kSlots; ++width) {
    plane.Widen();
    ASSERT_EQ(plane.width(), width);
    EXPECT_EQ(plane.CountOccupied(width - 1, f), 0u);  // the new slot is empty
    fill(width - 1);
  }
  EXPECT_EQ(plane.bytes(), groups * 64);
  // Slots 1 and the last leave; the others move down.
  const uint32_t kept = plane.AllSlots() & ~(1u << 1) & ~(1u << (kSlots - 1));
  plane.Compact(kept);
  ASSERT_EQ(plane.width(), kSlots - 2);
  EXPECT_EQ(plane.bytes(), groups * (kSlots - 2) * sizeof(Word));
  uint64_t found = 0;
  for (const Stored& s : stored) {
    const uint32_t slots = plane.MatchingSlotsOneByOne(plane.BucketsOf(s.mixed, s.fingerprint),
                                                       f.Pattern(s.fingerprint), f);
    if ((kept >> s.slot & 1) == 0) continue;
    const auto moved = static_cast<uint32_t>(std::popcount(kept & ((1u << s.slot) - 1)));
    found += (slots >> moved & 1);
  }
  EXPECT_EQ(found, 3000u * (kSlots - 2));
  for (uint32_t slot = 0; slot < plane.width(); ++slot) {
    EXPECT_EQ(plane.CountOccupied(slot, f), 3000u) << slot;
  }
  // Down to one slot, then wider again: the new slot is empty.
  plane.Compact(1);
  EXPECT_EQ(plane.width(), 1u);
  EXPECT_EQ(plane.CountOccupied(0, f), 3000u);
  plane.Widen();
  EXPECT_EQ(plane.CountOccupied(1, f), 0u);
}

TEST(FingerprintPlane, WidensAndCompactsInPlaceKeepingTheFingerprintsOfEveryKeptSlot64) {
  CheckWidenAndCompact<uint64_t>(16);
}

TEST(FingerprintPlane, WidensAndCompactsInPlaceKeepingTheFingerprintsOfEveryKeptSlot128) {
  CheckWidenAndCompact<Bucket128>(25);
}

// A narrow plane (read slot by slot) and a full-width one (read with the vector path)
// given the same fingerprints in the same slots agree on every verdict: the kicks
// touch one slot, so both hold the same buckets there.
TEST(FingerprintPlane, ANarrowPlaneGivesTheVerdictsOfAFullWidthOne) {
  const FingerprintFields<Bucket128> f(25);
  auto narrow = FingerprintPlane<Bucket128>::Create(64, 3).value();
  auto full = FingerprintPlane<Bucket128>::Create(64).value();
  std::mt19937_64 rng(5);
  std::vector<Stored> stored;
  for (int i = 0; i < 600; ++i) {
    const Stored s{rng(), f.FingerprintOf(static_cast<uint32_t>(rng())),
                   static_cast<uint32_t>(i % 3)};
    const auto b = narrow.BucketsOf(s.mixed, s.fingerprint);
    ASSERT_FALSE(narrow.Place(s.slot, b, s.fingerprint, f, i));
    ASSERT_FALSE(full.Place(s.slot, b, s.fingerprint, f, i));
    stored.push_back(s);
  }
  uint64_t hits = 0;
  for (int q = 0; q < 20000; ++q) {
    // Every stored id, then ids never stored.
    const bool old = q < static_cast<int>(stored.size());
    const uint64_t mixed = old ? stored[static_cast<size_t>(q)].mixed : rng();
    const uint32_t fp = old ? stored[static_cast<size_t>(q)].fingerprint
                            : f.FingerprintOf(static_cast<uint32_t>(rng()));
    const auto b = narrow.BucketsOf(mixed, fp);
    const uint32_t from_narrow = narrow.MatchingSlots<4>(b, f.Pattern(fp), f);
    const uint32_t from_full = full.MatchingSlots<4>(b, f.Pattern(fp), f);
    ASSERT_EQ(from_narrow, from_full) << q;
    if (old) {
      EXPECT_TRUE(from_narrow >> stored[static_cast<size_t>(q)].slot & 1) << q;
    }
    hits += from_narrow != 0 ? 1 : 0;
  }
  EXPECT_GE(hits, stored.size());
}

}  // namespace
}  // namespace oncecount::filter
