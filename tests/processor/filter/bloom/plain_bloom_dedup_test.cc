#include "processor/filter/bloom/plain_bloom_dedup.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>

#include "processor/filter/bloom/fpp_model.h"

namespace oncecount::filter {
namespace {

IdHash Id(uint64_t n) {
  return IdHash{SeededMix(IdHash{n}, 0xB100)};
}

PlainBloomDedup Make(uint64_t bits, int hashes, uint64_t seed, uint32_t block = kBlockBits) {
  auto created = PlainBloomDedup::Create(bits, hashes, seed, block);
  if (!created.ok()) ADD_FAILURE() << created.error();
  return std::move(created).value();
}

TEST(PlainBloomDedup, ReportsNewThenDuplicate) {
  PlainBloomDedup f = Make(1 << 16, 5, 1);
  EXPECT_EQ(f.mode(), DedupMode::kBloom);
  EXPECT_FALSE(f.Contains(Id(1)));
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kNew);
  EXPECT_TRUE(f.Contains(Id(1)));
  EXPECT_EQ(f.TestAndInsert(Id(1)), Verdict::kDuplicate);
}

// The baseline that never forgets: no time, however long, makes it lose an id.
TEST(PlainBloomDedup, NeverForgetsAnId) {
  for (uint32_t block : {512u, 1024u}) {
    PlainBloomDedup f = Make(1 << 16, 5, 2, block);
    uint64_t accepted = 0;
    for (uint64_t i = 0; i < 5000; ++i) {
      f.AdvanceTo(Millis{static_cast<int64_t>(i) * 1000});
      accepted += f.TestAndInsert(Id(i)) == Verdict::kNew;
    }
    EXPECT_GT(accepted, 4900u);
    f.AdvanceTo(Millis{int64_t{1} << 50});
    for (uint64_t i = 0; i < 5000; ++i) ASSERT_TRUE(f.Contains(Id(i))) << i;
  }
}

TEST(PlainBloomDedup, SummarisesItsOneFilter) {
  PlainBloomDedup f = Make(8192, 4, 3);
  uint64_t inserted = 0;
  for (uint64_t i = 0; i < 600; ++i) inserted += f.TestAndInsert(Id(i)) == Verdict::kNew;
  for (uint64_t i = 0; i < 100; ++i) (void)f.TestAndInsert(Id(i));
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.mode, DedupMode::kBloom);
  EXPECT_EQ(s.inserted, inserted);
  EXPECT_EQ(s.duplicates, 700 - inserted);
  EXPECT_EQ(s.near_edge_duplicates, 0u);
  EXPECT_EQ(s.filters, 1u);
  EXPECT_EQ(s.bits_total, 8192u);
  EXPECT_EQ(s.refresh_ms, 0);
  EXPECT_EQ(s.window_ms_guaranteed, -1);  // everything, for ever
  EXPECT_DOUBLE_EQ(s.estimated_fpp, BlockedBloomFpp(8192, 4, static_cast<double>(inserted)));
  EXPECT_DOUBLE_EQ(s.estimated_fpp_eq1, ClassicBloomFpp(8192, 4, static_cast<double>(inserted)));
  ASSERT_EQ(s.constituents.size(), 1u);
  EXPECT_EQ(s.constituents[0].inserted, inserted);
  EXPECT_GT(s.constituents[0].fill, 0.0);
}

TEST(PlainBloomDedup, ItsFalsePositiveRateClimbsAsIdsAccumulate) {
  PlainBloomDedup f = Make(4096, 3, 4);
  double last = 0;
  for (int round = 1; round <= 4; ++round) {
    for (uint64_t i = 0; i < 300; ++i) (void)f.TestAndInsert(Id(round * 1000 + i));
    const double now = f.Summary().estimated_fpp;
    EXPECT_GT(now, last);
    last = now;
  }
}

TEST(PlainBloomDedup, RejectsBadParametersNamingThem) {
  for (const auto& [bits, hashes, block, word] :
       {std::tuple<uint64_t, int, uint32_t, std::string>{0, 3, 512, "bits"},
        {1024, 0, 512, "hashes"},
        {1024, 31, 512, "hashes"},
        {1024, 3, 100, "block bits"}}) {
    auto created = PlainBloomDedup::Create(bits, hashes, 0, block);
    ASSERT_FALSE(created.ok());
    EXPECT_NE(created.message().find(word), std::string::npos) << created.error();
  }
}

}  // namespace
}  // namespace oncecount::filter
