#include "processor/filter/gaussian_bloom_dedup.h"

#include <gtest/gtest.h>

#include "processor/filter/filter_factory.h"

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t i) {
  return IdHash{SeededMix(IdHash{i}, 41)};
}

TEST(GaussianBloomDedup, DropsEveryRetryOfAnIdItHolds) {
  auto f = GaussianBloomDedup::Create(4096, 4, CellCoding::kBits4, 1);
  ASSERT_TRUE(f.ok()) << f.error();
  uint64_t fresh_verdicts = 0;
  for (uint64_t i = 0; i < 300; ++i) fresh_verdicts += f->TestAndInsert(Id(i)) == Verdict::kNew;
  for (uint64_t i = 0; i < 300; ++i) EXPECT_EQ(f->TestAndInsert(Id(i)), Verdict::kDuplicate);
  const FilterSummary s = f->Summary();
  EXPECT_EQ(s.mode, DedupMode::kGaussian);
  EXPECT_EQ(s.inserted, fresh_verdicts);
  EXPECT_EQ(s.duplicates, 600 - fresh_verdicts);
  EXPECT_EQ(s.bits_total, 4096u * 4);
  EXPECT_EQ(s.window_ms_guaranteed, -1) << "never forgets";
  EXPECT_STREQ(ModeName(s.mode), "gaussian");
}

TEST(GaussianBloomDedup, IsNotAModeTheServiceBuilds) {
  DedupSpec spec;
  spec.mode = DedupMode::kGaussian;
  auto built = MakeDedupFilter(spec, Millis{0});
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().find("filter-eval"), std::string::npos) << built.error();
}

}  // namespace
}  // namespace oncecount::filter
