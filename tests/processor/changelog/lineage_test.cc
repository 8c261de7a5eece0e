#include "processor/changelog/lineage.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "processor/changelog/changelog_record.h"

namespace oncecount::changelog {
namespace {

constexpr base::Partition kPartition{4};

// A batch whose content identifies it: its input range follows its seq and one
// counter holds its epoch, so a plan's batches can be told apart.
BatchRecord Batch(uint64_t epoch, uint64_t seq) {
  BatchRecord b;
  b.partition = kPartition;
  b.epoch = base::Epoch(epoch);
  b.seq = base::Seq(seq);
  b.input_from = base::Offset(static_cast<int64_t>(seq * 10));
  b.input_to = base::Offset(static_cast<int64_t>(seq * 10 + 10));
  b.segments = {{static_cast<int64_t>(seq), {seq * 1000 + epoch}}};
  b.counters = {{"epoch", static_cast<int64_t>(epoch)}};
  b.stats.applied = 1;
  return b;
}

ClaimRecord Claim(uint64_t epoch, uint64_t base_seq) {
  return ClaimRecord{kPartition, base::Epoch(epoch), base::Seq(base_seq)};
}

std::vector<SnapshotChunk> Snapshot(uint64_t epoch, uint64_t seq,
                                    const std::vector<std::string>& chunks) {
  std::vector<SnapshotChunk> out;
  for (size_t i = 0; i < chunks.size(); ++i) {
    out.push_back({kPartition, Epoch(epoch), Seq(seq), static_cast<uint32_t>(i),
                   static_cast<uint32_t>(chunks.size()), chunks[i]});
  }
  return out;
}

// A builder in the test's keep mode, used as a restore uses it: when one that lets
// go of records (kFromNewestSnapshot) needs them after all, Finish reads everything
// again with kEverything, as ShardLoader does. Every test runs in both modes, so
// the two reach the same plans.
class Builder {
 public:
  explicit Builder(LineageBuilder::Keep keep) : streaming_(keep) {}

  void Add(std::string_view encoded) {
    fed_.emplace_back(encoded);
    streaming_.Add(encoded);
    everything_.Add(encoded);
  }
  void Add(const Record& record) {
    std::string bytes;
    EncodeRecord(record, bytes);
    Add(bytes);
  }
  Epoch epoch() const { return Current().epoch(); }
  Seq last_seq() const { return Current().last_seq(); }
  base::Status CheckStart(base::Offset log_start) const { return Current().CheckStart(log_start); }

  base::Result<RestorePlan> Finish() && {
    if (!streaming_.needs_full_read()) return std::move(streaming_).Finish();
    LineageBuilder again;
    for (const std::string& r : fed_) again.Add(std::string_view(r));
    return std::move(again).Finish();
  }

 private:
  const LineageBuilder& Current() const {
    return streaming_.needs_full_read() ? everything_ : streaming_;
  }
  std::vector<std::string> fed_;
  LineageBuilder streaming_;
  LineageBuilder everything_;
};

// Feeds records as the restore does: encoded, as they come off the partition.
void Feed(Builder& builder, const Record& record) {
  builder.Add(record);
}

void Feed(Builder& builder, const std::vector<SnapshotChunk>& chunks) {
  for (const SnapshotChunk& c : chunks) Feed(builder, c);
}

RestorePlan Planned(Builder builder) {
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  if (!plan.ok()) {
    ADD_FAILURE() << plan.error();
    return {};
  }
  return std::move(plan).value();
}

std::vector<std::pair<uint64_t, uint64_t>> SeqsAndEpochs(const RestorePlan& plan) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const BatchRecord& b : plan.batches) out.emplace_back(b.seq.value(), b.epoch.value());
  return out;
}

using SeqEpoch = std::vector<std::pair<uint64_t, uint64_t>>;

class Lineage : public ::testing::TestWithParam<LineageBuilder::Keep> {};

TEST_P(Lineage, PlansNothingForAnEmptyChangelog) {
  Builder builder(GetParam());
  EXPECT_EQ(builder.epoch().value(), 0u);
  EXPECT_EQ(builder.last_seq().value(), 0u);
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 0u);
  EXPECT_EQ(plan.last_seq.value(), 0u);
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(plan.snapshot_seq.value(), 0u);
  EXPECT_TRUE(plan.batches.empty());
  EXPECT_EQ(plan.ignored_records, 0u);
}

TEST_P(Lineage, PlansAClaimWithoutBatchesAsEmpty) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  EXPECT_EQ(builder.epoch().value(), 1u);
  EXPECT_EQ(builder.last_seq().value(), 0u);
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 1u);
  EXPECT_EQ(plan.last_seq.value(), 0u);
  EXPECT_TRUE(plan.batches.empty());
}

TEST_P(Lineage, KeepsEveryBatchOfASingleOwnerInOrder) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  for (uint64_t seq = 1; seq <= 3; ++seq) Feed(builder, Batch(1, seq));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 1u);
  EXPECT_EQ(plan.last_seq.value(), 3u);
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 1}, {3, 1}}));
  ASSERT_EQ(plan.batches.size(), 3u);
  EXPECT_EQ(plan.batches[1], Batch(1, 2));  // whole records, as written
  EXPECT_EQ(plan.ignored_records, 0u);
}

TEST_P(Lineage, IgnoresAZombieBatchAfterANewerClaim) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Claim(2, 2));
  Feed(builder, Batch(1, 3));  // the old owner has not noticed yet
  Feed(builder, Batch(2, 3));
  Feed(builder, Batch(1, 4));  // and still writes
  EXPECT_EQ(builder.epoch().value(), 2u);
  EXPECT_EQ(builder.last_seq().value(), 3u);
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 2u);
  EXPECT_EQ(plan.last_seq.value(), 3u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 1}, {3, 2}}));
  EXPECT_EQ(plan.ignored_records, 2u);
}

TEST_P(Lineage, DropsAnAbortedAttemptThatTheRecoveryClaimDoesNotContinue) {
  // Epoch 1 committed batches 1 and 2; its transaction with batch 3 aborted but a
  // reader still sees it. The owner recovers with claim (2, base 2) and writes a
  // new batch 3.
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Batch(1, 3));
  Feed(builder, Claim(2, 2));
  EXPECT_EQ(builder.last_seq().value(), 2u);  // what the claimer continues from
  Feed(builder, Batch(2, 3));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.last_seq.value(), 3u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 1}, {3, 2}}));
  EXPECT_EQ(plan.batches[2], Batch(2, 3));
  EXPECT_EQ(plan.ignored_records, 1u);  // the aborted batch 3
}

TEST_P(Lineage, ARecoveryClaimAloneDropsTheAbortedAttempt) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));  // aborted
  Feed(builder, Claim(2, 1));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 2u);
  EXPECT_EQ(plan.last_seq.value(), 1u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}}));
}

TEST_P(Lineage, ABatchOfANewerEpochSupersedesAnOlderEpochsBatchesFromItsSeqOn) {
  // The newer owner's claim was lost (to retention, say): its batch alone shows
  // that the older epoch's batch 2 and 3 were an attempt that did not count.
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Batch(1, 3));
  Feed(builder, Batch(2, 2));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 2u);
  EXPECT_EQ(plan.last_seq.value(), 2u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 2}}));
  EXPECT_EQ(plan.ignored_records, 2u);  // epoch 1's batches 2 and 3
}

TEST_P(Lineage, IgnoresAClaimThatIsNotNewerThanTheEpochSeen) {
  Builder builder(GetParam());
  Feed(builder, Claim(2, 0));
  Feed(builder, Batch(2, 1));
  Feed(builder, Batch(2, 2));
  Feed(builder, Claim(2, 0));  // a stale claim of the same epoch
  Feed(builder, Claim(1, 0));  // and of an older one
  EXPECT_EQ(builder.epoch().value(), 2u);
  EXPECT_EQ(builder.last_seq().value(), 2u);
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 2}, {2, 2}}));
  EXPECT_EQ(plan.ignored_records, 2u);
}

// A claimer that read less of the changelog than it should could write a second
// claim of an epoch already claimed. Every reader keeps the first claim's lineage
// and ignores the second claim and everything written under its id.
TEST_P(Lineage, KeepsTheFirstClaimOfAnEpochAndIgnoresASecondOneWithItsBatchesAndSnapshots) {
  constexpr uint64_t kFirst = 0xf1, kSecond = 0x5e;
  auto under = [](auto record, uint64_t claim) {
    record.claim = claim;
    return record;
  };
  Builder builder(GetParam());
  Feed(builder, under(Claim(1, 0), kFirst));
  Feed(builder, under(Batch(1, 1), kFirst));
  Feed(builder, under(Claim(1, 0), kSecond));  // the same epoch, another claimer
  Feed(builder, under(Batch(1, 1), kSecond));
  Feed(builder, under(Batch(1, 2), kSecond));
  for (SnapshotChunk c : Snapshot(1, 2, {"second's"})) Feed(builder, under(c, kSecond));
  Feed(builder, under(Batch(1, 2), kFirst));
  EXPECT_EQ(builder.last_seq().value(), 2u);
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_EQ(plan.batches.size(), 2u);
  EXPECT_EQ(plan.batches[0], under(Batch(1, 1), kFirst));
  EXPECT_EQ(plan.batches[1], under(Batch(1, 2), kFirst));
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(plan.claim, kFirst);
  EXPECT_EQ(plan.ignored_records, 4u);  // the second claim, its two batches and its chunk
}

TEST_P(Lineage, RecordsWithoutAClaimIdBelongToWhicheverClaimHoldsTheirEpoch) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));  // format 2: no claim id
  Feed(builder, Batch(1, 1));
  ClaimRecord upgraded = Claim(2, 1);  // the first owner of format 3
  upgraded.claim = 0x77;
  Feed(builder, upgraded);
  Feed(builder, Batch(2, 2));  // a format-2 record of that epoch still counts
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 2}}));
  EXPECT_EQ(plan.claim, 0x77u);
  EXPECT_EQ(plan.ignored_records, 0u);
}

TEST_P(Lineage, IgnoresABatchWithSeqZero) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 0));
  Feed(builder, Batch(1, 1));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}}));
  EXPECT_EQ(plan.ignored_records, 1u);
}

TEST_P(Lineage, RestoresFromASnapshotAndTheBatchesAfterIt) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Snapshot(1, 2, {"first|", "second|", "third"}));
  Feed(builder, Batch(1, 3));
  Feed(builder, Batch(1, 4));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "first|second|third");
  EXPECT_EQ(plan.snapshot_seq.value(), 2u);
  EXPECT_EQ(plan.last_seq.value(), 4u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{3, 1}, {4, 1}}));
  EXPECT_EQ(plan.ignored_records, 0u);
}

TEST_P(Lineage, RestoresFromASnapshotOfTheLastBatchWithNoBatchesAfterIt) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Snapshot(1, 1, {"state"}));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "state");
  EXPECT_EQ(plan.snapshot_seq.value(), 1u);
  EXPECT_EQ(plan.last_seq.value(), 1u);
  EXPECT_TRUE(plan.batches.empty());
}

TEST_P(Lineage, UsesTheNewestOfSeveralCompleteSnapshots) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Snapshot(1, 1, {"one"}));
  Feed(builder, Batch(1, 2));
  Feed(builder, Batch(1, 3));
  Feed(builder, Snapshot(1, 3, {"th", "ree"}));
  Feed(builder, Batch(1, 4));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "three");
  EXPECT_EQ(plan.snapshot_seq.value(), 3u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{4, 1}}));
}

TEST_P(Lineage, FallsBackToAnEarlierSnapshotWhenTheNewestLacksChunks) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Snapshot(1, 2, {"old-a", "old-b"}));
  Feed(builder, Batch(1, 3));
  Feed(builder, Batch(1, 4));
  std::vector<SnapshotChunk> newest = Snapshot(1, 4, {"new-a", "new-b", "new-c"});
  newest.pop_back();  // the last chunk never arrived
  Feed(builder, newest);
  Feed(builder, Batch(1, 5));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "old-aold-b");
  EXPECT_EQ(plan.snapshot_seq.value(), 2u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{3, 1}, {4, 1}, {5, 1}}));
}

// Regression: the second chunk of a snapshot whose first was lost (damaged, and so
// skipped) was checked against the snapshot before it, found not to match, and made
// that one unusable too: in a lineage that keeps only what follows the newest
// snapshot, the restore then lacked the batches it had let go of.
TEST_P(Lineage, KeepsTheSnapshotBeforeOneWhoseFirstChunkWasLost) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Snapshot(1, 2, {"old-a", "old-b"}));
  Feed(builder, Batch(1, 3));
  std::vector<SnapshotChunk> newest = Snapshot(1, 3, {"new-a", "new-b"});
  Feed(builder, newest[1]);  // its first chunk never arrived
  Feed(builder, Batch(1, 4));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "old-aold-b");
  EXPECT_EQ(plan.snapshot_seq.value(), 2u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{3, 1}, {4, 1}}));
}

TEST_P(Lineage, DoesNotUseASnapshotWithAChunkMissingInTheMiddle) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  std::vector<SnapshotChunk> chunks = Snapshot(1, 1, {"a", "b", "c"});
  Feed(builder, chunks[0]);
  Feed(builder, chunks[2]);
  Feed(builder, Batch(1, 2));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 1}}));
  EXPECT_EQ(plan.ignored_records, 1u);  // the out-of-order chunk
}

TEST_P(Lineage, DoesNotUseASnapshotThatALaterClaimWithALowerBaseDropped) {
  // Batch 2 and its snapshot were written in a transaction that aborted; the
  // recovery claim continues from batch 1.
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Snapshot(1, 1, {"after-1"}));
  Feed(builder, Batch(1, 2));
  Feed(builder, Snapshot(1, 2, {"after-2"}));
  Feed(builder, Claim(2, 1));
  Feed(builder, Batch(2, 2));
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "after-1");
  EXPECT_EQ(plan.snapshot_seq.value(), 1u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{2, 2}}));
}

TEST_P(Lineage, DoesNotUseAnyDroppedSnapshotEvenWithoutAnEarlierOne) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Snapshot(1, 2, {"after-2"}));
  Feed(builder, Claim(2, 1));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(plan.last_seq.value(), 1u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}}));
}

TEST_P(Lineage, IgnoresSnapshotChunksOfAZombieEpoch) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Claim(2, 1));
  Feed(builder, Batch(1, 2));  // zombie
  Feed(builder, Snapshot(1, 2, {"zombie"}));
  Feed(builder, Batch(2, 2));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_FALSE(plan.snapshot.has_value());
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 2}}));
  EXPECT_EQ(plan.ignored_records, 2u);
}

TEST_P(Lineage, ReportsTheMissingBatchOfAGap) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  Feed(builder, Batch(1, 4));
  EXPECT_EQ(builder.last_seq().value(), 4u);
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("lacks batch 3 of 4"), std::string::npos) << plan.error();
}

TEST_P(Lineage, ReportsBatchesLostAtTheStartWithoutASnapshot) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 3));  // 1 and 2 were deleted by retention
  Feed(builder, Batch(1, 4));
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("lacks batch 1 "), std::string::npos) << plan.error();
}

TEST_P(Lineage, ReportsAClaimWhoseBaseBatchIsMissing) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Claim(2, 2));  // batch 2 was lost
  EXPECT_EQ(builder.last_seq().value(), 2u);
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("lacks batch 2 of 2"), std::string::npos) << plan.error();
}

TEST_P(Lineage, ReportsAGapAfterTheSnapshot) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  Feed(builder, Snapshot(1, 1, {"s"}));
  Feed(builder, Batch(1, 3));
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("lacks batch 2 of 3 after snapshot 1"), std::string::npos)
      << plan.error();
}

TEST_P(Lineage, RestoresWhenRecordsLostAtTheStartAreCoveredByASnapshot) {
  // Retention deleted the claim and batches 1..4; the snapshot after batch 5
  // stands for all of them.
  Builder builder(GetParam());
  Feed(builder, Batch(3, 5));
  Feed(builder, Snapshot(3, 5, {"covers-1-to-5"}));
  Feed(builder, Batch(3, 6));
  Feed(builder, Batch(3, 7));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 3u);
  EXPECT_EQ(plan.last_seq.value(), 7u);
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "covers-1-to-5");
  EXPECT_EQ(plan.snapshot_seq.value(), 5u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{6, 3}, {7, 3}}));
}

TEST_P(Lineage, RestoresFromASnapshotWhoseOwnBatchWasDeletedJustBeforeIt) {
  // Retention cut the partition between batch 5 and the snapshot written after it in
  // the same transaction; the shard then went idle.
  Builder builder(GetParam());
  Feed(builder, Snapshot(3, 5, {"covers-", "1-to-5"}));
  EXPECT_EQ(builder.epoch().value(), 3u);
  EXPECT_EQ(builder.last_seq().value(), 5u);
  EXPECT_TRUE(builder.CheckStart(base::Offset(40)).ok());
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.epoch.value(), 3u);
  EXPECT_EQ(plan.last_seq.value(), 5u);
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "covers-1-to-5");
  EXPECT_EQ(plan.snapshot_seq.value(), 5u);
  EXPECT_TRUE(plan.batches.empty());

  Builder continued(GetParam());
  Feed(continued, Snapshot(3, 5, {"covers-1-to-5"}));
  Feed(continued, Batch(3, 6));
  EXPECT_EQ(SeqsAndEpochs(Planned(std::move(continued))), (SeqEpoch{{6, 3}}));
}

TEST_P(Lineage, ASnapshotStandingForItsDeletedBatchIsDroppedByANewerClaimBelowIt) {
  Builder builder(GetParam());
  Feed(builder, Snapshot(3, 5, {"s"}));
  Feed(builder, Claim(4, 4));  // continues from batch 4, which is gone
  EXPECT_EQ(builder.last_seq().value(), 4u);
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("lacks batch 1 of 4"), std::string::npos) << plan.error();
}

TEST_P(Lineage, RefusesToStartFromNothingAfterDeletedRecords) {
  Builder builder(GetParam());
  EXPECT_TRUE(builder.CheckStart(base::Offset(0)).ok()) << "a new shard starts empty";
  const base::Status emptied = builder.CheckStart(base::Offset(12));
  ASSERT_FALSE(emptied.ok());
  EXPECT_EQ(emptied.error().code(), base::Errc::kCorrupt);
  EXPECT_NE(emptied.error().message().find("records before offset 12 were deleted"),
            std::string::npos)
      << emptied.error();
  EXPECT_NE(emptied.error().message().find("reset its counters to zero"), std::string::npos);

  Feed(builder, Snapshot(2, 3, {"a", "b"})[1]);  // a snapshot whose head was deleted
  builder.Add("not a changelog record");
  EXPECT_FALSE(builder.CheckStart(base::Offset(12)).ok()) << "nothing here begins a lineage";

  Feed(builder, Claim(3, 0));  // a claimer that found nothing, after the deletion
  EXPECT_TRUE(builder.CheckStart(base::Offset(12)).ok());
}

TEST_P(Lineage, IgnoresSnapshotChunksWhoseHeadWasLost) {
  Builder builder(GetParam());
  std::vector<SnapshotChunk> chunks = Snapshot(1, 1, {"a", "b"});
  Feed(builder, chunks[1]);  // chunk 0 went to retention
  Feed(builder, Batch(1, 2));
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());  // batch 1 is gone and no snapshot covers it
  EXPECT_NE(plan.message().find("lacks batch 1 "), std::string::npos) << plan.error();
}

TEST_P(Lineage, CountsUndecodableRecordsAsIgnored) {
  Builder builder(GetParam());
  Feed(builder, Batch(1, 1));
  builder.Add(std::string_view("not a changelog record"));
  builder.Add(std::string_view());
  std::string corrupt;
  EncodeRecord(Batch(1, 2), corrupt);
  corrupt[30] ^= 0x10;
  builder.Add(corrupt);
  Feed(builder, Batch(1, 2));
  const RestorePlan plan = Planned(std::move(builder));
  EXPECT_EQ(plan.ignored_records, 3u);
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{1, 1}, {2, 1}}));
}

TEST_P(Lineage, AcceptsDecodedRecordsToo) {
  Builder builder(GetParam());
  builder.Add(Record{Claim(1, 0)});
  builder.Add(Record{Batch(1, 1)});
  for (const SnapshotChunk& c : Snapshot(1, 1, {"x", "y"})) builder.Add(Record{c});
  builder.Add(Record{Batch(1, 2)});
  const RestorePlan plan = Planned(std::move(builder));
  ASSERT_TRUE(plan.snapshot.has_value());
  EXPECT_EQ(*plan.snapshot, "xy");
  EXPECT_EQ(SeqsAndEpochs(plan), (SeqEpoch{{2, 1}}));
}

TEST_P(Lineage, TracksTheEpochAndLastSeqAsRecordsArrive) {
  Builder builder(GetParam());
  Feed(builder, Claim(1, 0));
  EXPECT_EQ(builder.epoch().value(), 1u);
  EXPECT_EQ(builder.last_seq().value(), 0u);
  Feed(builder, Batch(1, 1));
  Feed(builder, Batch(1, 2));
  EXPECT_EQ(builder.epoch().value(), 1u);
  EXPECT_EQ(builder.last_seq().value(), 2u);
  Feed(builder, Claim(5, 2));
  EXPECT_EQ(builder.epoch().value(), 5u);
  EXPECT_EQ(builder.last_seq().value(), 2u);
  Feed(builder, Batch(5, 3));
  EXPECT_EQ(builder.last_seq().value(), 3u);
  Feed(builder, Batch(4, 4));  // a zombie moves neither
  EXPECT_EQ(builder.epoch().value(), 5u);
  EXPECT_EQ(builder.last_seq().value(), 3u);
  Feed(builder, Claim(6, 1));  // a claim continuing from an earlier batch
  EXPECT_EQ(builder.epoch().value(), 6u);
  EXPECT_EQ(builder.last_seq().value(), 1u);
}

TEST(LineageKeepingFromTheNewestSnapshot, HoldsOnlyTheNewestSnapshotAndTheBatchesAfterIt) {
  LineageBuilder builder(LineageBuilder::Keep::kFromNewestSnapshot);
  builder.Add(Record{Claim(1, 0)});
  uint64_t seq = 0;
  for (int round = 0; round < 5; ++round) {
    for (int i = 0; i < 10; ++i) builder.Add(Record{Batch(1, ++seq)});
    for (const SnapshotChunk& c : Snapshot(1, seq, {"s" + std::to_string(round), "!"})) {
      builder.Add(Record{c});
    }
    EXPECT_EQ(builder.held_batches(), 0u) << "round " << round;
    EXPECT_EQ(builder.held_snapshots(), 1u) << "round " << round;
  }
  for (int i = 0; i < 3; ++i) builder.Add(Record{Batch(1, ++seq)});
  EXPECT_EQ(builder.held_batches(), 3u);
  EXPECT_EQ(builder.last_seq().value(), 53u);
  base::Result<RestorePlan> kept = std::move(builder).Finish();
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_EQ(kept.value().snapshot, "s4!");
  EXPECT_EQ(kept.value().snapshot_seq.value(), 50u);
  EXPECT_EQ(SeqsAndEpochs(kept.value()), (SeqEpoch{{51, 1}, {52, 1}, {53, 1}}));
}

TEST(LineageKeepingFromTheNewestSnapshot, AsksForAFullReadWhenAClaimCutsBackBeforeItsSnapshot) {
  // Batch 2 and its snapshot were written in a transaction that aborted, and the
  // embedded cluster shows them; the recovery claim continues from batch 1, whose
  // snapshot the builder let go of when the newer one came in.
  LineageBuilder builder(LineageBuilder::Keep::kFromNewestSnapshot);
  builder.Add(Record{Claim(1, 0)});
  builder.Add(Record{Batch(1, 1)});
  for (const SnapshotChunk& c : Snapshot(1, 1, {"after-1"})) builder.Add(Record{c});
  builder.Add(Record{Batch(1, 2)});
  for (const SnapshotChunk& c : Snapshot(1, 2, {"after-2"})) builder.Add(Record{c});
  EXPECT_EQ(builder.held_snapshots(), 1u);
  EXPECT_FALSE(builder.needs_full_read());
  builder.Add(Record{Claim(2, 1)});
  EXPECT_TRUE(builder.needs_full_read());
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.message().find("read it again"), std::string::npos) << plan.error();
}

TEST(LineageKeepingFromTheNewestSnapshot, ANewerClaimFromItsSnapshotOnNeedsNothingItLetGo) {
  LineageBuilder builder(LineageBuilder::Keep::kFromNewestSnapshot);
  builder.Add(Record{Claim(1, 0)});
  builder.Add(Record{Batch(1, 1)});
  builder.Add(Record{Batch(1, 2)});
  for (const SnapshotChunk& c : Snapshot(1, 2, {"after-2"})) builder.Add(Record{c});
  builder.Add(Record{Claim(2, 2)});
  builder.Add(Record{Batch(2, 3)});
  EXPECT_FALSE(builder.needs_full_read());
  base::Result<RestorePlan> plan = std::move(builder).Finish();
  ASSERT_TRUE(plan.ok()) << plan.error();
  EXPECT_EQ(plan.value().snapshot_seq.value(), 2u);
  EXPECT_EQ(SeqsAndEpochs(plan.value()), (SeqEpoch{{3, 2}}));
}

INSTANTIATE_TEST_SUITE_P(, Lineage,
                         ::testing::Values(LineageBuilder::Keep::kEverything,
                                           LineageBuilder::Keep::kFromNewestSnapshot),
                         [](const ::testing::TestParamInfo<LineageBuilder::Keep>& keep) {
                           return keep.param == LineageBuilder::Keep::kEverything
                                      ? "KeepingEverything"
                                      : "KeepingFromTheNewestSnapshot";
                         });

}  // namespace
}  // namespace oncecount::changelog
