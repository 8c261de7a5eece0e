#include "processor/service/restore_progress.h"

#include <gtest/gtest.h>

namespace oncecount::service {
namespace {

TEST(RestoreProgress, MeasuresEachReadFromWhereItBeganToItsTarget) {
  RestoreProgress progress;
  EXPECT_TRUE(progress.Read().empty());
  progress.Report(3, 100, 300);
  progress.Report(1, 0, 10);
  progress.Report(3, 150, 300);
  const std::vector<RestoreProgress::Shard> shards = progress.Read();
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].partition, 1);
  EXPECT_EQ(shards[0].remaining_offsets, 10);
  EXPECT_DOUBLE_EQ(shards[0].fraction, 0.0);
  EXPECT_EQ(shards[1].partition, 3);
  EXPECT_EQ(shards[1].remaining_offsets, 150);
  EXPECT_DOUBLE_EQ(shards[1].fraction, 0.25);
}

TEST(RestoreProgress, NeverGoesBackAndReachesOneAtItsTarget) {
  RestoreProgress progress;
  progress.Report(0, 10, 20);
  progress.Report(0, 20, 20);
  progress.Report(0, 15, 20);  // an older report arriving late
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_EQ(progress.Read()[0].remaining_offsets, 0);
  EXPECT_DOUBLE_EQ(progress.Read()[0].fraction, 1.0);
}

TEST(RestoreProgress, ForgetsAReadThatEnded) {
  RestoreProgress progress;
  progress.Report(0, 5, 6);
  progress.Report(1, 5, 6);
  progress.End(0);
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_EQ(progress.Read()[0].partition, 1);
  progress.End(1);
  progress.End(7);  // never reported: nothing to forget
  EXPECT_TRUE(progress.Read().empty());
}

TEST(RestoreProgress, CallsAReadWithNothingToReadDone) {
  RestoreProgress progress;
  progress.Report(2, 40, 40);
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_DOUBLE_EQ(progress.Read()[0].fraction, 1.0);
  EXPECT_EQ(progress.Read()[0].remaining_offsets, 0);
}

}  // namespace
}  // namespace oncecount::service
