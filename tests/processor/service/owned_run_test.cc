#include "processor/service/owned_run.h"

#include <gtest/gtest.h>

namespace oncecount::service {
namespace {

using base::Offset;

kafka::DeliveredRecords Records(int64_t first, int64_t last, int64_t count) {
  return {Offset(first), Offset(last), count};
}

// A real broker: the restore read to 100, the claim went to 100 and its marker to
// 101; each commit's records follow the last one's marker.
TEST(OwnedRun, StaysIntactWhileEachTransactionFollowsTheLastOnesMarker) {
  OwnedRun run(Offset(100));
  EXPECT_EQ(run.last(), std::nullopt);
  run.Committed(Records(100, 100, 1), /*markers=*/true);
  run.Committed(Records(102, 104, 3), true);
  run.Committed(Records(106, 106, 1), true);
  EXPECT_TRUE(run.intact());
  EXPECT_EQ(run.last(), Offset(106));
}

// The embedded cluster writes no markers: each transaction follows the last record.
TEST(OwnedRun, StaysIntactOnAClusterWithoutMarkersWhenNothingComesBetween) {
  OwnedRun run(Offset(0));
  run.Committed(Records(0, 0, 1), false);
  run.Committed(Records(1, 5, 5), false);
  run.Committed(Records(6, 6, 1), false);
  EXPECT_TRUE(run.intact());
  EXPECT_EQ(run.last(), Offset(6));
}

// Without markers, or before a read has shown that the cluster writes them, a gap of
// one offset may be a rival's one-record claim.
TEST(OwnedRun, BreaksOnAGapOfOneWhereTheClusterIsNotKnownToWriteMarkers) {
  OwnedRun run(Offset(0));
  run.Committed(Records(0, 0, 1), false);
  run.Committed(Records(2, 3, 2), false);
  EXPECT_FALSE(run.intact());
  EXPECT_EQ(run.last(), std::nullopt);
}

// A rival's claim and its marker between two transactions: two offsets, not one.
TEST(OwnedRun, BreaksOnAForeignRecordBetweenItsTransactions) {
  OwnedRun run(Offset(100));
  run.Committed(Records(100, 100, 1), true);
  run.Committed(Records(104, 104, 1), true);  // 101 ours, 102 a claim, 103 its marker
  EXPECT_FALSE(run.intact());
}

// A record of someone else's among the transaction's own.
TEST(OwnedRun, BreaksOnAForeignRecordInsideATransaction) {
  OwnedRun run(Offset(100));
  run.Committed(Records(100, 100, 1), true);
  run.Committed(Records(102, 105, 3), true);
  EXPECT_FALSE(run.intact());
}

// Records between the end of the restore's read and the claim (a rival claim of the
// same epoch, written first, say).
TEST(OwnedRun, BreaksWhenTheClaimIsNotWhereTheRestoreReadTo) {
  OwnedRun run(Offset(100));
  run.Committed(Records(102, 102, 1), true);
  EXPECT_FALSE(run.intact());
  OwnedRun right_after_a_marker(Offset(100));
  right_after_a_marker.Committed(Records(101, 101, 1), true);
  EXPECT_FALSE(right_after_a_marker.intact()) << "no transaction of its own ended at 100";
}

TEST(OwnedRun, StaysBrokenOnceBroken) {
  OwnedRun run(Offset(0));
  run.Committed(Records(0, 0, 1), true);
  run.Committed(Records(5, 5, 1), true);
  run.Committed(Records(7, 7, 1), true);  // would follow 5's marker
  EXPECT_FALSE(run.intact());
  EXPECT_EQ(run.last(), std::nullopt);
}

}  // namespace
}  // namespace oncecount::service
