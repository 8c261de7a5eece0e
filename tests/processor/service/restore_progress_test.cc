#include "processor/service/restore_progress.h"

#include <gtest/gtest.h>

namespace oncecount::service {
namespace {

TEST(RestoreProgress, MeasuresEachReadFromWhereItBeganToItsTarget) {
  RestoreProgress progress;
  EXPECT_TRUE(progress.Read().empty());
  progress.Report(base::Partition(3), base::Offset(100), base::Offset(300));
  progress.Report(base::Partition(1), base::Offset(0), base::Offset(10));
  progress.Report(base::Partition(3), base::Offset(150), base::Offset(300));
  const std::vector<RestoreProgress::Shard> shards = progress.Read();
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0].partition.value(), 1);
  EXPECT_EQ(shards[0].remaining_offsets, 10);
  EXPECT_DOUBLE_EQ(shards[0].fraction, 0.0);
  EXPECT_EQ(shards[1].partition.value(), 3);
  EXPECT_EQ(shards[1].remaining_offsets, 150);
  EXPECT_DOUBLE_EQ(shards[1].fraction, 0.25);
}

TEST(RestoreProgress, NeverGoesBackAndReachesOneAtItsTarget) {
  RestoreProgress progress;
  progress.Report(base::Partition(0), base::Offset(10), base::Offset(20));
  progress.Report(base::Partition(0), base::Offset(20), base::Offset(20));
  progress.Report(base::Partition(0), base::Offset(15),
                  base::Offset(20));  // an older report arriving late
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_EQ(progress.Read()[0].remaining_offsets, 0);
  EXPECT_DOUBLE_EQ(progress.Read()[0].fraction, 1.0);
}

TEST(RestoreProgress, ForgetsAReadThatEnded) {
  RestoreProgress progress;
  progress.Report(base::Partition(0), base::Offset(5), base::Offset(6));
  progress.Report(base::Partition(1), base::Offset(5), base::Offset(6));
  progress.End(base::Partition(0));
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_EQ(progress.Read()[0].partition.value(), 1);
  progress.End(base::Partition(1));
  progress.End(base::Partition(7));  // never reported: nothing to forget
  EXPECT_TRUE(progress.Read().empty());
}

TEST(RestoreProgress, CallsAReadWithNothingToReadDone) {
  RestoreProgress progress;
  progress.Report(base::Partition(2), base::Offset(40), base::Offset(40));
  ASSERT_EQ(progress.Read().size(), 1u);
  EXPECT_DOUBLE_EQ(progress.Read()[0].fraction, 1.0);
  EXPECT_EQ(progress.Read()[0].remaining_offsets, 0);
}

}  // namespace
}  // namespace oncecount::service
