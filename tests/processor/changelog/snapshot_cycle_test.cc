// SnapshotCycle: a follower's place in the shard's snapshot cycle moves to a snapshot
// only when every chunk of it arrived in order, as a restore would use it.
#include "processor/changelog/snapshot_cycle.h"

#include <gtest/gtest.h>

#include <string>

namespace oncecount::changelog {
namespace {

constexpr base::Partition kPartition{0};

SnapshotChunk Chunk(uint64_t seq, uint32_t index, uint32_t count, size_t bytes) {
  return SnapshotChunk{
      kPartition, base::Epoch(1), base::Seq(seq), index, count, std::string(bytes, 's'), 0xc1};
}

BatchRecord Batch(uint64_t seq) {
  BatchRecord b;
  b.partition = kPartition;
  b.epoch = base::Epoch(1);
  b.seq = base::Seq(seq);
  b.claim = 0xc1;
  b.counters = {{"n", 1}};
  return b;
}

TEST(SnapshotCycle, StartsAgainFromASnapshotOnceAllItsChunksArrived) {
  SnapshotCycle cycle(100, 10);
  cycle.OnBatch(Batch(1));
  EXPECT_EQ(cycle.batch_bytes(), 10 + BatchRecordBytes(Batch(1)));
  cycle.OnChunk(Chunk(1, 0, 2, 40));
  EXPECT_EQ(cycle.snapshot_bytes(), 100u) << "half a snapshot is not one";
  cycle.OnChunk(Chunk(1, 1, 2, 25));
  EXPECT_EQ(cycle.snapshot_bytes(), 65u);
  EXPECT_EQ(cycle.batch_bytes(), 0u);
}

TEST(SnapshotCycle, IgnoresASnapshotWithAChunkMissingOrWhoseHeadWasLost) {
  SnapshotCycle cycle(100, 10);
  cycle.OnChunk(Chunk(1, 0, 3, 40));
  cycle.OnChunk(Chunk(1, 2, 3, 40));  // chunk 1 missing
  cycle.OnChunk(Chunk(2, 1, 2, 40));  // chunk 0 of another lost
  EXPECT_EQ(cycle.snapshot_bytes(), 100u);
  EXPECT_EQ(cycle.batch_bytes(), 10u);
}

}  // namespace
}  // namespace oncecount::changelog
