#include "processor/filter/bloom/gaussian_bloom.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "processor/filter/bloom/cell_coding.h"
#include "processor/filter/experiments/classic_bloom.h"

namespace oncecount::filter {
namespace {

GaussianBloom Make(uint64_t cells, int hashes, int cell_bits, ExpKind exp = ExpKind::kFast,
                   uint64_t seed = 7) {
  auto g = GaussianBloom::Create({cells, hashes, cell_bits, exp, seed});
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.message());
  return std::move(g).value();
}

std::vector<IdHash> Ids(uint64_t n, uint64_t stream) {
  std::vector<IdHash> ids;
  for (uint64_t i = 0; i < n; ++i) ids.push_back(IdHash{SeededMix(IdHash{i}, stream)});
  return ids;
}

struct Shape {
  uint64_t cells;
  int hashes;
  int cell_bits;
  ExpKind exp;
};

class GaussianBloomShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(GaussianBloomShapes, HasNoFalseNegatives) {
  const Shape s = GetParam();
  GaussianBloom g = Make(s.cells, s.hashes, s.cell_bits, s.exp);
  const auto ids = Ids(s.cells / 2, 1);
  for (size_t i = 0; i < ids.size(); ++i) {
    g.Insert(ids[i]);
    for (size_t j = 0; j <= i; ++j) ASSERT_TRUE(g.MayContain(ids[j])) << i << " " << j;
  }
}

TEST_P(GaussianBloomShapes, ExtractsTheClassicBloomFilterOfTheSameIdsAndHashes) {
  const Shape s = GetParam();
  GaussianBloom g = Make(s.cells, s.hashes, s.cell_bits, s.exp);
  ClassicBloom classic = ClassicBloom::Create(s.cells, s.hashes, g.seed()).value();
  for (IdHash id : Ids(s.cells / 3, 2)) {
    g.Insert(id);
    classic.Insert(id);
    ASSERT_EQ(UnderlyingBloom(g), classic);
  }
}

TEST_P(GaussianBloomShapes, FalsePositivesAreASubsetOfTheClassicFiltersFalsePositives) {
  const Shape s = GetParam();
  GaussianBloom g = Make(s.cells, s.hashes, s.cell_bits, s.exp);
  ClassicBloom classic = ClassicBloom::Create(s.cells, s.hashes, g.seed()).value();
  for (IdHash id : Ids(s.cells / 4, 3)) {
    g.Insert(id);
    classic.Insert(id);
  }
  uint64_t gaussian_fp = 0, classic_fp = 0;
  for (IdHash q : Ids(50000, 4)) {
    const bool gp = g.MayContain(q);
    const bool cp = classic.MayContain(q);
    ASSERT_TRUE(!gp || cp) << "Lemma 2 violated";
    gaussian_fp += gp ? 1 : 0;
    classic_fp += cp ? 1 : 0;
  }
  EXPECT_GT(classic_fp, 0u);
  EXPECT_LE(gaussian_fp, classic_fp);
}

TEST_P(GaussianBloomShapes, NeverCodesANonPeakCellAsThePeak) {
  const Shape s = GetParam();
  GaussianBloom g = Make(s.cells, s.hashes, s.cell_bits, s.exp);
  const uint64_t max = MaxCellCode(s.cell_bits);
  for (int i = 1; i <= s.hashes; ++i) {
    EXPECT_EQ(g.KernelCode(i, 0), max);
    for (uint64_t d = 1; d <= 3 * static_cast<uint64_t>(i); ++d) EXPECT_LT(g.KernelCode(i, d), max);
  }
}

INSTANTIATE_TEST_SUITE_P(
    CellsAndExponentials, GaussianBloomShapes,
    ::testing::Values(Shape{256, 3, 64, ExpKind::kExact}, Shape{256, 5, 64, ExpKind::kFast},
                      Shape{256, 10, 8, ExpKind::kFast}, Shape{256, 4, 4, ExpKind::kFast},
                      Shape{257, 5, 4, ExpKind::kExact}, Shape{1000, 7, 8, ExpKind::kExact},
                      Shape{16, 10, 64, ExpKind::kFast}, Shape{7, 3, 4, ExpKind::kFast}),
    [](const ::testing::TestParamInfo<Shape>& p) {
      return "m" + std::to_string(p.param.cells) + "_k" + std::to_string(p.param.hashes) + "_B" +
             std::to_string(p.param.cell_bits) +
             (p.param.exp == ExpKind::kFast ? "_fast" : "_exact");
    });

TEST(GaussianBloom, WritesANormalizedGaussianWithSigmaEqualToTheHashIndex) {
  GaussianBloom g = Make(1000, 3, 64, ExpKind::kExact);
  for (int i = 1; i <= 3; ++i) {
    for (uint64_t d = 0; d <= 3 * static_cast<uint64_t>(i); ++d) {
      const double expected = std::exp(-static_cast<double>(d * d) / (2.0 * i * i));
      EXPECT_DOUBLE_EQ(DecodeCell(g.KernelCode(i, d), 64), d == 0 ? 1.0 : expected);
    }
    // The 3-sigma rule: nothing beyond.
    EXPECT_EQ(g.KernelCode(i, 3 * static_cast<uint64_t>(i) + 1), 0u);
  }
}

TEST(GaussianBloom, KeepsTheMaximumOfOverlappingKernels) {
  GaussianBloom g = Make(4096, 4, 64, ExpKind::kExact);
  const auto ids = Ids(200, 9);
  for (IdHash id : ids) g.Insert(id);
  // Every cell is the max over ids and kernels of the value written there.
  std::vector<double> expected(4096, 0.0);
  for (IdHash id : ids) {
    const uint64_t mixed = g.Mix(id);
    for (int i = 1; i <= 4; ++i) {
      const uint64_t p = CellPosition(mixed, i, 4096);
      for (int64_t d = -3 * i; d <= 3 * i; ++d) {
        const uint64_t cell = (p + 4096 + static_cast<uint64_t>(d)) % 4096;
        const uint64_t code = g.KernelCode(i, static_cast<uint64_t>(d < 0 ? -d : d));
        expected[cell] = std::max(expected[cell], DecodeCell(code, 64));
      }
    }
  }
  for (uint64_t c = 0; c < 4096; ++c) ASSERT_EQ(g.CellValue(c), expected[c]) << c;
}

TEST(GaussianBloom, RejectsTheClassicFalsePositiveOfExample1) {
  // The paper's Example 1 in spirit: the query's peaks are all set, but by hash
  // functions of other indices, so their flanks have the wrong width.
  GaussianBloom g = Make(256, 3, 8, ExpKind::kExact);
  ClassicBloom classic = ClassicBloom::Create(256, 3, g.seed()).value();
  std::mt19937_64 rng(5);
  uint64_t rejected = 0;
  for (int trial = 0; trial < 200 && rejected == 0; ++trial) {
    g.Reset(g.seed());
    classic = ClassicBloom::Create(256, 3, g.seed()).value();
    for (int i = 0; i < 30; ++i) {
      const IdHash id{rng()};
      g.Insert(id);
      classic.Insert(id);
    }
    for (int q = 0; q < 2000; ++q) {
      const IdHash id{rng()};
      if (classic.MayContain(id) && !g.MayContain(id)) ++rejected;
    }
  }
  EXPECT_GT(rejected, 0u);
}

TEST(GaussianBloom, EmptiesOnReset) {
  GaussianBloom g = Make(512, 5, 4);
  for (IdHash id : Ids(100, 1)) g.Insert(id);
  EXPECT_GT(g.FillRatio(), 0.0);
  g.Reset(99);
  EXPECT_EQ(g.FillRatio(), 0.0);
  EXPECT_EQ(g.inserted(), 0u);
  EXPECT_EQ(g.seed(), 99u);
  for (uint64_t w : g.words()) EXPECT_EQ(w, 0u);
}

TEST(GaussianBloom, PacksFourBitCellsSixteenToAWord) {
  EXPECT_EQ(Make(256, 3, 4).words().size(), 16u);
  EXPECT_EQ(Make(256, 3, 8).words().size(), 32u);
  EXPECT_EQ(Make(256, 3, 64).words().size(), 256u);
  EXPECT_EQ(Make(257, 3, 4).bits(), 257u * 4);
}

TEST(GaussianBloom, NamesTheBadParameter) {
  EXPECT_NE(GaussianBloom::Create({0, 3, 8}).message().find("cells"), std::string::npos);
  EXPECT_NE(GaussianBloom::Create({256, 0, 8}).message().find("hashes"), std::string::npos);
  EXPECT_NE(GaussianBloom::Create({256, 3, 16}).message().find("cell bits"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::filter
