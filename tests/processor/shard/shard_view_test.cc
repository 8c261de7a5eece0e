#include "processor/shard/shard_view.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace oncecount::shard {
namespace {

std::shared_ptr<const ShardView> View(int32_t partition, ShardPhase phase = ShardPhase::kRunning,
                                      ShardRole role = ShardRole::kActive,
                                      int64_t input_offset = 0) {
  auto v = std::make_shared<ShardView>();
  v->partition = base::Partition(partition);
  v->phase = phase;
  v->role = role;
  v->input_offset = base::Offset(input_offset);
  v->counters = std::make_shared<const CounterSnapshot>();
  return v;
}

std::vector<int32_t> Partitions(const StateBoard::Snapshot& s) {
  std::vector<int32_t> out;
  for (const auto& v : s.shards) out.push_back(v->partition.value());
  return out;
}

TEST(ShardView, ARestampKeepsTheAgeOfCountersKeptFromAnOlderView) {
  ShardView behind;
  behind.published_at_ms = 10'000;
  behind.counters_behind_ms = 700;
  behind.RestampAt(12'000);
  EXPECT_EQ(behind.published_at_ms, 12'000);
  EXPECT_EQ(behind.counters_behind_ms, 2'700);  // counters as of 9,300, as before

  ShardView current;
  current.published_at_ms = 10'000;
  current.RestampAt(12'000);
  EXPECT_EQ(current.published_at_ms, 12'000);
  EXPECT_EQ(current.counters_behind_ms, 0);  // its counters are its state's
}

TEST(StateBoard, KeepsViewsSortedByPartition) {
  StateBoard board(4);
  board.Publish(View(3));
  board.Publish(View(0));
  board.Publish(View(2));
  EXPECT_EQ(Partitions(board.Read()), (std::vector<int32_t>{0, 2, 3}));
}

TEST(StateBoard, ReplacesTheViewOfAPartitionOnPublish) {
  StateBoard board(2);
  board.Publish(View(1, ShardPhase::kRunning, ShardRole::kActive, 10));
  board.Publish(View(0));
  board.Publish(View(1, ShardPhase::kRunning, ShardRole::kActive, 25));
  const auto s = board.Read();
  ASSERT_EQ(Partitions(s), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s.shards[1]->input_offset.value(), 25);
}

TEST(StateBoard, RemovesAPartitionsView) {
  StateBoard board(3);
  board.Publish(View(0));
  board.Publish(View(1));
  board.Publish(View(2));
  board.Remove(base::Partition(1));
  board.Remove(base::Partition(7));  // not there: nothing happens
  EXPECT_EQ(Partitions(board.Read()), (std::vector<int32_t>{0, 2}));
}

TEST(StateBoard, KeepsAnOldSnapshotIntactAfterLaterPublishes) {
  StateBoard board(1);
  board.Publish(View(0, ShardPhase::kRunning, ShardRole::kActive, 1));
  const auto before = board.Read();
  board.Publish(View(0, ShardPhase::kRunning, ShardRole::kActive, 2));
  EXPECT_EQ(before.shards[0]->input_offset.value(), 1);
  EXPECT_EQ(board.Read().shards[0]->input_offset.value(), 2);
}

TEST(StateBoard, IsCompleteOnlyWhenEveryPartitionHasARunningView) {
  StateBoard board(2);
  EXPECT_FALSE(board.Read().complete());
  board.Publish(View(0));
  EXPECT_FALSE(board.Read().complete());
  board.Publish(View(1, ShardPhase::kRestoring, ShardRole::kStandby));
  EXPECT_FALSE(board.Read().complete());
  board.Publish(View(1, ShardPhase::kRunning, ShardRole::kStandby));
  EXPECT_TRUE(board.Read().complete());  // a running standby holds the shard's state too
  board.Publish(View(1, ShardPhase::kFailed));
  EXPECT_FALSE(board.Read().complete());
}

TEST(StateBoard, IsNeverCompleteWithAnUnknownPartitionCount) {
  StateBoard board;
  board.Publish(View(0));
  EXPECT_FALSE(board.Read().complete());
  board.SetPartitionCount(1);
  EXPECT_TRUE(board.Read().complete());
}

TEST(StateBoard, DoesNotCountAViewOutsideThePartitionRangeTowardsCompleteness) {
  StateBoard board(2);
  board.Publish(View(0));
  board.Publish(View(5));  // stale: published before the partition count was known
  EXPECT_FALSE(board.Read().complete());
  board.Publish(View(1));
  EXPECT_TRUE(board.Read().complete());
}

TEST(StateBoard, IsReadyOnceTheAssignmentIsKnownAndEveryActiveShardRuns) {
  StateBoard board(3);
  EXPECT_FALSE(board.Read().ready());  // no assignment yet
  board.SetAssignmentKnown(true);
  EXPECT_TRUE(board.Read().ready());  // assigned nothing: nothing to wait for
  board.Publish(View(0, ShardPhase::kRestoring));
  EXPECT_FALSE(board.Read().ready());
  board.Publish(View(1, ShardPhase::kRestoring, ShardRole::kStandby));
  board.Publish(View(0));
  EXPECT_TRUE(board.Read().ready());  // a standby still catching up does not count
  board.Publish(View(2, ShardPhase::kFailed));
  EXPECT_FALSE(board.Read().ready());
}

TEST(StateBoard, IsNotReadyWhileItsInputTopicIsUnavailableWhateverItsShards) {
  StateBoard board(1);
  board.SetAssignmentKnown(true);
  board.Publish(View(0));
  ASSERT_TRUE(board.Read().ready());
  board.SetTopicsUnavailable("topic events is gone");
  EXPECT_FALSE(board.Read().ready());
  EXPECT_EQ(board.Read().topics_unavailable, "topic events is gone");
  board.SetTopicsUnavailable({});
  EXPECT_TRUE(board.Read().ready());
}

TEST(StateBoard, IsNotReadyWhileItsStartWaitsWhateverItsShards) {
  StateBoard board(1);
  board.SetAssignmentKnown(true);
  board.Publish(View(0));
  board.SetStartWaitingFor("waiting for topic events.changelog to be created");
  EXPECT_FALSE(board.Read().ready());
  EXPECT_EQ(board.Read().start_waiting_for, "waiting for topic events.changelog to be created");
  board.SetStartWaitingFor({});
  EXPECT_TRUE(board.Read().ready());
}

// The replicator hands a shard to the processor and removes its replica view after
// the processor published the shard as restoring: the board must still say that an
// assigned shard is not running yet.
TEST(StateBoard, KeepsTheOwnersViewWhenTheFollowerRemovesOrRepublishesItsOwn) {
  StateBoard board(2);
  board.SetAssignmentKnown(true);
  board.Publish(View(0, ShardPhase::kRunning, ShardRole::kReplica));
  board.Publish(View(0, ShardPhase::kRestoring));                     // the owner takes the shard
  board.Publish(View(0, ShardPhase::kRunning, ShardRole::kReplica));  // the follower, late
  board.RemoveFollowerView(base::Partition(0));
  auto s = board.Read();
  ASSERT_EQ(s.shards.size(), 1u);
  EXPECT_EQ(s.shards[0]->role, ShardRole::kActive);
  EXPECT_EQ(s.shards[0]->phase, ShardPhase::kRestoring);
  EXPECT_FALSE(s.ready());
  // Once the owner lets go, the follower's views come and go again.
  board.Remove(base::Partition(0));
  board.Publish(View(0, ShardPhase::kRunning, ShardRole::kStandby));
  EXPECT_EQ(board.Read().shards[0]->role, ShardRole::kStandby);
  board.RemoveFollowerView(base::Partition(0));
  EXPECT_TRUE(board.Read().shards.empty());
}

TEST(StateBoard, ReportsAssignmentAndPartitionCountInItsSnapshot) {
  StateBoard board(6);
  board.SetAssignmentKnown(true);
  const auto s = board.Read();
  EXPECT_EQ(s.partitions, 6);
  EXPECT_TRUE(s.assignment_known);
}

TEST(ShardView, NamesRolesAndPhasesAndClampsLag) {
  EXPECT_STREQ(ShardRoleName(ShardRole::kActive), "active");
  EXPECT_STREQ(ShardRoleName(ShardRole::kStandby), "standby");
  EXPECT_STREQ(ShardPhaseName(ShardPhase::kRestoring), "restoring");
  EXPECT_STREQ(ShardPhaseName(ShardPhase::kRunning), "running");
  EXPECT_STREQ(ShardPhaseName(ShardPhase::kFailed), "failed");
  ShardView v;
  v.input_offset = base::Offset(10);
  v.high_watermark = base::Offset(4);  // a watermark seen before the offset moved past it
  EXPECT_EQ(v.lag(), 0);
  v.high_watermark = base::Offset(14);
  EXPECT_EQ(v.lag(), 4);
}

TEST(StateBoard, SaysATransactionOpenPastItsTimeoutIsStuck) {
  StateBoard board;
  board.SetTransactionOpenSince(1'000);
  EXPECT_TRUE(board.Read().StuckTransaction(100'000).empty()) << "no timeout told: not judged";
  board.SetTransactionTimeout(10'000);
  EXPECT_TRUE(board.Read().StuckTransaction(11'000).empty()) << "at its timeout";
  EXPECT_NE(board.Read().StuckTransaction(11'001).find("open for 10 s"), std::string::npos);
  board.SetTransactionOpenSince(-1);
  EXPECT_TRUE(board.Read().StuckTransaction(100'000).empty()) << "none open";
}

}  // namespace
}  // namespace oncecount::shard
