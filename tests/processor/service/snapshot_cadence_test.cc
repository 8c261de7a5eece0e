#include "processor/service/snapshot_cadence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace oncecount::service {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

SnapshotCadence Cadence(size_t retention_bytes) {
  SnapshotCadence c;
  c.retention_bytes = retention_bytes;
  return c;
}

TEST(SnapshotCadence, WithoutAKnownRetentionWritesAtLeastAsManyBatchBytesAsTheSnapshotTook) {
  EXPECT_EQ(SnapshotDueAfterBytes(Cadence(0), 0), kMiB);
  EXPECT_EQ(SnapshotDueAfterBytes(Cadence(0), 300 * 1024), kMiB);
  EXPECT_EQ(SnapshotDueAfterBytes(Cadence(0), 40 * kMiB), 40 * kMiB);
  EXPECT_FALSE(SnapshotOutgrowsRetention(Cadence(0), 40 * kMiB));
}

TEST(SnapshotCadence, UnderAKnownRetentionLeavesRoomForTwoSnapshotsAndTheBatchesBetween) {
  // The embedded cluster's 5 MB: 1.5 MiB snapshots leave 5 x 7/8 - 3 MiB of batches.
  const size_t due = SnapshotDueAfterBytes(Cadence(5 * kMiB), 3 * kMiB / 2);
  EXPECT_EQ(due, 5 * kMiB - 5 * kMiB / 8 - 3 * kMiB);
  EXPECT_LE(2 * (3 * kMiB / 2) + due, 5 * kMiB);
  // Small snapshots: the usual floor, which fits.
  EXPECT_EQ(SnapshotDueAfterBytes(Cadence(5 * kMiB), 100 * 1024), kMiB);
  // A large retention changes nothing.
  EXPECT_EQ(SnapshotDueAfterBytes(Cadence(256 * kMiB), 40 * kMiB), 40 * kMiB);
}

TEST(SnapshotCadence, ASnapshotTooLargeForTwoInTheRetentionOutgrowsItAndKeepsTheUsualRule) {
  const SnapshotCadence c = Cadence(5 * kMiB);
  EXPECT_FALSE(SnapshotOutgrowsRetention(c, 2 * kMiB));
  EXPECT_TRUE(SnapshotOutgrowsRetention(c, 3 * kMiB));
  // Writing it more often would not keep two of them; writing it after every few
  // kilobytes would only multiply the changelog's bytes.
  EXPECT_EQ(SnapshotDueAfterBytes(c, 3 * kMiB), 3 * kMiB);
}

TEST(SnapshotCadence, NeverAsksForFewerBatchBytesBetweenSnapshotsThanItsMinimum) {
  SnapshotCadence c = Cadence(kMiB);
  for (size_t snapshot = 0; snapshot < kMiB; snapshot += 4096) {
    if (SnapshotOutgrowsRetention(c, snapshot)) continue;
    EXPECT_GE(SnapshotDueAfterBytes(c, snapshot), c.min_between_bytes) << snapshot;
  }
}

// Shards adopted together start at different points of their cycles, spread evenly:
// of an instance's 24 partitions, each eighth of the cycle holds two to four, and of
// 256 partitions each sixteenth holds twelve to twenty.
TEST(SnapshotCadence, SpreadsTheShardsOfAnInstanceOverTheCycle) {
  const auto spread = [](int partitions, int bins) {
    std::vector<int> counts(static_cast<size_t>(bins));
    for (int p = 0; p < partitions; ++p) {
      const double phase = SnapshotPhase(base::Partition(p));
      EXPECT_GE(phase, 0.0);
      EXPECT_LT(phase, 1.0);
      ++counts[std::min(static_cast<size_t>(phase * bins), counts.size() - 1)];
    }
    return counts;
  };
  for (int n : spread(24, 8)) {
    EXPECT_GE(n, 2);
    EXPECT_LE(n, 4);
  }
  for (int n : spread(256, 16)) {
    EXPECT_GE(n, 12);
    EXPECT_LE(n, 20);
  }
}

// A new owner goes on with the cycle its changelog holds: under a 5 MiB retention,
// a kept snapshot of 1.5 MiB and 2 MiB of batches after it leave room for no more
// batches before the next snapshot (two snapshots and the batches between must fit in
// seven eighths, 4.375 MiB); counted afresh, another MiB of batches would go in first.
TEST(SnapshotCadence, AnAdoptedShardGoesOnWithTheCycleItsChangelogHolds) {
  const SnapshotCadence c = Cadence(5 * kMiB);
  const AdoptedCycle full =
      AdoptedSnapshotCycle(c, base::Partition(0), SnapshotCycleKept{3 * kMiB / 2, 2 * kMiB});
  EXPECT_EQ(full.last_snapshot_bytes, 3 * kMiB / 2);
  EXPECT_GE(full.bytes_since_snapshot, SnapshotDueAfterBytes(c, full.last_snapshot_bytes))
      << "due at the first commit";
  const AdoptedCycle light =
      AdoptedSnapshotCycle(c, base::Partition(0), SnapshotCycleKept{kMiB / 2, kMiB / 8});
  EXPECT_EQ(light.bytes_since_snapshot, kMiB / 8);
  EXPECT_LT(light.bytes_since_snapshot, SnapshotDueAfterBytes(c, light.last_snapshot_bytes));
  // Partition 1 starts 0.618 of the way through, whatever little the changelog holds.
  const AdoptedCycle staggered =
      AdoptedSnapshotCycle(c, base::Partition(1), SnapshotCycleKept{kMiB / 2, kMiB / 8});
  EXPECT_EQ(staggered.bytes_since_snapshot,
            static_cast<size_t>(SnapshotPhase(base::Partition(1)) *
                                static_cast<double>(SnapshotDueAfterBytes(c, kMiB / 2))));
}

// A standby's state cannot say what the changelog holds: under a known retention its
// first snapshot is due at once; without one, the usual rule has no inequality to keep.
TEST(SnapshotCadence, AShardAdoptedWithoutKnowingWhatItsChangelogHoldsSnapshotsAtOnce) {
  const SnapshotCadence known = Cadence(5 * kMiB);
  const AdoptedCycle at_once = AdoptedSnapshotCycle(known, base::Partition(0), std::nullopt);
  EXPECT_EQ(at_once.bytes_since_snapshot, SnapshotDueAfterBytes(known, 0));
  const SnapshotCadence unknown = Cadence(0);
  const AdoptedCycle staggered = AdoptedSnapshotCycle(unknown, base::Partition(0), std::nullopt);
  EXPECT_EQ(staggered.bytes_since_snapshot, 0u) << "partition 0: the cycle's beginning";
}

}  // namespace
}  // namespace oncecount::service
