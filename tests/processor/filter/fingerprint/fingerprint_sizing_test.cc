#include "processor/filter/fingerprint/fingerprint_sizing.h"

#include <gtest/gtest.h>

#include <cmath>

namespace oncecount::filter {
namespace {

// Bits of the whole ring (one plane: window slices + 1 slots) per id of one window
// at the expected rate.
double BitsPerWindowId(const FingerprintFilterConfig& c, double rate) {
  const double window_ids = rate * static_cast<double>(c.window.count()) / 1000;
  return static_cast<double>(c.groups) * 512 / window_ids;
}

TEST(FingerprintSizing, LandsWithinTwoPointTwoLog2OfTheTargetAtTheIssuesTargets) {
  const double rate = 100000;
  for (double target : {1e-3, 1e-6}) {
    auto c = SizeFingerprintFilter({rate, Millis{60000}, target});
    ASSERT_TRUE(c.ok()) << c.error();
    EXPECT_LE(BitsPerWindowId(c.value(), rate), 2.2 * std::log2(1 / target)) << target;
    EXPECT_LE(FingerprintWorstFpp(c.value()), target) << target;
  }
}

TEST(FingerprintSizing, PicksSixtyFourBitBucketsAtOneInAThousandAndWideOnesAtOneInAMillion) {
  auto loose = SizeFingerprintFilter({1000, Millis{60000}, 1e-3});
  auto tight = SizeFingerprintFilter({1000, Millis{60000}, 1e-6});
  ASSERT_TRUE(loose.ok() && tight.ok());
  EXPECT_EQ(loose->bucket_bits, 64u);
  EXPECT_EQ(loose->fingerprint_bits, 16u);
  EXPECT_EQ(loose->window_slices, 7u);
  EXPECT_EQ(tight->bucket_bits, 128u);
  EXPECT_EQ(tight->fingerprint_bits, 25u);
  EXPECT_EQ(tight->window_slices, 3u);
}

TEST(FingerprintSizing, GivesASliceRoomForAPeriodAtTheExpectedRate) {
  for (double rate : {1.0, 77.0, 5000.0, 2e6}) {
    for (double target : {1e-2, 1e-4, 1e-7}) {
      auto c = SizeFingerprintFilter({rate, Millis{45000}, target});
      ASSERT_TRUE(c.ok()) << c.error();
      const double slice_ids = std::max(1.0, rate * static_cast<double>(c->refresh.count()) / 1000);
      const double fields = static_cast<double>(c->groups) * (c->bucket_bits / c->fingerprint_bits);
      EXPECT_GE(std::floor(c->max_load * fields), slice_ids) << rate << " " << target;
      EXPECT_GE(c->window_slices * c->refresh, c->window);
      EXPECT_TRUE(CheckFingerprintConfig(c.value()).ok());
      EXPECT_LE(c->max_load, MaxLoadFor(c->bucket_bits / c->fingerprint_bits));
    }
  }
}

TEST(FingerprintSizing, RefusesWhatItCannotSize) {
  EXPECT_FALSE(SizeFingerprintFilter({0, Millis{1000}, 1e-3}).ok());
  EXPECT_FALSE(SizeFingerprintFilter({10, Millis{0}, 1e-3}).ok());
  EXPECT_FALSE(SizeFingerprintFilter({10, Millis{1000}, 0}).ok());
  EXPECT_FALSE(SizeFingerprintFilter({10, Millis{1000}, 1}).ok());
  // 32-bit fingerprints in eight slices bottom out near 1e-9 per slice.
  EXPECT_FALSE(SizeFingerprintFilter({10, Millis{1000}, 1e-12}).ok());
  EXPECT_FALSE(SizeFingerprintFilter({1e12, Millis{86400000}, 1e-3}).ok());
}

}  // namespace
}  // namespace oncecount::filter
