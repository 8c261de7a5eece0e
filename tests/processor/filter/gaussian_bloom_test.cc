#include "processor/filter/gaussian_bloom.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t set, uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, set * 7919 + 1)};
}

constexpr CellCoding kCodings[] = {CellCoding::kDouble, CellCoding::kBits8, CellCoding::kBits4};

GaussianBloom Make(uint32_t cells, int hashes, CellCoding coding, uint64_t seed = 3) {
  auto f = GaussianBloom::Create(cells, hashes, coding, seed);
  EXPECT_TRUE(f.ok()) << f.error();
  return std::move(f).value();
}

TEST(GaussianBloom, NeverMissesAnInsertedId) {
  for (const CellCoding coding : kCodings) {
    for (const int k : {1, 3, 5, 10}) {
      GaussianBloom f = Make(256, k, coding);
      for (uint64_t i = 0; i < 200; ++i) f.Insert(Id(1, i));
      for (uint64_t i = 0; i < 200; ++i) {
        ASSERT_TRUE(f.MayContain(Id(1, i))) << "coding " << static_cast<int>(coding) << " k " << k;
      }
    }
  }
}

TEST(GaussianBloom, ItsUnderlyingBloomFilterIsTheClassicFilterOfTheSameIds) {
  for (const CellCoding coding : kCodings) {
    for (const int k : {3, 5, 10}) {
      GaussianBloom g = Make(256, k, coding, 11);
      ClassicBloom b(256, k, 11);
      for (uint64_t i = 0; i < 60; ++i) {
        g.Insert(Id(2, i));
        b.Insert(Id(2, i));
        ASSERT_EQ(g.UnderlyingBloom(), b.bits()) << "after " << i + 1 << " ids, k " << k;
      }
    }
  }
}

TEST(GaussianBloom, ReportsOnlyFalsePositivesTheClassicFilterAlsoReports) {
  // Lemma 2, on many small filters where false positives are frequent.
  uint64_t gaussian_fp = 0, classic_fp = 0;
  for (const CellCoding coding : kCodings) {
    for (uint64_t set = 0; set < 40; ++set) {
      GaussianBloom g = Make(256, 3, coding, set);
      ClassicBloom b(256, 3, set);
      for (uint64_t i = 0; i < 60; ++i) {
        g.Insert(Id(set, i));
        b.Insert(Id(set, i));
      }
      for (uint64_t q = 1000; q < 2000; ++q) {
        const bool g_says = g.MayContain(Id(set, q));
        const bool b_says = b.MayContain(Id(set, q));
        if (g_says) {
          ASSERT_TRUE(b_says) << "a Gaussian false positive the classic filter rejects";
        }
        gaussian_fp += g_says;
        classic_fp += b_says;
      }
    }
  }
  EXPECT_GT(classic_fp, 0u) << "the filters are full enough for false positives";
  EXPECT_LT(gaussian_fp, classic_fp) << "and the Gaussian filter rejects some of them";
}

TEST(GaussianBloom, CodesNoValueBelowThePeakAsThePeak) {
  for (const CellCoding coding : {CellCoding::kBits4, CellCoding::kBits8}) {
    const uint32_t peak = (1u << static_cast<int>(coding)) - 1;
    EXPECT_EQ(GaussianBloom::Encode(1.0, coding), peak);
    EXPECT_EQ(GaussianBloom::Encode(0.0, coding), 0u);
    uint32_t previous = 0;
    for (double v = 0; v < 1.0; v = std::nextafter(v + 1e-4, 2.0)) {
      const uint32_t code = GaussianBloom::Encode(v, coding);
      ASSERT_LT(code, peak) << v;
      ASSERT_GE(code, previous) << "monotone at " << v;
      previous = code;
    }
    EXPECT_EQ(GaussianBloom::Encode(std::nextafter(1.0, 0.0), coding), peak - 1);
    EXPECT_EQ(previous, peak - 1) << "values just below the peak get the highest other code";
  }
}

TEST(GaussianBloom, SignatureIsOneAtThePeakAndBelowOneBesideItWithEitherExponential) {
  for (const bool fast : {true, false}) {
    auto f = GaussianBloom::Create(1024, 10, CellCoding::kDouble, 1, fast);
    ASSERT_TRUE(f.ok());
    for (int i = 0; i < 10; ++i) {
      EXPECT_EQ(f->Signature(i, 0), 1.0);
      for (uint32_t d = 1; d <= 3 * static_cast<uint32_t>(i + 1); ++d) {
        const double exact = std::exp(-double(d * d) / (2.0 * (i + 1) * (i + 1)));
        ASSERT_LT(f->Signature(i, d), 1.0);
        ASSERT_NEAR(f->Signature(i, d), exact, 0.05 * exact + 1e-9) << "i " << i << " d " << d;
      }
    }
  }
}

TEST(GaussianBloom, CountsMemoryAsCellsTimesCellBits) {
  EXPECT_EQ(Make(256, 3, CellCoding::kBits4).memory_bits(), 1024u);
  EXPECT_EQ(Make(256, 3, CellCoding::kBits8).memory_bits(), 2048u);
  EXPECT_EQ(Make(256, 3, CellCoding::kDouble).memory_bits(), 16384u);
}

TEST(GaussianBloom, RejectsBadParametersWithAnError) {
  EXPECT_FALSE(GaussianBloom::Create(0, 3, CellCoding::kBits4, 1).ok());
  EXPECT_FALSE(GaussianBloom::Create(256, 0, CellCoding::kBits4, 1).ok());
  EXPECT_FALSE(GaussianBloom::Create(256, 31, CellCoding::kBits4, 1).ok());
  EXPECT_FALSE(GaussianBloom::Create(256, 3, static_cast<CellCoding>(5), 1).ok());
}

}  // namespace
}  // namespace oncecount::filter
