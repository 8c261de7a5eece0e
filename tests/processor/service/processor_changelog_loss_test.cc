// Processor against a changelog that lost a shard's state (SPEC guarantee 6), on the
// StrictKafka double.
//
// Time retention deletes an idle shard's whole changelog partition once its newest
// record is retention.ms old (log start = log end); DeleteRecords can do the same.
// A restore that read such a partition would find nothing and start the shard from
// zero, at epoch 1, from the input's oldest offset. The processor refuses instead:
// at start when the cluster tells a setting that allows it, and at every restore
// when the partition's log starts above 0 and nothing in it begins a lineage —
// the shard fails with the reason in its view (/readyz, /v1/stats), its restore
// retries counted, while the other shards run.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "processor/service/processor.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::ExpectExactlyOnce;
using testing::NewCluster;
using testing::RunFor;
using testing::RunUntil;
using testing::Send;
using testing::StrictKafka;
using Instance = testing::StrictInstance;

constexpr int32_t kPartitions = testing::kServicePartitions;
constexpr const char* kChangelog = "events.changelog";

// The changelog's settings as deploy/create-topics.sh makes them: delete, no time
// limit, bounded by size.
void AsCreateTopicsMakesIt(StrictKafka& kafka) {
  kafka.SetCleanupPolicy(kChangelog, "delete");
  kafka.SetRetentionMs(kChangelog, -1);
  kafka.SetRetentionBytes(kChangelog, size_t{64} << 20);
}

// Every input partition's committed offset, to show that nothing was consumed again.
std::vector<std::optional<int64_t>> CommittedInput(StrictKafka& kafka) {
  std::vector<std::optional<int64_t>> out;
  for (int32_t p = 0; p < kPartitions; ++p) {
    out.push_back(kafka.CommittedOffset("oncecount", "events", p));
  }
  return out;
}

bool FailedBecauseItsStateWasDeleted(const Instance& instance, int32_t p) {
  const auto view = instance.View(p);
  return view != nullptr && view->phase == shard::ShardPhase::kFailed &&
         view->failure.find("were deleted") != std::string::npos;
}

// The shard failed loudly, and nothing claimed it: its changelog still holds no record.
void ExpectRefusedAndUnclaimed(StrictKafka& kafka, const Instance& instance, int32_t p,
                               int64_t changelog_end) {
  const auto view = instance.View(p);
  ASSERT_NE(view, nullptr) << "shard " << p;
  EXPECT_EQ(view->phase, shard::ShardPhase::kFailed) << "shard " << p;
  EXPECT_NE(view->failure.find("reset its counters to zero"), std::string::npos) << view->failure;
  EXPECT_GE(view->restore_retries, 2u) << "the restore is retried, and fails each time";
  EXPECT_EQ(kafka.HighWatermark(kChangelog, p), changelog_end)
      << "shard " << p << " was claimed after all";
  EXPECT_EQ(kafka.LogStart(kChangelog, p), changelog_end);
}

// A cluster that does not tell its changelog's retention.ms (so the start cannot
// refuse it) deletes the state of shards that stay idle longer than it.
TEST(ChangelogLoss, AnIdleShardWhoseRecordsTimeRetentionDeletedFailsInsteadOfStartingFromZero) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.SetRetentionMs(kChangelog, 3'600'000, /*described=*/false);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 30);
    a.StepAndCommit();
    ExpectExactlyOnce(kafka, 30);
    EXPECT_NE(a.log().find("did not tell"), std::string::npos)
        << "the start warns that it could not check the changelog's settings\n"
        << a.log();
  }  // a stops cleanly; nothing writes to the changelog any more
  const std::vector<std::optional<int64_t>> committed = CommittedInput(kafka);
  kafka.Advance(61min);
  std::vector<int64_t> ends;
  for (int32_t p = 0; p < kPartitions; ++p) {
    ends.push_back(kafka.HighWatermark(kChangelog, p));
    ASSERT_GT(ends.back(), 0);
    ASSERT_EQ(kafka.LogStart(kChangelog, p), ends.back()) << "retention left records: no test";
  }

  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] {
    return FailedBecauseItsStateWasDeleted(b, 0) && FailedBecauseItsStateWasDeleted(b, 1) &&
           b.View(0)->restore_retries >= 2 && b.View(1)->restore_retries >= 2;
  })) << b.log();
  for (int32_t p = 0; p < kPartitions; ++p) ExpectRefusedAndUnclaimed(kafka, b, p, ends[p]);
  EXPECT_FALSE(b.Ready());
  EXPECT_EQ(CommittedInput(kafka), committed) << "input consumed again from a zeroed shard";
}

// Regression: a changelog topic deleted and created again (or a cluster the changelog
// was not copied to) holds no record and starts at offset 0, so nothing looked lost:
// the shards were claimed afresh and counted from zero, their past uncounted, with
// the group's committed input offsets there to say they had counted before.
TEST(ChangelogLoss,
     AChangelogCreatedAgainFailsTheShardsTheGroupHadCommittedForInsteadOfZeroingThem) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 30);
    a.StepAndCommit();
    ExpectExactlyOnce(kafka, 30);
  }
  const std::vector<std::optional<int64_t>> committed = CommittedInput(kafka);
  for (const auto& offset : committed) ASSERT_TRUE(offset.has_value());
  ASSERT_TRUE(kafka.DeleteTopic(kChangelog).ok());
  ASSERT_TRUE(kafka.CreateTopic(kChangelog, kPartitions).ok());
  Send(kafka, 30, 40);

  Instance b(kafka, "b");
  const auto refused = [&](int32_t p) {
    const auto view = b.View(p);
    return view != nullptr && view->phase == shard::ShardPhase::kFailed &&
           view->failure.find(
               "holds no record of the shard, yet group oncecount has committed "
               "input offset " +
               std::to_string(*committed[static_cast<size_t>(p)])) != std::string::npos &&
           view->restore_retries >= 2;
  };
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return refused(0) && refused(1); })) << b.log();
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(kafka.HighWatermark(kChangelog, p), 0) << "shard " << p << " was claimed";
  }
  EXPECT_FALSE(b.Ready());
  EXPECT_EQ(CommittedInput(kafka), committed) << "input consumed from a zeroed shard";
}

// DeleteRecords up to the high watermark of one partition (an operator's mistake, a
// tool's): that shard fails; the other restores and goes on counting exactly.
// Regression: retention that took a running shard's newest complete snapshot (a
// retention.bytes smaller than the service was told, records deleted) went unseen
// until a restore failed, the state gone for good though the running shard held it.
// The owner notices at its checks, says so, and snapshots at its next commit, with no
// input needed (an idle shard's would never come): the shard can be restored again.
TEST(ChangelogLoss, ARunningShardWhoseSnapshotRetentionTookSaysSoAndSnapshotsAgain) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  AsCreateTopicsMakesIt(kafka);
  int sent = 0;
  {
    testing::StrictInstanceOptions options{"a", ""};
    options.commit_interval = 1s;
    Instance a(kafka, options);
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    // Past the snapshot cadence's longest interval (60 s): every shard snapshots.
    for (int round = 0; round < 14; ++round, sent += 10) {
      Send(kafka, sent, sent + 10);
      a.StepAndCommit();
      kafka.Advance(5s);
    }
    const int64_t end = kafka.HighWatermark(kChangelog, 0);
    ASSERT_TRUE(kafka.DeleteRecordsBefore(kChangelog, 0, end).ok());
    // The first two transactions carrying the snapshot abort: the shard, whose
    // changelog cannot rebuild it, must run on (not restore), and write it again, the
    // second time after a back-off.
    kafka.InjectError(StrictKafka::Call::kCommitTransaction,
                      {kafka::ErrorKind::kAbortable, "INVALID_PRODUCER_ID_MAPPING", "injected"}, 2,
                      "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
      return a.log().find(
                 "shard 0: its changelog partition no longer holds its newest complete "
                 "snapshot") != std::string::npos;
    })) << a.log();
    EXPECT_NE(a.log().find("the partition now begins at " + std::to_string(end)), std::string::npos)
        << a.log();
    EXPECT_NE(a.metrics().Render().find("oncecount_changelog_snapshots_cut_total 1"),
              std::string::npos);
    EXPECT_EQ(a.log().find("shard 1: its changelog partition no longer holds"), std::string::npos)
        << a.log();
    RunFor(kafka, {&a}, 15s);  // commits at the interval, though no input came
    EXPECT_NE(a.log().find("shard 0: the transaction of its snapshot aborted 2 times in a row"),
              std::string::npos)
        << a.log();
    EXPECT_TRUE(a.Runs(0)) << a.log();
    EXPECT_EQ(a.View(0)->transactions_aborted, 2u) << "counted, though the shard runs on";
    EXPECT_LT(a.log().rfind("shard 0: restored"), a.log().find("transaction aborted"))
        << "restored after the abort\n"
        << a.log();
    EXPECT_GT(kafka.HighWatermark(kChangelog, 0), end) << "no snapshot written\n" << a.log();
    a.Kill();
  }
  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  Send(kafka, 0, sent);  // retries of everything
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, sent);
}

// Regression: a restored shard's snapshot has no known place in the changelog, so the
// check above could not watch it until it wrote one of its own, which an idle shard
// never did: its changelog deleted while it alone held its state, nothing was said and
// nothing written, and the next restore failed for good. An adopted shard now commits
// a snapshot of its own within the cadence's longest interval, with no input needed.
TEST(ChangelogLoss, AnIdleRestoredShardWritesASnapshotOfItsOwnWithinAMinute) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  AsCreateTopicsMakesIt(kafka);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 40);
    a.StepAndCommit();
    ASSERT_TRUE(a.Finish().ok()) << a.log();
  }
  {
    testing::StrictInstanceOptions options{"b", ""};
    options.commit_interval = 1s;
    Instance b(kafka, options);
    ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
    const int64_t end = kafka.HighWatermark(kChangelog, 0);
    ASSERT_TRUE(kafka.DeleteRecordsBefore(kChangelog, 0, end).ok());
    RunFor(kafka, {&b}, 65s);  // idle: no input comes
    EXPECT_GT(kafka.HighWatermark(kChangelog, 0), end) << "no snapshot written\n" << b.log();
    b.Kill();
  }
  Instance c(kafka, "c");
  ASSERT_TRUE(RunUntil(kafka, {&c}, [&] { return c.RunsAll(kPartitions); })) << c.log();
  Send(kafka, 0, 40);  // retries of everything
  c.StepAndCommit();
  ExpectExactlyOnce(kafka, 40);
}

TEST(ChangelogLoss, APartitionDeletedUpToItsHighWatermarkFailsOnlyItsShard) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  auto a = std::make_unique<Instance>(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  Send(kafka, 0, 40);
  a->StepAndCommit();
  ExpectExactlyOnce(kafka, 40);
  const int64_t end = kafka.HighWatermark(kChangelog, 0);
  ASSERT_TRUE(kafka.DeleteRecordsBefore(kChangelog, 0, end).ok());
  a->Kill();
  a.reset();
  const std::optional<int64_t> committed_0 = kafka.CommittedOffset("oncecount", "events", 0);

  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] {
    return b.Runs(1) && FailedBecauseItsStateWasDeleted(b, 0) && b.View(0)->restore_retries >= 2;
  })) << b.log();
  // Events 40..60: the even ones go to the failed shard, the odd ones are counted.
  Send(kafka, 40, 60);
  RunFor(kafka, {&b}, 2s);
  b.StepAndCommit();
  ExpectRefusedAndUnclaimed(kafka, b, 0, end);
  EXPECT_FALSE(b.Ready());
  EXPECT_EQ(kafka.CommittedOffset("oncecount", "events", 0), committed_0);
  EXPECT_EQ(kafka.CommittedOffset("oncecount", "events", 1), kafka.HighWatermark("events", 1))
      << "the running shard counted its input";
  std::map<std::string, int64_t> odd;  // what shard 1 holds: events 1, 3, ..., 59
  for (int i = 1; i < 60; i += 2) ++odd["n" + std::to_string(i % 3)];
  std::map<std::string, int64_t> in_shard_1;
  ASSERT_NE(b.View(1)->counters, nullptr);
  for (const auto& [name, expected] : odd) {
    in_shard_1[name] = b.View(1)->counters->Find(name).value_or(-1);
  }
  EXPECT_EQ(in_shard_1, odd);
}

// Guarantee 6: a changelog whose records expire by age (an idle shard's whole log can
// go) or by key (compaction) would reset shards to zero; the start refuses it,
// naming the topic and the setting.
TEST(ChangelogSettings, AreRefusedAtStartWhenTheyCouldDeleteAShardsState) {
  const struct {
    const char* policy;
    int64_t retention_ms;
    const char* named;
  } refused[] = {{"compact", -1, "cleanup.policy=compact"},
                 {"compact,delete", -1, "cleanup.policy=compact,delete"},
                 {"delete", 604'800'000, "retention.ms=604800000"}};
  for (const auto& r : refused) {
    std::unique_ptr<StrictKafka> holder;
    StrictKafka& kafka = NewCluster(holder);
    kafka.SetCleanupPolicy(kChangelog, r.policy);
    kafka.SetRetentionMs(kChangelog, r.retention_ms);
    testing::StrictInstanceOptions options;
    options.process = "a";
    options.expect_refusal = true;
    Instance a(kafka, options);
    EXPECT_NE(a.refusal().find("topic events.changelog"), std::string::npos) << a.refusal();
    EXPECT_NE(a.refusal().find(r.named), std::string::npos) << a.refusal();
  }

  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  AsCreateTopicsMakesIt(kafka);
  Instance a(kafka, "a");
  EXPECT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  EXPECT_EQ(a.log().find("did not tell"), std::string::npos) << a.log();
}

// Regression: the changelog's settings were judged once, at the start. A changelog
// made time-limited (or compacted) while the service ran went on without a word, until
// an idle shard's whole changelog expired and its restore started it at zero. It is
// refused as at the start: the processor stops, saying why.
TEST(ChangelogLoss, StopsWhenTheChangelogIsMadeTimeLimitedWhileItRuns) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  AsCreateTopicsMakesIt(kafka);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  kafka.SetRetentionMs(kChangelog, 604'800'000);
  bool stopped = false;
  for (int i = 0; i < 20 && !stopped; ++i) {
    kafka.Advance(1s);
    stopped = !a.Step();
  }
  EXPECT_TRUE(stopped) << a.log();
  const base::Status finished = a.Finish();
  EXPECT_NE(finished.message().find("retention.ms=604800000"), std::string::npos)
      << finished.message() << "\n"
      << a.log();
}

// The snapshots are timed by what a changelog partition keeps: a cluster that does
// not tell it (dev-kafka keeps 5 MB and answers no DescribeConfigs), with nothing
// configured instead, is warned about at the start, naming the key that tells it.
TEST(ChangelogLoss, WarnsWhenNeitherTheClusterNorTheConfigSaysWhatAChangelogPartitionKeeps) {
  for (const size_t configured : {size_t{0}, size_t{5} << 20}) {
    std::unique_ptr<StrictKafka> holder;
    StrictKafka& kafka = NewCluster(holder);
    kafka.SetCleanupPolicy(kChangelog, "delete");
    kafka.SetRetentionMs(kChangelog, -1);
    kafka.SetRetentionBytes(kChangelog, size_t{5} << 20, /*described=*/false);
    testing::StrictInstanceOptions options;
    options.process = "a";
    options.changelog_retention_bytes = configured;
    Instance a(kafka, options);
    EXPECT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    const bool warned =
        a.log().find("did not tell events.changelog's retention.bytes") != std::string::npos &&
        a.log().find("set kafka.changelog_retention_bytes") != std::string::npos;
    EXPECT_EQ(warned, configured == 0) << "configured " << configured << "\n" << a.log();
  }
}

}  // namespace
}  // namespace oncecount::service
