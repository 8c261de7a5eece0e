// LostInput: input offsets counted as lost are counted once, however the ranges that
// cover them come again.
#include "processor/service/lost_input.h"

#include <gtest/gtest.h>

namespace oncecount::service {
namespace {

base::Offset At(int64_t offset) {
  return base::Offset(offset);
}

TEST(LostInput, CountsARangeOnce) {
  LostInput lost;
  EXPECT_EQ(lost.Count(At(10), At(20)), 10u);
  EXPECT_EQ(lost.Count(At(10), At(20)), 0u);
  EXPECT_EQ(lost.Count(At(12), At(15)), 0u);
  EXPECT_EQ(lost.Count(At(5), At(5)), 0u);
  EXPECT_EQ(lost.Count(At(7), At(5)), 0u);
}

TEST(LostInput, CountsOnlyWhatARangeAddsAroundAndBetweenThoseCountedBefore) {
  LostInput lost;
  EXPECT_EQ(lost.Count(At(10), At(20)), 10u);
  EXPECT_EQ(lost.Count(At(30), At(31)), 1u);  // an unreadable record
  EXPECT_EQ(lost.Count(At(5), At(12)), 5u);
  EXPECT_EQ(lost.Count(At(20), At(30)), 10u);  // touching both sides
  EXPECT_EQ(lost.Count(At(0), At(40)), 5u + 9u);
  EXPECT_EQ(lost.Count(At(0), At(40)), 0u);
}

// A restore after an abort goes back to the last commit and over the same gap, which
// retention may have grown in between (the case the processor meets).
TEST(LostInput, CountsAGapThatGrewSinceItWasCountedByWhatItGrew) {
  LostInput lost;
  EXPECT_EQ(lost.Count(At(100), At(150)), 50u);
  EXPECT_EQ(lost.Count(At(80), At(170)), 20u + 20u);
}

}  // namespace
}  // namespace oncecount::service
