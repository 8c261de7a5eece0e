// History: the bounded ring of board samples behind GET /v1/history, fed by hand with
// board snapshots at chosen wall times.
#include "http/history.h"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <vector>

namespace oncecount::http {
namespace {

using shard::ShardPhase;
using shard::ShardRole;
using shard::ShardView;

std::shared_ptr<const ShardView> View(int32_t partition, uint64_t applied, ShardRole role,
                                      ShardPhase phase = ShardPhase::kRunning) {
  auto v = std::make_shared<ShardView>();
  v->partition = base::Partition(partition);
  v->role = role;
  v->phase = phase;
  v->events_applied = applied;
  v->duplicates_dropped = applied / 10;
  v->late_events = applied / 100;
  v->input_offset = base::Offset(static_cast<int64_t>(applied));
  v->high_watermark = base::Offset(static_cast<int64_t>(applied) + 7);
  v->replica_lag_ms = role == ShardRole::kActive ? -1 : 250;
  v->filter.filters = 3;
  v->filter.refresh_ms = 1500;
  v->filter.window_ms_guaranteed = 60000;
  v->filter.estimated_fpp = 1.5e-7;
  return v;
}

shard::StateBoard::Snapshot Board(std::vector<std::shared_ptr<const ShardView>> shards) {
  shard::StateBoard::Snapshot s;
  s.shards = std::move(shards);
  s.partitions = 2;
  s.assignment_known = true;
  return s;
}

TEST(History, KeepsWhatEachShardDidSinceThePreviousSampleAndHowItStood) {
  History history;
  history.Record(Board({View(0, 1000, ShardRole::kActive), View(1, 50, ShardRole::kStandby)}),
                 1000);
  history.Record(Board({View(0, 1400, ShardRole::kActive), View(1, 80, ShardRole::kStandby)}),
                 2000);

  const std::vector<HistorySample> samples = history.Since(0);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0].wall_ms, 1000);
  EXPECT_EQ(samples[0].shards[0].events_applied, 0u) << "a shard's first sample has no delta";
  const ShardSample& active = samples[1].shards[0];
  EXPECT_EQ(active.partition, 0);
  EXPECT_EQ(active.role, ShardRole::kActive);
  EXPECT_EQ(active.phase, ShardPhase::kRunning);
  EXPECT_EQ(active.events_applied, 400u);
  EXPECT_EQ(active.duplicates_dropped, 40u);
  EXPECT_EQ(active.late_events, 4u);
  EXPECT_EQ(active.lag, 7u);
  EXPECT_EQ(active.replica_lag_ms, -1);
  EXPECT_EQ(active.filters, 3);
  EXPECT_EQ(active.refresh_ms, 1500u);
  EXPECT_EQ(active.window_ms_guaranteed, 60000u);
  EXPECT_FLOAT_EQ(active.estimated_fpp, 1.5e-7f);
  EXPECT_EQ(samples[1].shards[1].events_applied, 30u);
  EXPECT_EQ(samples[1].shards[1].replica_lag_ms, 250);
}

TEST(History, StartsADeltaAgainWhenAShardsCountsGoDownOrItsRoleChanges) {
  History history;
  history.Record(Board({View(0, 1000, ShardRole::kStandby)}), 1000);
  history.Record(Board({View(0, 900, ShardRole::kActive)}), 2000);  // taken over
  history.Record(Board({View(0, 800, ShardRole::kActive)}), 3000);  // restored from older
  history.Record(Board({View(0, 850, ShardRole::kActive)}), 4000);
  const auto samples = history.Since(0);
  EXPECT_EQ(samples[1].shards[0].events_applied, 0u);
  EXPECT_EQ(samples[2].shards[0].events_applied, 0u);
  EXPECT_EQ(samples[3].shards[0].events_applied, 50u);
}

// Regression: a restoring shard's view holds no state and reads 0, so the sample
// after its restore showed everything it ever counted as done in one interval.
TEST(History, AShardThatRestoresKeepsItsCountsInsteadOfShowingThemAllAgain) {
  History history;
  history.Record(Board({View(0, 0, ShardRole::kActive, ShardPhase::kRestoring)}), 1000);
  history.Record(Board({View(0, 5000, ShardRole::kActive)}), 2000);  // restored at start
  history.Record(Board({View(0, 5100, ShardRole::kActive)}), 3000);
  history.Record(Board({View(0, 0, ShardRole::kActive, ShardPhase::kRestoring)}), 4000);
  history.Record(Board({View(0, 0, ShardRole::kActive, ShardPhase::kFailed)}), 5000);
  history.Record(Board({View(0, 5120, ShardRole::kActive)}), 6000);  // after an abort
  const auto samples = history.Since(0);
  ASSERT_EQ(samples.size(), 6u);
  EXPECT_EQ(samples[1].shards[0].events_applied, 0u) << "its first running sample";
  EXPECT_EQ(samples[2].shards[0].events_applied, 100u);
  EXPECT_EQ(samples[3].shards[0].events_applied, 0u);
  EXPECT_EQ(samples[3].shards[0].phase, ShardPhase::kRestoring);
  EXPECT_EQ(samples[4].shards[0].events_applied, 0u);
  EXPECT_EQ(samples[5].shards[0].events_applied, 20u);
}

TEST(History, ServesOnlyTheSamplesAfterTheGivenTime) {
  History history;
  for (int64_t t = 1000; t <= 5000; t += 1000)
    history.Record(Board({View(0, 0, ShardRole::kActive)}), t);
  const auto after = history.Since(3000);
  ASSERT_EQ(after.size(), 2u);
  EXPECT_EQ(after[0].wall_ms, 4000);
  EXPECT_TRUE(history.Since(5000).empty());
}

TEST(History, DropsTheOldestSamplesPastItsCountAndItsBytes) {
  History by_count({std::chrono::milliseconds(1000), 3, size_t{1} << 20});
  for (int64_t t = 1; t <= 5; ++t) by_count.Record(Board({View(0, 0, ShardRole::kActive)}), t);
  const auto kept = by_count.Since(0);
  ASSERT_EQ(kept.size(), 3u);
  EXPECT_EQ(kept.front().wall_ms, 3);
  EXPECT_EQ(by_count.bytes(), 3 * sizeof(ShardSample));

  // Room for five shard samples: two samples of two shards.
  History by_bytes({std::chrono::milliseconds(1000), 600, 5 * sizeof(ShardSample)});
  for (int64_t t = 1; t <= 4; ++t) {
    by_bytes.Record(Board({View(0, 0, ShardRole::kActive), View(1, 0, ShardRole::kActive)}), t);
  }
  EXPECT_EQ(by_bytes.Since(0).size(), 2u);
  EXPECT_LE(by_bytes.bytes(), 5 * sizeof(ShardSample));
}

// The figure the docs state: ten minutes of 24 shards in well under 1 MiB.
TEST(History, TenMinutesOfTwentyFourShardsTakeUnderOneMebibyte) {
  EXPECT_EQ(sizeof(ShardSample), 56u);
  History history;
  std::vector<std::shared_ptr<const ShardView>> shards;
  for (int32_t p = 0; p < 24; ++p) shards.push_back(View(p, 0, ShardRole::kActive));
  for (int64_t t = 0; t < 700; ++t) history.Record(Board(shards), t * 1000);
  EXPECT_EQ(history.Since(-1).size(), 600u);
  EXPECT_EQ(history.bytes(), 24u * 600u * 56u);
  EXPECT_LT(history.bytes(), size_t{1} << 20);
}

TEST(HistorySampler, RecordsOnTheIoContextUntilStopped) {
  boost::asio::io_context io;
  shard::StateBoard board(1);
  board.Publish(View(0, 10, ShardRole::kActive));
  History history({std::chrono::milliseconds(1), 600, size_t{1} << 20});
  int64_t now = 0;
  auto sampler = HistorySampler::Start(io, board, history, [&] { return ++now; });
  while (history.Since(0).size() < 3) io.run_one();
  sampler->Stop();
  io.run();  // returns once the timer is cancelled: nothing else is pending
  const size_t taken = history.Since(0).size();
  EXPECT_GE(taken, 3u);
  EXPECT_EQ(history.Since(0).front().wall_ms, 1);
}

}  // namespace
}  // namespace oncecount::http
