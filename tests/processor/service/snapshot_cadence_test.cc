#include "processor/service/snapshot_cadence.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace oncecount::service
