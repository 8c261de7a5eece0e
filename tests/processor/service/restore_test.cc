#include "processor/service/restore.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/changelog/lineage_follower.h"
#include "tests/testing/serialized_bytes.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using changelog::BatchRecord;
using changelog::ClaimRecord;

constexpr base::Partition kPartition{2};
constexpr filter::IdHashKey kShardKey{0x6b6579};
const ClaimDraw kDraw{0xc2, filter::IdHashKey{0xd1ffe4e7}};
constexpr int64_t kT0 = 1'700'000'000'000;

shard::InputMessage Event(int64_t offset, std::string_view id) {
  return {base::Offset(offset), id, R"({"counter":"c","delta":1})", kT0 + offset};
}

std::string Encoded(const changelog::Record& record) {
  std::string out;
  changelog::EncodeRecord(record, out);
  return out;
}

// What the shard's first owner wrote: its claim, carrying `key`, then one batch of
// one event, hashed with that key.
std::vector<std::string> FirstOwnersChangelog(filter::IdHashKey key, bool with_snapshot = false,
                                              const std::string& group = "") {
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  EXPECT_TRUE(made.ok());
  shard::ShardState& owner = *made.value();
  const ClaimRecord claim{kPartition, base::Epoch(1), base::Seq(), 0xc1, key.value, group};
  owner.SetClaim(claim.epoch, claim.claim, key);
  EXPECT_EQ(owner.Apply(Event(0, "client/1"), filter::Millis{kT0}).outcome,
            shard::Outcome::kApplied);
  std::vector<BatchRecord> batches = owner.Seal(base::Epoch(1));
  EXPECT_EQ(batches.size(), 1u);
  std::vector<std::string> records{Encoded(claim), Encoded(batches.at(0))};
  owner.MarkCommitted(base::Epoch(1));
  if (with_snapshot) {
    for (std::string& chunk : changelog::EncodeSnapshotChunks(
             kPartition, base::Epoch(1), 0xc1, group, base::Seq(1),
             owner.EncodeSnapshot(base::Epoch(1)), changelog::kMaxRecordBytes)) {
      records.push_back(std::move(chunk));
    }
  }
  return records;
}

// A record of format 5 as format 4 wrote it: without the key (the 8 bytes after the
// header of a claim or a batch), resealed.
std::string AsFormat4(std::string record) {
  record.erase(record.size() - 8);
  record.erase(36, 8);
  record[4] = 4;
  const uint64_t sum = XXH3_64bits(record.data(), record.size());
  for (int i = 0; i < 8; ++i) record.push_back(static_cast<char>(sum >> (8 * i)));
  return record;
}

// The retry of the first owner's event, applied by the restored owner.
shard::Outcome RetryOutcome(shard::ShardState& restored) {
  return restored.Apply(Event(1, "client/1"), filter::Millis{kT0 + 1}).outcome;
}

TEST(Restore, AShardsFirstClaimTakesTheClaimersFreshKey) {
  auto restored = RestoreCold(kPartition, std::vector<std::string>{}, testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().claim.hash_key, kDraw.fresh_hash_key.value);
  EXPECT_EQ(restored.value().state->hash_key(), kDraw.fresh_hash_key);
}

TEST(Restore, WithoutASnapshotTakesTheKeyOfTheClaimsItReadAndCatchesRetries) {
  auto restored =
      RestoreCold(kPartition, FirstOwnersChangelog(kShardKey), testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().claim.hash_key, kShardKey.value);
  EXPECT_EQ(RetryOutcome(*restored.value().state), shard::Outcome::kDuplicate);
}

TEST(Restore, FromASnapshotTakesItsKeyAndCatchesRetries) {
  auto restored = RestoreCold(kPartition, FirstOwnersChangelog(kShardKey, /*with_snapshot=*/true),
                              testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().claim.hash_key, kShardKey.value);
  EXPECT_EQ(RetryOutcome(*restored.value().state), shard::Outcome::kDuplicate);
}

// A shard from before keys existed: its claims and batches (format 4) decode with
// key 0, and its batches hold unkeyed hashes, so the new owner keeps hashing unkeyed.
// Regression: records that did not decode were counted in the plan and reported
// nowhere: a bad record at the lineage's tail made a restore go on from an earlier
// batch without a word. The summary now says so (the processor logs it as a warning).
// Regression: a record a newer release wrote was skipped as unreadable, and the
// restore went on from an older state and claimed an epoch the newer release had
// used (a rolling upgrade rolled back, or an old standby taking over).
TEST(Restore, RefusesAChangelogANewerReleaseWroteTo) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  // The first record as the next format would carry it (its version field, resealed).
  records.push_back(
      testing::WithField(records.front(), 4, 2, changelog::kChangelogFormatVersion + 1));
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), kDraw);
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.message().find("records of format " +
                                    std::to_string(changelog::kChangelogFormatVersion + 1) +
                                    ", which a newer release wrote"),
            std::string::npos)
      << restored.message();
  EXPECT_EQ(changelog::NewerFormatOf(records.front()), std::nullopt);
  std::string damaged = records.back();
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 1);
  EXPECT_EQ(changelog::NewerFormatOf(damaged), std::nullopt) << "damaged is not newer";
}

// A hand-over's tail holding a newer release's record is not followed (its claim may
// be one the new owner would clash with): the cold restore then refuses the shard.
TEST(Restore, AHandOverDoesNotCatchUpOverARecordANewerReleaseWrote) {
  std::vector<std::string> tail = FirstOwnersChangelog(kShardKey);
  tail.push_back(testing::WithField(tail.front(), 4, 2, changelog::kChangelogFormatVersion + 1));
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff handoff{std::move(made).value(),
                           changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                           base::Offset(0)};
  auto taken = CatchUp(kPartition, std::move(handoff), tail, kDraw, "its standby replica");
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.code(), base::Errc::kCorrupt) << "a cold restore says why";
}

// Regression: the damaged records a standby's build skipped were logged on its
// instance and not carried in the hand-over: the new active's shard said it had read
// every record of its changelog.
TEST(Restore, AHandOverCountsTheDamagedRecordsItsReplicaSkippedWithItsTails) {
  std::vector<std::string> tail = FirstOwnersChangelog(kShardKey);
  std::string damaged = tail.back();
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 1);
  tail.push_back(damaged);
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff handoff{std::move(made).value(),
                           changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                           base::Offset(0), 2};
  auto restored = CatchUp(kPartition, std::move(handoff), tail, kDraw, "its standby replica");
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored->unreadable_records, 3u);
  EXPECT_NE(restored->summary.find("3 changelog record(s) could not be read"), std::string::npos)
      << restored->summary;
}

TEST(Restore, SaysHowManyUnreadableRecordsItSkipped) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  std::string corrupt = records.back();
  corrupt[corrupt.size() / 2] = static_cast<char>(corrupt[corrupt.size() / 2] ^ 1);
  records.push_back(corrupt);
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().unreadable_records, 1u);
  EXPECT_NE(restored.value().summary.find("1 changelog record(s) could not be read"),
            std::string::npos)
      << restored.value().summary;

  auto clean =
      RestoreCold(kPartition, FirstOwnersChangelog(kShardKey), testing::TestDedup(), kDraw);
  ASSERT_TRUE(clean.ok()) << clean.error();
  EXPECT_EQ(clean.value().unreadable_records, 0u);
  EXPECT_EQ(clean.value().summary.find("could not be read"), std::string::npos);
}

TEST(Restore, AShardFromBeforeKeysKeepsHashingUnkeyed) {
  std::vector<std::string> records = FirstOwnersChangelog(filter::kUnkeyed);
  for (std::string& r : records) r = AsFormat4(r);
  ASSERT_TRUE(changelog::DecodeRecord(records[1]).ok());
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().claim.hash_key, 0u);
  EXPECT_EQ(RetryOutcome(*restored.value().state), shard::Outcome::kDuplicate);
}

// Retention may delete a claim's segment before the shard's first snapshot: the
// batches after it carry the key all the same.
TEST(Restore, WhenRetentionDeletedTheClaimTakesTheKeyFromTheBatches) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  records.erase(records.begin());  // the claim
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), kDraw);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored.value().claim.hash_key, kShardKey.value);
  EXPECT_EQ(RetryOutcome(*restored.value().state), shard::Outcome::kDuplicate);
}

// Records that disagree on the key (a defective or hostile writer): which hashes the
// filter holds is unknown, and the restore fails loudly instead of guessing.
TEST(Restore, RefusesAChangelogThatDisagreesOnTheKey) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  const ClaimRecord rival{kPartition, base::Epoch(2), base::Seq(1), 0xc3, 0xbad};
  records.push_back(Encoded(rival));
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), kDraw);
  ASSERT_FALSE(restored.ok());
  EXPECT_NE(restored.message().find("disagrees on the shard's id hash key"), std::string::npos)
      << restored.message();
}

// The draw of an instance of consumer group `group`.
ClaimDraw DrawOf(std::string group) {
  ClaimDraw draw = kDraw;
  draw.group = std::move(group);
  return draw;
}

// The first owner's changelog, then a claim of the shard by an instance of `group`.
std::vector<std::string> ClaimedLastBy(std::string group) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  records.push_back(Encoded(ClaimRecord{kPartition, base::Epoch(2), base::Seq(1), 0xc3,
                                        kShardKey.value, std::move(group)}));
  return records;
}

// Regression: a second deployment (another kafka.group_id) on the same input topic
// restored the first one's shards and claimed them: the two took each other's state,
// their transactional ids fencing nothing of the other's, and nothing said so.
TEST(Restore, RefusesAShardAnotherConsumerGroupClaimedLast) {
  auto refused =
      RestoreCold(kPartition, ClaimedLastBy("production"), testing::TestDedup(), DrawOf("canary"));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.code(), base::Errc::kBadConfig);
  EXPECT_NE(refused.message().find("the changelog's newest claim is by consumer group "
                                   "\"production\", not this instance's \"canary\""),
            std::string::npos)
      << refused.message();
  auto restored = RestoreCold(kPartition, ClaimedLastBy("production"), testing::TestDedup(),
                              DrawOf("production"));
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored->claim.group, "production");
  EXPECT_EQ(restored->claim.epoch, base::Epoch(3));
}

// Retention removes a long-running shard's claim, not its newest snapshot: the
// snapshot names the group, and another deployment is refused all the same.
TEST(Restore, RefusesAShardAnotherConsumerGroupClaimedAfterRetentionRemovedTheClaim) {
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey, true, "production");
  records.erase(records.begin(), records.begin() + 2);  // the claim and the batch before
  auto refused = RestoreCold(kPartition, records, testing::TestDedup(), DrawOf("canary"));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("newest claim is by consumer group \"production\""),
            std::string::npos)
      << refused.message();
  auto restored = RestoreCold(kPartition, records, testing::TestDedup(), DrawOf("production"));
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(RetryOutcome(*restored->state), shard::Outcome::kDuplicate);
  // A standby built from that snapshot hands over only to its group.
  auto follower_of = [&records] {
    changelog::LineageFollower follower =
        changelog::LineageFollower::Seeking(base::Epoch(1), base::Seq(1), 0xc1);
    for (const std::string& r : records) follower.Next(changelog::DecodeRecord(r).value());
    return follower;
  };
  EXPECT_EQ(follower_of().group(), "production");
}

// After a rename (kafka.previous_group_id), the old group's shards are taken, and
// their claims name the new group from then on.
TEST(Restore, TakesAShardOfThePreviousGroupAfterARename) {
  ClaimDraw renamed = DrawOf("oncecount-v2");
  renamed.previous_group = "production";
  auto restored =
      RestoreCold(kPartition, ClaimedLastBy("production"), testing::TestDedup(), renamed);
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored->claim.group, "oncecount-v2");
}

// Claims before format 6 name no group: the shard is taken, and its claim names the
// claimer's group from then on.
TEST(Restore, TakesAShardWhoseClaimsNameNoGroupAndNamesItsOwn) {
  auto restored = RestoreCold(kPartition, FirstOwnersChangelog(kShardKey), testing::TestDedup(),
                              DrawOf("canary"));
  ASSERT_TRUE(restored.ok()) << restored.error();
  EXPECT_EQ(restored->claim.group, "canary");
  std::vector<std::string> records = FirstOwnersChangelog(kShardKey);
  records.push_back(Encoded(restored->claim));
  EXPECT_FALSE(RestoreCold(kPartition, records, testing::TestDedup(), DrawOf("production")).ok());
}

// A standby hands its shard over only when the claims it followed are its group's.
TEST(Restore, AHandOverDoesNotTakeAShardAnotherConsumerGroupClaimed) {
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff handoff{std::move(made).value(),
                           changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                           base::Offset(0)};
  auto taken = CatchUp(kPartition, std::move(handoff), ClaimedLastBy("production"),
                       DrawOf("canary"), "its standby replica");
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.code(), base::Errc::kBadConfig) << "a cold restore would be refused too";
  EXPECT_NE(taken.message().find("consumer group \"production\""), std::string::npos)
      << taken.message();
}

// A standby built before the shard's first claim learns the key from the claim it
// follows, and the claim it makes when it takes over carries that key.
TEST(Restore, ATakeOverCarriesTheKeyOfTheClaimsTheReplicaFollowed) {
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff handoff{std::move(made).value(),
                           changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                           base::Offset(0)};
  auto taken = CatchUp(kPartition, std::move(handoff), FirstOwnersChangelog(kShardKey), kDraw,
                       "its standby replica");
  ASSERT_TRUE(taken.ok()) << taken.error();
  EXPECT_EQ(taken->claim.hash_key, kShardKey.value);
  EXPECT_EQ(RetryOutcome(*taken->state), shard::Outcome::kDuplicate);
}

// A failover's shards went on from no snapshot cycle: under a known retention each
// snapshotted at its first commit, every one of them in one transaction. A take-over
// carries the cycle the replica followed, and the tail's records carry it on.
TEST(Restore, ATakeOverGoesOnWithTheSnapshotCycleItsReplicaFollowed) {
  const std::vector<std::string> records = FirstOwnersChangelog(kShardKey, /*with_snapshot=*/true);
  auto made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff batches_only{std::move(made).value(),
                                changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                                base::Offset(0), 0, changelog::SnapshotCycle(700, 30)};
  const std::vector<std::string> claim_and_batch(records.begin(), records.begin() + 2);
  auto taken = CatchUp(kPartition, std::move(batches_only), claim_and_batch, kDraw, "its standby");
  ASSERT_TRUE(taken.ok()) << taken.error();
  ASSERT_TRUE(taken->kept.has_value());
  const auto batch = changelog::DecodeRecord(records[1]);
  ASSERT_TRUE(batch.ok());
  const size_t batch_bytes = changelog::BatchRecordBytes(std::get<BatchRecord>(batch.value()));
  EXPECT_EQ(taken->kept->snapshot_bytes, 700u);
  EXPECT_EQ(taken->kept->batch_bytes, 30u + batch_bytes);

  made = shard::ShardState::Create(kPartition, testing::TestDedup(), filter::Millis{0});
  ASSERT_TRUE(made.ok());
  replica::Handoff with_snapshot{std::move(made).value(),
                                 changelog::LineageFollower(base::Epoch(), base::Seq(), 0),
                                 base::Offset(0), 0, changelog::SnapshotCycle(700, 30)};
  taken = CatchUp(kPartition, std::move(with_snapshot), records, kDraw, "its standby");
  ASSERT_TRUE(taken.ok()) << taken.error();
  size_t snapshot_bytes = 0;
  for (size_t i = 2; i < records.size(); ++i) {
    const auto chunk = changelog::DecodeRecord(records[i]);
    ASSERT_TRUE(chunk.ok());
    snapshot_bytes += std::get<changelog::SnapshotChunk>(chunk.value()).bytes.size();
  }
  ASSERT_GT(snapshot_bytes, 0u);
  EXPECT_EQ(taken->kept->snapshot_bytes, snapshot_bytes) << "the snapshot after the batch";
  EXPECT_EQ(taken->kept->batch_bytes, 0u);
}

}  // namespace
}  // namespace oncecount::service
