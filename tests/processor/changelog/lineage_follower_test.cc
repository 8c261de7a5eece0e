#include "processor/changelog/lineage_follower.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "processor/changelog/lineage.h"

namespace oncecount::changelog {
namespace {

using Step = LineageFollower::Step;

constexpr base::Partition kPartition{2};

BatchRecord Batch(uint64_t epoch, uint64_t seq, uint64_t claim = 0) {
  BatchRecord b;
  b.partition = kPartition;
  b.epoch = base::Epoch(epoch);
  b.seq = base::Seq(seq);
  b.claim = claim;
  b.input_from = base::Offset(static_cast<int64_t>(seq * 10));
  b.input_to = base::Offset(static_cast<int64_t>(seq * 10 + 10));
  return b;
}

ClaimRecord Claim(uint64_t epoch, uint64_t base_seq, uint64_t claim = 0) {
  return ClaimRecord{kPartition, base::Epoch(epoch), base::Seq(base_seq), claim};
}

std::string Encoded(const Record& record) {
  std::string out;
  EncodeRecord(record, out);
  return out;
}

TEST(LineageFollower, AppliesTheNextBatchesOfItsOwnersEpoch) {
  LineageFollower f(base::Epoch(1), base::Seq(0), 0);
  EXPECT_EQ(f.Next(Claim(1, 0)), Step::kSkip) << "the claim that started the epoch";
  EXPECT_EQ(f.Next(Batch(1, 1)), Step::kApply);
  EXPECT_EQ(f.Next(Batch(1, 2)), Step::kApply);
  EXPECT_EQ(f.applied_seq().value(), 2u);
  EXPECT_EQ(f.epoch().value(), 1u);
}

TEST(LineageFollower, FollowsANewOwnerThatContinuesFromItsLastBatch) {
  LineageFollower f(base::Epoch(1), base::Seq(3), 0);
  EXPECT_EQ(f.Next(Claim(2, 3)), Step::kSkip);
  EXPECT_EQ(f.epoch().value(), 2u);
  EXPECT_EQ(f.Next(Batch(2, 4)), Step::kApply);
  EXPECT_EQ(f.applied_seq().value(), 4u);
}

TEST(LineageFollower, IgnoresAZombiesBatchesAfterANewOwnersClaim) {
  LineageFollower f(base::Epoch(1), base::Seq(3), 0);
  ASSERT_EQ(f.Next(Claim(2, 3)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 4)), Step::kSkip) << "the old owner, fenced in the changelog";
  EXPECT_EQ(f.Next(Batch(2, 4)), Step::kApply);
  EXPECT_EQ(f.Next(Batch(1, 5)), Step::kSkip);
  EXPECT_EQ(f.applied_seq().value(), 4u);
}

// An owner's transaction aborted after a replica had read its batch (the embedded
// cluster shows aborted records); the owner's new claim goes back before it.
TEST(LineageFollower, RebuildsWhenAClaimCutsBackABatchItApplied) {
  LineageFollower f(base::Epoch(1), base::Seq(4), 0);
  ASSERT_EQ(f.Next(Batch(1, 5)), Step::kApply);
  EXPECT_EQ(f.Next(Claim(2, 4)), Step::kRebuild);
}

TEST(LineageFollower, RebuildsWhenBatchesAreMissing) {
  LineageFollower f(base::Epoch(1), base::Seq(4), 0);
  EXPECT_EQ(f.Next(Batch(1, 6)), Step::kRebuild);
  LineageFollower g(base::Epoch(1), base::Seq(4), 0);
  EXPECT_EQ(g.Next(Claim(2, 6)), Step::kRebuild) << "the claimer saw batches we did not";
}

TEST(LineageFollower, RebuildsWhenANewerEpochRewritesABatchItHolds) {
  LineageFollower f(base::Epoch(1), base::Seq(5), 0);
  EXPECT_EQ(f.Next(Batch(2, 5)), Step::kRebuild);
}

// A replica handed back to the follower (after a revocation) re-reads the
// partition from its start: everything it holds already is skipped.
TEST(LineageFollower, SkipsHistoryItHoldsWhenReadingThePartitionAgain) {
  LineageFollower f(base::Epoch(2), base::Seq(4), 0);
  EXPECT_EQ(f.Next(Claim(1, 0)), Step::kSkip);
  for (uint64_t seq : {1, 2}) EXPECT_EQ(f.Next(Batch(1, seq)), Step::kSkip);
  EXPECT_EQ(f.Next(Claim(2, 2)), Step::kSkip);
  for (uint64_t seq : {3, 4}) EXPECT_EQ(f.Next(Batch(2, seq)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(2, 5)), Step::kApply);
}

TEST(LineageFollower, SkipsSnapshotChunks) {
  LineageFollower f(base::Epoch(1), base::Seq(1), 0);
  EXPECT_EQ(f.Next(SnapshotChunk{kPartition, base::Epoch(1), base::Seq(1), 0, 1, "state"}),
            Step::kSkip);
  EXPECT_EQ(f.applied_seq().value(), 1u);
}

// Retention (or DeleteRecords) took a new owner's claim and batch while the state
// was not following, and its tail begins with that owner's snapshot: the state lacks
// the batch the snapshot stands for, and the snapshot's epoch was claimed. It was
// skipped as nothing new, and a take-over then claimed that epoch a second time, which
// every later reader refuses, dropping the taker's work as a rival's.
TEST(LineageFollower, RebuildsOnASnapshotOfAnEpochWhoseClaimItNeverSaw) {
  LineageFollower f(base::Epoch(1), base::Seq(1), 0xf1);
  EXPECT_EQ(f.Next(SnapshotChunk{kPartition, base::Epoch(2), base::Seq(2), 0, 2, "sta", 0xab}),
            Step::kRebuild);
  LineageFollower zombie(base::Epoch(2), base::Seq(1), 0xab);
  EXPECT_EQ(zombie.Next(SnapshotChunk{kPartition, base::Epoch(1), base::Seq(2), 0, 1, "s", 0xf1}),
            Step::kSkip)
      << "an older epoch's snapshot is a zombie's";
}

TEST(LineageFollower, SkipsASecondClaimOfItsEpochAndTheBatchesWrittenUnderIt) {
  LineageFollower f(base::Epoch(1), base::Seq(1), 0xf1);
  EXPECT_EQ(f.Next(Claim(1, 0, 0x5e)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 2, 0x5e)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 1, 0x5e)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 2, 0xf1)), Step::kApply);
  EXPECT_EQ(f.applied_seq().value(), 2u);
  EXPECT_EQ(f.Next(Claim(2, 2, 0xab)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(2, 3, 0xab)), Step::kApply);
}

// Seeking: a local checkpoint's state after batch (1, 2) of claim 7, read from where
// its claimer's read ended.
TEST(LineageFollower, SeekingFindsItsBatchOnTheLineageAndFollowsFromIt) {
  LineageFollower f = LineageFollower::Seeking(base::Epoch(1), base::Seq(2), 7);
  EXPECT_TRUE(f.seeking());
  EXPECT_EQ(f.Next(Claim(1, 0, 7)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 1, 7)), Step::kSkip) << "the state holds it";
  EXPECT_TRUE(f.seeking());
  EXPECT_EQ(f.Next(Batch(1, 2, 7)), Step::kSkip) << "its own batch";
  EXPECT_FALSE(f.seeking());
  EXPECT_EQ(f.Next(Batch(1, 3, 7)), Step::kApply);
  EXPECT_EQ(f.Next(Claim(2, 3, 9)), Step::kSkip) << "a new owner continues from it";
  EXPECT_EQ(f.Next(Batch(2, 4, 9)), Step::kApply);
  EXPECT_EQ(f.epoch().value(), 2u);
  EXPECT_EQ(f.applied_seq().value(), 4u);
}

// Resuming: a local checkpoint's state after batch (1, 2) of claim 7, whose owner knew
// its records were alone since its claim, read from its snapshot's last chunk on.
TEST(LineageFollower, ResumingFindsItsSnapshotsLastChunkAndFollowsFromIt) {
  LineageFollower f = LineageFollower::Resuming(base::Epoch(1), base::Seq(2), 7);
  EXPECT_TRUE(f.seeking());
  EXPECT_EQ(f.Next(SnapshotChunk{kPartition, base::Epoch(1), base::Seq(2), 2, 3, "end", 7}),
            Step::kSkip);
  EXPECT_FALSE(f.seeking());
  EXPECT_EQ(f.Next(Batch(1, 3, 7)), Step::kApply);
  EXPECT_EQ(f.Next(Batch(1, 3, 9)), Step::kSkip) << "under a refused claim of its epoch";
  EXPECT_EQ(f.Next(Claim(2, 3, 9)), Step::kSkip) << "a new owner continues from it";
  EXPECT_EQ(f.Next(Batch(2, 4, 9)), Step::kApply);
  EXPECT_EQ(f.applied_seq().value(), 4u);
}

// Anything else at the snapshot's end (another chunk, another claim's, a batch, a
// claim): the checkpoint is not of this changelog. The follower stays seeking and
// applies nothing after, whatever comes.
TEST(LineageFollower, ResumingStaysSeekingWhenTheFirstRecordIsNotItsSnapshotsLastChunk) {
  const std::vector<Record> wrong = {
      SnapshotChunk{kPartition, base::Epoch(1), base::Seq(2), 1, 3, "middle", 7},
      SnapshotChunk{kPartition, base::Epoch(1), base::Seq(2), 2, 3, "end", 8},
      SnapshotChunk{kPartition, base::Epoch(1), base::Seq(1), 0, 1, "older", 7},
      SnapshotChunk{kPartition, base::Epoch(2), base::Seq(2), 0, 1, "newer epoch", 7},
      Batch(1, 2, 7),
      Claim(1, 0, 7),
  };
  for (size_t i = 0; i < wrong.size(); ++i) {
    LineageFollower f = LineageFollower::Resuming(base::Epoch(1), base::Seq(2), 7);
    EXPECT_EQ(f.Next(wrong[i]), Step::kSkip) << i;
    EXPECT_EQ(f.Next(SnapshotChunk{kPartition, base::Epoch(1), base::Seq(2), 2, 3, "end", 7}),
              Step::kSkip)
        << i;
    EXPECT_EQ(f.Next(Batch(1, 3, 7)), Step::kSkip) << i;
    EXPECT_TRUE(f.seeking()) << i;
  }
}

TEST(LineageFollower, SeekingFindsItsBatchWhenItsClaimWasDeleted) {
  LineageFollower f = LineageFollower::Seeking(base::Epoch(3), base::Seq(5), 7);
  EXPECT_EQ(f.Next(Batch(3, 4, 7)), Step::kSkip);  // the read began at the log start
  EXPECT_EQ(f.Next(Batch(3, 5, 7)), Step::kSkip);
  EXPECT_FALSE(f.seeking());
  EXPECT_EQ(f.epoch().value(), 3u);
}

TEST(LineageFollower, SeekingRefusesAZombiesBatchThatANewerClaimSuperseded) {
  LineageFollower f = LineageFollower::Seeking(base::Epoch(1), base::Seq(2), 7);
  EXPECT_EQ(f.Next(Claim(1, 0, 7)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 1, 7)), Step::kSkip);
  EXPECT_EQ(f.Next(Claim(2, 1, 9)), Step::kSkip) << "a successor claims before the batch lands";
  EXPECT_EQ(f.Next(Batch(1, 2, 7)), Step::kRebuild);
  EXPECT_TRUE(f.seeking()) << "the batch is not on the lineage";

  LineageFollower g = LineageFollower::Seeking(base::Epoch(1), base::Seq(2), 7);
  EXPECT_EQ(g.Next(Batch(2, 2, 9)), Step::kSkip) << "a newer epoch's batch 2, its claim deleted";
  EXPECT_EQ(g.Next(Batch(1, 2, 7)), Step::kRebuild);
}

TEST(LineageFollower, SeekingRefusesABatchWrittenUnderARefusedSecondClaim) {
  LineageFollower f = LineageFollower::Seeking(base::Epoch(2), base::Seq(2), 7);
  EXPECT_EQ(f.Next(Claim(2, 1, 9)), Step::kSkip) << "the epoch's first claim";
  EXPECT_EQ(f.Next(Claim(2, 1, 7)), Step::kSkip) << "a second claim of epoch 2: refused";
  EXPECT_EQ(f.Next(Batch(2, 2, 7)), Step::kRebuild);
}

// Read from the log start: retention cut a successor's batch 3 off just before its
// snapshot, which stands for it (lineage.h); the zombie's batch after it is not on the
// lineage. A snapshot whose head was deleted stands for nothing.
TEST(LineageFollower, SeekingTakesANewerEpochFromACompleteSnapshotWhoseBatchWasDeleted) {
  const auto chunk = [](uint32_t index) {
    return SnapshotChunk{kPartition, base::Epoch(2), base::Seq(3), index, 2, "half", 9};
  };
  LineageFollower f = LineageFollower::Seeking(base::Epoch(1), base::Seq(4), 7);
  EXPECT_EQ(f.Next(chunk(0)), Step::kSkip);
  EXPECT_EQ(f.Next(chunk(1)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 4, 7)), Step::kRebuild);

  LineageFollower g = LineageFollower::Seeking(base::Epoch(1), base::Seq(4), 7);
  EXPECT_EQ(g.Next(chunk(1)), Step::kSkip);
  EXPECT_EQ(g.Next(Batch(1, 4, 7)), Step::kSkip);
  EXPECT_FALSE(g.seeking());
}

// A local checkpoint of a snapshot its owner wrote without a batch (its changelog had
// lost the newest one): the sought batch is in an earlier transaction, deleted; the
// complete snapshot of it is the sought state.
TEST(LineageFollower, SeekingFindsItsStateInACompleteSnapshotOfItsBatch) {
  const auto chunk = [](uint32_t index, uint64_t claim = 7) {
    return SnapshotChunk{kPartition, base::Epoch(1), base::Seq(4), index, 2, "half", claim};
  };
  LineageFollower f = LineageFollower::Seeking(base::Epoch(1), base::Seq(4), 7);
  EXPECT_EQ(f.Next(chunk(0)), Step::kSkip);
  EXPECT_TRUE(f.seeking()) << "half a snapshot is no state";
  EXPECT_EQ(f.Next(chunk(1)), Step::kSkip);
  EXPECT_FALSE(f.seeking());
  EXPECT_EQ(f.Next(Batch(1, 5, 7)), Step::kApply);
  EXPECT_EQ(f.applied_seq().value(), 5u);

  LineageFollower g = LineageFollower::Seeking(base::Epoch(1), base::Seq(4), 7);
  EXPECT_EQ(g.Next(chunk(0, 8)), Step::kSkip);
  EXPECT_EQ(g.Next(chunk(1, 8)), Step::kSkip);
  EXPECT_TRUE(g.seeking()) << "another claim's snapshot of batch 4";
}

TEST(LineageFollower, SeekingStaysSeekingWhenItsBatchIsNotThere) {
  LineageFollower f = LineageFollower::Seeking(base::Epoch(1), base::Seq(2), 7);
  EXPECT_EQ(f.Next(Claim(1, 0, 8)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 1, 8)), Step::kSkip);
  EXPECT_EQ(f.Next(Batch(1, 2, 8)), Step::kSkip) << "another claim's batch 2 (another cluster)";
  EXPECT_EQ(f.Next(Batch(1, 3, 8)), Step::kSkip);
  EXPECT_TRUE(f.seeking());
}

// Random histories as owners write them — claims, batches, transactions that
// abort after their batch was written, zombies that write after being fenced, and
// a second claimer of an epoch already claimed that writes under its own id —
// read by a replica that follows record by record and rebuilds with a
// LineageBuilder over what it read so far whenever told to. At every point it holds
// exactly the batches a restore from the same records would replay.
TEST(LineageFollower, AlwaysHoldsTheBatchesARestoreFromTheSameRecordsWouldReplay) {
  std::mt19937 rng(20261123);
  int rebuilds = 0;
  for (int history = 0; history < 300; ++history) {
    SCOPED_TRACE("history " + std::to_string(history));
    std::vector<std::string> log;  // encoded, as the partition holds it
    uint64_t epoch = 0;
    uint64_t claim = 0;      // the id of the owner's claim
    uint64_t committed = 0;  // the last batch of the committed lineage
    uint64_t zombie_epoch = 0;
    uint64_t zombie_claim = 0;
    for (int step = 0; step < 40; ++step) {
      const unsigned kind = rng() % 12;
      if (kind == 0 || epoch == 0) {  // a new owner
        zombie_epoch = epoch;
        zombie_claim = claim;
        claim = rng() | 1;
        log.push_back(Encoded(Claim(++epoch, committed, claim)));
      } else if (kind == 1) {  // an attempt that aborts: its batch is visible
        log.push_back(Encoded(Batch(epoch, committed + 1, claim)));
        claim = rng() | 1;
        log.push_back(Encoded(Claim(++epoch, committed, claim)));
      } else if (kind == 2 && zombie_epoch > 0) {  // a fenced owner writes on
        log.push_back(Encoded(Batch(zombie_epoch, committed + 1 + rng() % 2, zombie_claim)));
      } else if (kind == 3) {  // a second claimer of the epoch, and its batch
        const uint64_t rogue = rng() | 1;
        const uint64_t base = committed - (committed > 0 ? rng() % 2 : 0);
        log.push_back(Encoded(Claim(epoch, base, rogue)));
        log.push_back(Encoded(Batch(epoch, base + 1, rogue)));
      } else {
        log.push_back(Encoded(Batch(epoch, ++committed, claim)));
      }
    }
    std::vector<std::pair<uint64_t, uint64_t>> replica;  // (seq, epoch) applied
    LineageFollower follower(base::Epoch(0), base::Seq(0), 0);
    for (size_t i = 0; i < log.size(); ++i) {
      LineageBuilder restore;
      for (size_t j = 0; j <= i; ++j) restore.Add(log[j]);
      const base::Epoch restore_epoch = restore.epoch();
      auto plan = std::move(restore).Finish();
      ASSERT_TRUE(plan.ok()) << plan.error();
      std::vector<std::pair<uint64_t, uint64_t>> expected;
      for (const BatchRecord& b : plan->batches)
        expected.emplace_back(b.seq.value(), b.epoch.value());

      auto record = DecodeRecord(log[i]);
      ASSERT_TRUE(record.ok()) << record.error();
      const Step step = follower.Next(record.value());
      if (step == Step::kApply) {
        const auto& b = std::get<BatchRecord>(record.value());
        replica.emplace_back(b.seq.value(), b.epoch.value());
      } else if (step == Step::kRebuild) {
        replica = expected;
        follower = LineageFollower(restore_epoch, plan->last_seq, plan->claim);
        ++rebuilds;
      }
      ASSERT_EQ(replica, expected) << "after record " << i;
      ASSERT_EQ(follower.applied_seq(), plan->last_seq);
      ASSERT_EQ(follower.epoch(), restore_epoch);
    }
  }
  // The histories did make replicas rebuild (aborted attempts), and not always.
  EXPECT_GT(rebuilds, 50);
  EXPECT_LT(rebuilds, 300 * 40 / 4);
}

// A local checkpoint after any batch of a random history (new owners, visible aborted
// attempts, zombies writing on, rival claims of an epoch), checked from the first
// claim of its epoch (where its claimer's read ended, at the latest): whenever the
// seeking follower accepts it, a restore of the whole partition has that batch in
// its lineage and ends where the follower ends.
TEST(LineageFollower, SeekingAcceptsOnlyACheckpointARestoreOfTheWholePartitionAgreesWith) {
  std::mt19937 rng(20261126);
  int accepted = 0, refused = 0;
  for (int history = 0; history < 300; ++history) {
    SCOPED_TRACE("history " + std::to_string(history));
    std::vector<std::string> log;  // encoded, as the partition holds it
    uint64_t epoch = 0, claim = 0, committed = 0, zombie_epoch = 0, zombie_claim = 0;
    for (int step = 0; step < 30; ++step) {
      const unsigned kind = rng() % 12;
      if (kind == 0 || epoch == 0) {
        zombie_epoch = epoch;
        zombie_claim = claim;
        claim = rng() | 1;
        log.push_back(Encoded(Claim(++epoch, committed, claim)));
      } else if (kind == 1) {
        log.push_back(Encoded(Batch(epoch, committed + 1, claim)));
        claim = rng() | 1;
        log.push_back(Encoded(Claim(++epoch, committed, claim)));
      } else if (kind == 2 && zombie_epoch > 0) {
        log.push_back(Encoded(Batch(zombie_epoch, committed + 1 + rng() % 2, zombie_claim)));
      } else if (kind == 3) {
        const uint64_t rogue = rng() | 1;
        const uint64_t base = committed - (committed > 0 ? rng() % 2 : 0);
        log.push_back(Encoded(Claim(epoch, base, rogue)));
        log.push_back(Encoded(Batch(epoch, base + 1, rogue)));
      } else {
        log.push_back(Encoded(Batch(epoch, ++committed, claim)));
      }
    }
    LineageBuilder whole;
    for (const std::string& r : log) whole.Add(std::string_view(r));
    const base::Epoch whole_epoch = whole.epoch();
    auto plan = std::move(whole).Finish();
    ASSERT_TRUE(plan.ok()) << plan.error();
    std::vector<Record> records;
    for (const std::string& r : log) records.push_back(DecodeRecord(r).value());
    for (size_t i = 0; i < records.size(); ++i) {
      const auto* batch = std::get_if<BatchRecord>(&records[i]);
      if (batch == nullptr) continue;
      size_t from = 0;
      while (!(std::holds_alternative<ClaimRecord>(records[from]) &&
               std::get<ClaimRecord>(records[from]).epoch == batch->epoch)) {
        ++from;
      }
      LineageFollower f = LineageFollower::Seeking(batch->epoch, batch->seq, batch->claim);
      bool rebuilt = false;
      for (size_t j = from; j < records.size() && !rebuilt; ++j)
        rebuilt = f.Next(records[j]) == Step::kRebuild;
      if (rebuilt || f.seeking()) {
        ++refused;
        continue;
      }
      ++accepted;
      SCOPED_TRACE("checkpoint after record " + std::to_string(i));
      EXPECT_EQ(f.epoch(), whole_epoch);
      EXPECT_EQ(f.applied_seq(), plan->last_seq);
      const auto on_lineage = std::find_if(plan->batches.begin(), plan->batches.end(),
                                           [&](const BatchRecord& b) { return b == *batch; });
      EXPECT_NE(on_lineage, plan->batches.end()) << "a batch off the lineage was accepted";
    }
  }
  EXPECT_GT(accepted, 1000);
  EXPECT_GT(refused, 200) << "zombies and rival claims did make checkpoints unusable";
}

}  // namespace
}  // namespace oncecount::changelog
