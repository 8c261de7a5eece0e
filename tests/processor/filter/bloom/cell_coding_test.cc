#include "processor/filter/bloom/cell_coding.h"

#include <gtest/gtest.h>

#include <cmath>

namespace oncecount::filter {
namespace {

TEST(CellCoding, NeverRoundsANonMaximalValueUpToTheMaximum) {
  for (int bits : {4, 8, 64}) {
    const uint64_t max = MaxCellCode(bits);
    // A dense grid of [0, 1) and the doubles just below 1.
    for (int i = 0; i < 1'000'000; ++i) {
      const double v = static_cast<double>(i) / 1'000'000.0;
      EXPECT_LT(EncodeCell(v, bits), max) << "bits " << bits << " value " << v;
    }
    double v = 1.0;
    for (int i = 0; i < 100; ++i) {
      v = std::nextafter(v, 0.0);
      EXPECT_LT(EncodeCell(v, bits), max) << "bits " << bits;
    }
    EXPECT_EQ(EncodeCell(1.0, bits), max);
  }
}

TEST(CellCoding, UsesTheAllOnesPatternForTheMaximumOnly) {
  EXPECT_EQ(MaxCellCode(4), 15u);
  EXPECT_EQ(MaxCellCode(8), 255u);
  EXPECT_EQ(EncodeCell(0.999, 4), 14u);
  EXPECT_EQ(DecodeCell(15, 4), 1.0);
  EXPECT_EQ(DecodeCell(MaxCellCode(64), 64), 1.0);
}

TEST(CellCoding, ScalesByAlphaAndRoundsToTheNearestCode) {
  // alpha = (2^B - 1) / 2^B, codes are multiples of 2^-B: code = round(v (2^B - 1)).
  EXPECT_EQ(EncodeCell(0.5, 4), 8u);  // 7.5 rounds up
  EXPECT_EQ(EncodeCell(0.3, 4), 5u);  // 4.5 rounds up
  EXPECT_EQ(EncodeCell(0.01, 8), 3u);
  EXPECT_NEAR(DecodeCell(EncodeCell(0.3, 8), 8), 0.3, 0.5 / 255);
  EXPECT_EQ(EncodeCell(0.0, 8), 0u);
  EXPECT_EQ(EncodeCell(-1.0, 8), 0u);
  EXPECT_EQ(EncodeCell(std::nan(""), 8), 0u);
}

TEST(CellCoding, KeepsTheOrderOfValues) {
  for (int bits : {4, 8, 64}) {
    uint64_t previous = 0;
    for (int i = 0; i <= 10000; ++i) {
      const uint64_t code = EncodeCell(static_cast<double>(i) / 10000.0, bits);
      EXPECT_GE(code, previous);
      previous = code;
    }
  }
}

TEST(CellCoding, ApproximatesTheExponentialWithinFourPercentOverThreeSigma) {
  for (double y = -4.5; y <= 0; y += 0.001) {
    EXPECT_NEAR(FastExp(y) / std::exp(y), 1.0, 0.04) << y;
  }
}

}  // namespace
}  // namespace oncecount::filter
