// Processor restarts from local checkpoints (local_checkpoint.h), on the StrictKafka
// double: an instance killed and started again on the same disk restores each shard
// from its checkpoint and the changelog's tail after it, exactly; a checkpoint that
// is missing, corrupt, older than the changelog keeps, written against another
// changelog, or a zombie's (its batch in the changelog, but after a newer claim) is
// passed over for a restore from the changelog, exactly too, and counted by reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/service/local_checkpoint.h"
#include "tests/testing/serialized_bytes.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::Expected;
using testing::ExpectExactlyOnce;
using testing::NewCluster;
using testing::RunUntil;
using testing::Send;
using testing::StrictKafka;
using Instance = testing::StrictInstance;

constexpr int32_t kPartitions = testing::kServicePartitions;

class LocalCheckpointRestart : public ::testing::Test {
 protected:
  LocalCheckpointRestart() {
    dir_ = ::testing::TempDir() + "checkpoints-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~LocalCheckpointRestart() override { std::filesystem::remove_all(dir_); }

  testing::StrictInstanceOptions Options() const {
    testing::StrictInstanceOptions o;
    o.process = "a";
    o.checkpoint_dir = dir_;
    o.changelog_retention_bytes = changelog_retention_bytes_;
    return o;
  }

  // Events [0, 200) counted and committed with a snapshot (due after 60 s), then
  // [200, 300) committed after it: the tail a restart reads. Then the process dies.
  void RunAndKill(StrictKafka& kafka) {
    Instance a(kafka, Options());
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 200);
    a.StepAndCommit();
    kafka.Advance(61s);
    Send(kafka, 0, 20);  // retries: a commit with a snapshot needs input
    a.StepAndCommit();
    Send(kafka, 200, 300);
    a.StepAndCommit();
    for (base::Partition p : base::AllPartitions(kPartitions)) {
      auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
      ASSERT_TRUE(checkpoint.ok() && checkpoint.value()) << p;
      // The restore that claimed read an empty changelog: its check starts at 0.
      EXPECT_EQ(checkpoint.value()->check_from, base::Offset(0)) << p;
      // Nor did it see a marker: a gap of one offset after its claim could have been
      // a rival's claim, so the check cannot start at the snapshot.
      EXPECT_EQ(checkpoint.value()->snapshot_end, std::nullopt) << p;
    }
    a.Kill();
  }

  // A second life of the process after RunAndKill: its restore reads the changelog
  // (and so sees the cluster's markers), it commits [300, 400) with a snapshot and
  // [400, 450) after it, then dies.
  void RunAgainAndKill(StrictKafka& kafka) {
    Instance a(kafka, Options());
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 300, 400);
    a.StepAndCommit();
    kafka.Advance(61s);
    Send(kafka, 300, 320);  // retries: a commit with a snapshot needs input
    a.StepAndCommit();
    Send(kafka, 400, 450);
    a.StepAndCommit();
    for (base::Partition p : base::AllPartitions(kPartitions)) {
      auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
      ASSERT_TRUE(checkpoint.ok() && checkpoint.value()) << p;
      const LocalCheckpoint& c = *checkpoint.value();
      ASSERT_TRUE(c.snapshot_end.has_value()) << p << a.log();
      EXPECT_GT(*c.snapshot_end, c.changelog_offset) << p << ": a batch, then the chunks";
      EXPECT_GT(c.changelog_offset, *c.check_from) << p;
    }
    a.Kill();
  }

  struct Restarted {
    std::string log;
    std::string metrics;  // GET /metrics of the restarted process
  };

  // Starts the process again, sends retries of everything and new events, and
  // checks that every event counts once, in the changelog and in what it serves.
  Restarted RestartAndCheck(StrictKafka& kafka, int sent = 300) {
    Instance again(kafka, Options());
    EXPECT_TRUE(RunUntil(kafka, {&again}, [&] { return again.RunsAll(kPartitions); }))
        << again.log();
    Send(kafka, 0, sent);  // every event retried: the filter must know them all
    Send(kafka, sent, sent + 50);
    again.StepAndCommit();
    ExpectExactlyOnce(kafka, sent + 50);
    int64_t served = 0;
    for (base::Partition p : base::AllPartitions(kPartitions)) {
      if (again.View(p.value()) != nullptr)
        served += again.View(p.value())->counters->Find("n0").value_or(0);
    }
    EXPECT_EQ(served, Expected(sent + 50)["n0"]) << again.log();
    testing::ExpectEveryClaimTookANewEpoch(kafka);
    return {again.log(), again.metrics().Render()};
  }

  std::string dir_;
  size_t changelog_retention_bytes_ = 0;  // what the instances are told the changelog keeps
};

TEST_F(LocalCheckpointRestart, ReadsOnlyTheTailAfterTheCheckpointAndCountsExactly) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  const Restarted r = RestartAndCheck(kafka);
  const std::string& log = r.log;
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    // Its own batch (skipped) and snapshot, then the one batch after it.
    EXPECT_NE(log.find("shard " + std::to_string(p.value()) +
                       ": taken over from its local checkpoint at batch 3 (1 batches from the "
                       "changelog's tail)"),
              std::string::npos)
        << log;
  }
}

// The second life knew its records were alone from its claim to its snapshot
// (owned_run.h): the third reads from the snapshot's last chunk, not from the claim.
TEST_F(LocalCheckpointRestart, ReadsFromTheSnapshotsEndWhenItsOwnerKnewItsRecordsWereAlone) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  RunAgainAndKill(kafka);
  changelog_retention_bytes_ = size_t{64} << 20;
  const Restarted r = RestartAndCheck(kafka, 450);
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    // The changelog keeps the snapshot whole: no new one is due at the first commit.
    auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
    ASSERT_TRUE(checkpoint.ok() && checkpoint.value());
    EXPECT_EQ(checkpoint.value()->seq, base::Seq(5)) << p;
    // The snapshot's last chunk, then the one batch after it.
    EXPECT_NE(r.log.find("shard " + std::to_string(p.value()) +
                         ": taken over from its local checkpoint (read from its snapshot's "
                         "end) at batch 6 (1 batches from the changelog's tail)"),
              std::string::npos)
        << r.log;
  }
}

// Retention took everything before the snapshot's last chunk, the claim and the
// snapshot's other records included: a checkpoint read from its snapshot's end does
// not need them.
TEST_F(LocalCheckpointRestart, ReadsFromTheSnapshotsEndEvenWhenRetentionTookTheClaim) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  RunAgainAndKill(kafka);
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
    ASSERT_TRUE(checkpoint.ok() && checkpoint.value());
    ASSERT_TRUE(kafka
                    .DeleteRecordsBefore("events.changelog", p.value(),
                                         checkpoint.value()->snapshot_end->value())
                    .ok());
  }
  changelog_retention_bytes_ = size_t{64} << 20;  // a known retention: snapshots are due
  const Restarted r = RestartAndCheck(kafka, 450);
  EXPECT_EQ(r.log.find("passed over"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("shard 1: taken over from its local checkpoint (read from its snapshot's "
                       "end)"),
            std::string::npos)
      << r.log;
  // The changelog keeps no complete snapshot of the shard any more: its first commit
  // writes one (and a checkpoint of it), so that a restore from the changelog alone
  // finds one.
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
    ASSERT_TRUE(checkpoint.ok() && checkpoint.value());
    EXPECT_GT(checkpoint.value()->seq, base::Seq(6)) << p;
  }
}

// A checkpoint whose snapshot end holds another record (the topic was deleted and
// created again, and filled as far): passed over, as one of another changelog.
TEST_F(LocalCheckpointRestart, PassesOverACheckpointWhoseSnapshotEndHoldsAnotherRecord) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  RunAgainAndKill(kafka);
  auto checkpoint = ReadCheckpoint(dir_, "events.changelog", base::Partition(0));
  ASSERT_TRUE(checkpoint.ok() && checkpoint.value());
  LocalCheckpoint moved = *checkpoint.value();
  *moved.snapshot_end = moved.changelog_offset;  // the transaction's first batch
  ASSERT_TRUE(WriteCheckpoint(dir_, "events.changelog", moved).ok());
  const Restarted r = RestartAndCheck(kafka, 450);
  EXPECT_NE(r.log.find("shard 0: its local checkpoint is passed over (not_in_changelog"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("shard 1: taken over from its local checkpoint (read from its snapshot's "
                       "end)"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.metrics.find("oncecount_checkpoint_fallbacks_total{reason=\"not_in_changelog\"} 1\n"),
            std::string::npos)
      << r.metrics;
}

// Regression: the read after a checkpoint skipped records it could not decode
// without a word. A newer release's record could hold a claim: the restart claimed
// the epoch after the checkpoint's, one the newer release may have used. It now
// passes the checkpoint over, and the restore from the changelog refuses the shard,
// naming both formats.
TEST_F(LocalCheckpointRestart, PassesOverACheckpointWhoseTailANewerReleaseWroteTo) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  const std::string newer = testing::WithField(kafka.CommittedValues("events.changelog", 0).back(),
                                               4, 2, changelog::kChangelogFormatVersion + 1);
  ASSERT_FALSE(kafka.ProduceForTest("events.changelog", 0, std::nullopt, newer));
  Instance again(kafka, Options());
  ASSERT_TRUE(RunUntil(kafka, {&again}, [&] {
    auto view = again.View(0);
    return view && view->phase == shard::ShardPhase::kFailed && again.Runs(1);
  })) << again.log();
  EXPECT_NE(again.View(0)->failure.find("which a newer release wrote"), std::string::npos)
      << again.View(0)->failure;
  EXPECT_NE(again.log().find("shard 0: its local checkpoint is passed over (newer_format: "),
            std::string::npos)
      << again.log();
  EXPECT_NE(again.metrics().Render().find(
                "oncecount_checkpoint_fallbacks_total{reason=\"newer_format\"} 1\n"),
            std::string::npos)
      << again.metrics().Render();
}

// A checkpoint of a shard that another consumer group claimed since (the group was
// renamed, then the old configuration came back): the shard is refused at once,
// naming both groups. It was counted as a checkpoint fallback ("diverged"), as if the
// checkpoint were at fault, and a cold restore read the whole changelog again only
// to refuse it the same way.
TEST_F(LocalCheckpointRestart, RefusesAShardAnotherGroupClaimedSinceWithoutCallingItAFallback) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  {
    testing::StrictInstanceOptions renamed;
    renamed.process = "renamed";
    renamed.group_id = "oncecount-renamed";
    renamed.previous_group_id = "oncecount";
    Instance b(kafka, renamed);
    ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
    Send(kafka, 300, 350);
    b.StepAndCommit();
    ASSERT_TRUE(b.Finish().ok());
  }
  Instance again(kafka, Options());
  ASSERT_TRUE(RunUntil(kafka, {&again}, [&] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (!again.View(p) || again.View(p)->phase != shard::ShardPhase::kFailed) return false;
    }
    return true;
  })) << again.log();
  EXPECT_NE(again.View(0)->failure.find("the changelog's newest claim is by consumer group "
                                        "\"oncecount-renamed\", not this instance's "
                                        "\"oncecount\""),
            std::string::npos)
      << again.View(0)->failure;
  EXPECT_EQ(again.log().find("passed over"), std::string::npos) << again.log();
  EXPECT_NE(again.metrics().Render().find(
                "oncecount_checkpoint_fallbacks_total{reason=\"diverged\"} 0\n"),
            std::string::npos)
      << again.metrics().Render();
  EXPECT_FALSE(again.Ready());
}

// A damaged record in the tail after a checkpoint is skipped and counted, as a cold
// restore counts it (it was skipped without a count).
TEST_F(LocalCheckpointRestart, CountsADamagedRecordInTheTailAfterACheckpoint) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  std::string damaged = kafka.CommittedValues("events.changelog", 0).back();
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 1);
  ASSERT_FALSE(kafka.ProduceForTest("events.changelog", 0, std::nullopt, damaged));
  Instance again(kafka, Options());
  ASSERT_TRUE(RunUntil(kafka, {&again}, [&] { return again.RunsAll(kPartitions); })) << again.log();
  EXPECT_NE(again.log().find("shard 0: taken over from its local checkpoint"), std::string::npos)
      << again.log();
  EXPECT_NE(again.log().find("1 changelog record(s) could not be read"), std::string::npos)
      << again.log();
  EXPECT_EQ(again.View(0)->changelog_unreadable_records, 1u);
  EXPECT_EQ(again.View(1)->changelog_unreadable_records, 0u);
  Send(kafka, 0, 350);  // every event retried, and new ones
  again.StepAndCommit();
  // ExpectExactlyOnce would also decode every claim: the damaged record stays.
  EXPECT_EQ(testing::CountsInChangelog(kafka), Expected(350));
  testing::ExpectAllInputCommitted(kafka);
}

TEST_F(LocalCheckpointRestart, PassesOverACorruptCheckpoint) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  const std::string path = CheckpointPath(dir_, "events.changelog", base::Partition(0));
  {
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(40);
    file.put('\x7f');
  }
  const Restarted r = RestartAndCheck(kafka);
  EXPECT_NE(r.log.find("shard 0: its local checkpoint is passed over (unreadable: "),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("checksum mismatch); restoring from the changelog"), std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("shard 1: taken over from its local checkpoint"), std::string::npos)
      << r.log;
  EXPECT_NE(r.metrics.find("oncecount_checkpoint_fallbacks_total{reason=\"unreadable\"} 1\n"),
            std::string::npos)
      << r.metrics;
}

TEST_F(LocalCheckpointRestart, PassesOverACheckpointOlderThanWhatTheChangelogKeeps) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  // Retention took the first record after the checkpoint's position (the batch it
  // stands for); the snapshot written with that batch is still there.
  auto checkpoint = ReadCheckpoint(dir_, "events.changelog", base::Partition(0));
  ASSERT_TRUE(checkpoint.ok() && checkpoint.value());
  const int64_t after = (*checkpoint.value()).changelog_offset.value() + 1;
  ASSERT_TRUE(kafka.DeleteRecordsBefore("events.changelog", 0, after).ok());
  const Restarted r = RestartAndCheck(kafka);
  EXPECT_NE(r.log.find("shard 0: its local checkpoint is passed over (before_log_start"),
            std::string::npos)
      << r.log;
  EXPECT_EQ(r.log.find("shard 0: taken over from its local checkpoint"), std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("shard 1: taken over from its local checkpoint"), std::string::npos)
      << r.log;
  EXPECT_NE(r.metrics.find("oncecount_checkpoint_fallbacks_total{reason=\"before_log_start\"} 1\n"),
            std::string::npos)
      << r.metrics;
}

TEST_F(LocalCheckpointRestart, PassesOverACheckpointWrittenAgainstAnotherChangelog) {
  {
    std::unique_ptr<StrictKafka> first;
    RunAndKill(NewCluster(first));
  }
  // A new cluster (or a changelog deleted and created again): offsets from the old
  // one mean nothing here.
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance other(kafka, "other");
  ASSERT_TRUE(RunUntil(kafka, {&other}, [&] { return other.RunsAll(kPartitions); })) << other.log();
  Send(kafka, 0, 300);
  other.StepAndCommit();
  ASSERT_TRUE(other.Finish().ok());
  const Restarted r = RestartAndCheck(kafka);
  EXPECT_EQ(r.log.find("taken over from its local checkpoint"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("(not_in_changelog: the changelog does not hold its batch"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.metrics.find("oncecount_checkpoint_fallbacks_total{reason=\"not_in_changelog\"} 2\n"),
            std::string::npos)
      << r.metrics;
}

// A zombie's checkpoint. a freezes inside the commit that carries its snapshots (its
// records held in flight), in the regime the start-up check refuses (session 3 s,
// transaction 10 s): b is given the shards, claims epoch `epoch` + 1 and stays idle; a
// thaws, and its commit lands after b's claims, unfenced, and a writes checkpoints of
// it. Those batches are in the changelog but not on its lineage (b's claims superseded
// them). Taken at face value, a restart would claim b's epoch a second time — a claim
// every reader refuses — and serve the zombie's counts. Events [from, from + 200).
class ZombieCheckpoint : public LocalCheckpointRestart {
 protected:
  void FreezeThroughItsSnapshotCommit(StrictKafka& kafka, int from, uint64_t epoch) {
    kafka.set_session_timeout(3s);
    kafka.set_transaction_abort_interval(10s);
    testing::StrictInstanceOptions options = Options();
    options.transaction_timeout = 10s;
    auto a = std::make_unique<Instance>(kafka, options);
    ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
    Send(kafka, from, from + 100);
    a->StepAndCommit();
    kafka.Advance(61s);  // the next commit carries snapshots: checkpoints follow it
    Send(kafka, from + 100, from + 200);
    for (int i = 0; i < 3; ++i) a->Step();

    std::unique_ptr<Instance> b;
    kafka.HoldProduce("a");
    kafka.ObserveAt(testing::StrictKafka::Call::kCommitTransaction, "a", [&] {
      kafka.Freeze("a");
      b = std::make_unique<Instance>(kafka, "b");
      ASSERT_TRUE(RunUntil(kafka, {b.get()}, [&] { return b->RunsAll(kPartitions); })) << b->log();
      kafka.Thaw("a");
    });
    a->Commit();
    ASSERT_NE(b, nullptr) << a->log();
    a->Commit();  // its workers write the checkpoints before they seal again
    for (base::Partition p : base::AllPartitions(kPartitions)) {
      auto checkpoint = ReadCheckpoint(dir_, "events.changelog", p);
      ASSERT_TRUE(checkpoint.ok() && checkpoint.value()) << p << a->log();
      EXPECT_EQ(checkpoint.value()->epoch, base::Epoch(epoch)) << p;
      // b's claims came between a's own records: a knew they were not alone.
      EXPECT_EQ(checkpoint.value()->snapshot_end, std::nullopt) << p;
      const std::vector<uint64_t> epochs = testing::ClaimEpochs(kafka, p.value());
      ASSERT_FALSE(epochs.empty());
      EXPECT_EQ(epochs.back(), epoch + 1) << p;
    }
    b->Kill();
    a->Kill();
  }

  void ExpectPassedOver(const Restarted& r) {
    EXPECT_EQ(r.log.find("taken over from its local checkpoint"), std::string::npos) << r.log;
    EXPECT_NE(
        r.log.find("(not_on_lineage: its batch is in the changelog, but a newer or rival claim"),
        std::string::npos)
        << r.log;
    EXPECT_NE(r.metrics.find("oncecount_checkpoint_fallbacks_total{reason=\"not_on_lineage\"} 2\n"),
              std::string::npos)
        << r.metrics;
  }
};

TEST_F(ZombieCheckpoint, IsPassedOverWhenANewerClaimSupersededItsBatch) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  FreezeThroughItsSnapshotCommit(kafka, 0, 1);
  ExpectPassedOver(RestartAndCheck(kafka));
}

// The same, by a life of a that had read the changelog and so knew the cluster writes
// markers: b's claims broke its run of records, so its checkpoints are checked from
// its claim, which finds them superseded.
TEST_F(ZombieCheckpoint, IsPassedOverWhenItsOwnerKnewTheClusterWritesMarkers) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  RunAndKill(kafka);
  FreezeThroughItsSnapshotCommit(kafka, 300, 2);
  ExpectPassedOver(RestartAndCheck(kafka, 500));
}

}  // namespace
}  // namespace oncecount::service
