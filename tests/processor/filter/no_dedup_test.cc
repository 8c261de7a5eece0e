#include "processor/filter/no_dedup.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace oncecount::filter {
namespace {

TEST(NoDedup, AppliesEveryEventEvenARepeatedOne) {
  NoDedup f;
  EXPECT_EQ(f.mode(), DedupMode::kNone);
  for (int i = 0; i < 3; ++i) {
    f.AdvanceTo(Millis{i});
    EXPECT_EQ(f.TestAndInsert(IdHash{42}), Verdict::kNew);
    EXPECT_FALSE(f.Contains(IdHash{42}));
  }
  const FilterSummary s = f.Summary();
  EXPECT_EQ(s.mode, DedupMode::kNone);
  EXPECT_EQ(s.inserted, 3u);
  EXPECT_EQ(s.duplicates, 0u);
  EXPECT_EQ(s.window_ms_guaranteed, 0);
  EXPECT_EQ(s.filters, 0u);
}

TEST(NoDedup, ItsStateIsOnlyItsCounter) {
  NoDedup a;
  NoDedup b;
  EXPECT_EQ(a.Digest(), b.Digest());
  (void)a.TestAndInsert(IdHash{1});
  EXPECT_NE(a.Digest(), b.Digest());
  (void)b.TestAndInsert(IdHash{2});  // a different id, the same state
  EXPECT_EQ(a.Digest(), b.Digest());
}

}  // namespace
}  // namespace oncecount::filter
