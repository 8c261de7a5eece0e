// ShardLoader on the strict Kafka double: which changelog records a restore reads,
// how long it waits for transactions still open, and what it reports when it cannot.
#include "processor/service/shard_loader.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "tests/testing/strict_kafka.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::StrictKafka;

constexpr char kChangelog[] = "events.changelog";

changelog::BatchRecord Batch(uint64_t epoch, uint64_t seq, uint64_t claim, int64_t value) {
  changelog::BatchRecord b;
  b.partition = base::Partition(0);
  b.epoch = base::Epoch(epoch);
  b.seq = base::Seq(seq);
  b.claim = claim;
  b.input_from = base::Offset(static_cast<int64_t>(seq - 1) * 10);
  b.input_to = base::Offset(static_cast<int64_t>(seq) * 10);
  b.counters = {{"n", value}};
  return b;
}

// An owner writing its changelog partition in transactions, as the processor does.
class Owner {
 public:
  Owner(StrictKafka& kafka, const std::string& name, std::chrono::milliseconds timeout)
      : clients_(kafka.ClientsFor(name)) {
    auto made = clients_->NewTransactionalProducer({"oncecount-" + name, timeout});
    EXPECT_TRUE(made.ok());
    producer_ = std::move(made.value());
    EXPECT_TRUE(producer_->InitTransactions(1s).ok());
  }
  // Writes `records` in one transaction, committed or left open.
  void Write(const std::vector<changelog::Record>& records, bool commit = true) {
    ASSERT_TRUE(producer_->BeginTransaction().ok());
    for (const changelog::Record& r : records) {
      std::string bytes;
      changelog::EncodeRecord(r, bytes);
      ASSERT_TRUE(
          producer_->Produce({kChangelog, base::Partition(0), std::nullopt, bytes, {}}).ok());
    }
    if (commit) {
      ASSERT_TRUE(producer_->CommitTransaction(1s).ok());
    }
  }

 private:
  std::unique_ptr<kafka::Clients> clients_;
  std::unique_ptr<kafka::TransactionalProducer> producer_;
};

class ShardLoaderTest : public ::testing::Test {
 protected:
  ShardLoaderTest() { EXPECT_TRUE(kafka_.CreateTopic(kChangelog, 1).ok()); }

  ShardLoader Loader(std::chrono::milliseconds wait) { return ShardLoader(Options(wait)); }

  ShardLoaderOptions Options(std::chrono::milliseconds wait) {
    ShardLoaderOptions o;
    o.clients = clients_.get();
    o.clock = &kafka_.clock();
    o.changelog_topic = kChangelog;
    o.wait = wait;
    o.dedup.expected_rate = 1000;
    o.dedup.window = filter::Millis{60'000};
    o.new_claim = [this] { return ClaimDraw{++claim_ids_, filter::IdHashKey{claim_ids_ * 31}}; };
    return o;
  }

  // A shard state as the loader's restores make them, to write snapshots of.
  std::unique_ptr<shard::ShardState> NewState() {
    auto made = shard::ShardState::Create(base::Partition(0), Options(1s).dedup, filter::Millis{0});
    EXPECT_TRUE(made.ok()) << made.error();
    return made.ok() ? std::move(made).value() : nullptr;
  }

  StrictKafka kafka_;
  std::unique_ptr<kafka::Clients> clients_ = kafka_.ClientsFor("loader");
  uint64_t claim_ids_ = 100;
};

TEST_F(ShardLoaderTest, RestoresAnEmptyChangelogAsAFreshShardClaimedAtEpochOne) {
  LoadResult loaded = Loader(20s).Load({base::Partition(0)});
  ASSERT_EQ(loaded.restored.size(), 1u);
  EXPECT_TRUE(loaded.failed.empty());
  // The shard's first claim: it takes the key the claimer drew with the claim's id.
  EXPECT_EQ(loaded.restored[0].claim, (changelog::ClaimRecord{base::Partition(0), base::Epoch(1),
                                                              base::Seq(0), 101, 101 * 31}));
  EXPECT_EQ(loaded.restored[0].state->claim(), 101u);
  EXPECT_EQ(loaded.restored[0].state->hash_key(), filter::IdHashKey{101 * 31});
  EXPECT_TRUE(loaded.restored[0].state->counters().empty());
}

TEST_F(ShardLoaderTest, WaitsForATransactionOpenWhenTheReadBeganAndClaimsAfterTheNewestEpoch) {
  kafka_.set_transaction_abort_interval(100ms);  // the abort comes within 100 ms of the timeout
  Owner first(kafka_, "first", 10s);
  first.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5)});
  // The first owner died with a batch open; its successor claimed and committed
  // after it. A read that stopped at the last stable offset would see epoch 1 only.
  first.Write({Batch(1, 2, 11, 99)}, /*commit=*/false);
  Owner second(kafka_, "second", 10s);
  second.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(2), base::Seq(1), 22},
                Batch(2, 2, 22, 7)});
  ASSERT_LT(kafka_.LastStableOffset(kChangelog, 0), kafka_.HighWatermark(kChangelog, 0));

  const int64_t start_ms = kafka_.clock().SteadyMs();
  LoadResult loaded = Loader(20s).Load({base::Partition(0)});
  const int64_t waited_ms = kafka_.clock().SteadyMs() - start_ms;

  ASSERT_EQ(loaded.restored.size(), 1u)
      << (loaded.failed.empty() ? "" : loaded.failed.at(base::Partition(0)));
  EXPECT_GE(waited_ms, 10'000) << "the open transaction decided the read's end";
  EXPECT_LE(waited_ms, 10'200);
  EXPECT_EQ(loaded.restored[0].claim.epoch.value(), 3u);
  EXPECT_EQ(loaded.restored[0].claim.base_seq.value(), 2u);
  EXPECT_EQ(loaded.restored[0].state->counters().at("n"), 7);
  EXPECT_EQ(loaded.restored[0].state->position().value(), 20);
}

TEST_F(ShardLoaderTest, ReportsAShardHeldBackNamingTheOffsetOnceItHasWaitedItsLimit) {
  Owner owner(kafka_, "owner", 60s);
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5)});
  owner.Write({Batch(1, 2, 11, 6)}, /*commit=*/false);
  const int64_t start_ms = kafka_.clock().SteadyMs();

  LoadResult loaded = Loader(5s).Load({base::Partition(0)});

  EXPECT_TRUE(loaded.restored.empty());
  EXPECT_TRUE(loaded.failed.empty()) << "nothing failed: the broker will decide the transaction";
  ASSERT_EQ(loaded.held_back.count(base::Partition(0)), 1u);
  EXPECT_NE(loaded.held_back.at(base::Partition(0)).find("short of the high watermark 4"),
            std::string::npos)
      << loaded.held_back.at(base::Partition(0));
  EXPECT_LT(kafka_.clock().SteadyMs() - start_ms, 6000) << "the wait is the limit";
}

// A clock on which every look costs `step`: a read that takes long but keeps moving.
class SlowReadingClock : public base::Clock {
 public:
  SlowReadingClock(StrictKafka& kafka, std::chrono::milliseconds step)
      : kafka_(kafka), step_(step) {}
  int64_t WallMs() const override { return kafka_.clock().WallMs(); }
  int64_t SteadyMs() const override {
    kafka_.Advance(step_);
    return kafka_.clock().SteadyMs();
  }
  void Sleep(std::chrono::milliseconds duration) override { kafka_.Advance(duration); }

 private:
  StrictKafka& kafka_;
  std::chrono::milliseconds step_;
};

TEST_F(ShardLoaderTest, ALongReadThatKeepsMovingIsNotCutShortByTheWait) {
  Owner owner(kafka_, "owner", 60s);
  std::vector<changelog::Record> records{
      changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11}};
  for (uint64_t seq = 1; seq <= 30; ++seq) records.push_back(Batch(1, seq, 11, 5));
  owner.Write(records);
  SlowReadingClock clock(kafka_, 1s);  // each record costs at least a second
  ShardLoaderOptions o = Options(5s);
  o.clock = &clock;
  const int64_t start_ms = kafka_.clock().SteadyMs();

  LoadResult loaded = ShardLoader(o).Load({base::Partition(0)});

  EXPECT_GT(kafka_.clock().SteadyMs() - start_ms, 30000) << "the read took longer than its wait";
  EXPECT_TRUE(loaded.held_back.empty());
  EXPECT_TRUE(loaded.failed.empty());
  ASSERT_EQ(loaded.restored.size(), 1u);
  EXPECT_EQ(loaded.restored[0].claim.base_seq.value(), 30u);
}

// The loader's clock, which looks at the restore's progress each time the read waits.
class ProgressWatchingClock : public base::Clock {
 public:
  ProgressWatchingClock(base::Clock& clock, const RestoreProgress& progress)
      : clock_(clock), progress_(progress) {}
  int64_t WallMs() const override { return clock_.WallMs(); }
  int64_t SteadyMs() const override { return clock_.SteadyMs(); }
  void Sleep(std::chrono::milliseconds duration) override {
    seen.push_back(progress_.Read());
    clock_.Sleep(duration);
  }
  std::vector<std::vector<RestoreProgress::Shard>> seen;

 private:
  base::Clock& clock_;
  const RestoreProgress& progress_;
};

TEST_F(ShardLoaderTest, ShowsHowFarAReadHeldBackByAnOpenTransactionHasComeAndForgetsItAfter) {
  Owner owner(kafka_, "owner", 60s);
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5), Batch(1, 2, 11, 6)});
  owner.Write({Batch(1, 3, 11, 7)}, /*commit=*/false);
  // Offsets 0-2 the first transaction's records, 3 its commit marker, 4 the open
  // batch: the read reaches 4 and waits for the high watermark 5.
  ASSERT_EQ(kafka_.HighWatermark(kChangelog, 0), 5);
  RestoreProgress progress;
  ProgressWatchingClock clock(kafka_.clock(), progress);
  ShardLoaderOptions o = Options(2s);
  o.clock = &clock;
  o.progress = &progress;

  LoadResult loaded = ShardLoader(o).Load({base::Partition(0)});

  ASSERT_EQ(loaded.held_back.count(base::Partition(0)), 1u)
      << "the open transaction outlives the wait";
  ASSERT_FALSE(clock.seen.empty());
  const std::vector<RestoreProgress::Shard>& waiting = clock.seen.back();
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].partition.value(), 0);
  EXPECT_EQ(waiting[0].remaining_offsets, 1);
  EXPECT_GT(waiting[0].fraction, 0.5);
  EXPECT_LT(waiting[0].fraction, 1.0);
  EXPECT_TRUE(progress.Read().empty()) << "a read that ended is no longer shown";
}

TEST_F(ShardLoaderTest, AfterItsOwnAbortContinuesFromItsLastCommitOnlyWhileNobodyClaimedAfterIt) {
  Owner owner(kafka_, "owner", 10s);
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5)});

  LoadResult mine = Loader(5s).Load(
      {base::Partition(0)}, {{base::Partition(0), OwnCommit{base::Epoch(1), base::Seq(1)}}});
  ASSERT_EQ(mine.restored.size(), 1u);
  EXPECT_EQ(mine.restored[0].claim.base_seq.value(), 1u);

  Owner successor(kafka_, "successor", 10s);
  successor.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(2), base::Seq(1), 22},
                   Batch(2, 2, 22, 8)});
  LoadResult after = Loader(5s).Load(
      {base::Partition(0)}, {{base::Partition(0), OwnCommit{base::Epoch(1), base::Seq(1)}}});
  ASSERT_EQ(after.restored.size(), 1u);
  EXPECT_EQ(after.restored[0].claim.epoch.value(), 3u);
  EXPECT_EQ(after.restored[0].claim.base_seq.value(), 2u)
      << "the successor's batch is not cut back";
  EXPECT_EQ(after.restored[0].state->counters().at("n"), 8);
}

TEST_F(ShardLoaderTest, ReportsAChangelogThatLostBatchesAsFailed) {
  Owner owner(kafka_, "owner", 10s);
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5), Batch(1, 2, 11, 6)});
  ASSERT_TRUE(kafka_.DeleteRecordsBefore(kChangelog, 0, 2).ok());  // retention took batch 1

  LoadResult loaded = Loader(5s).Load({base::Partition(0)});

  EXPECT_TRUE(loaded.restored.empty());
  ASSERT_EQ(loaded.failed.count(base::Partition(0)), 1u);
  EXPECT_NE(loaded.failed.at(base::Partition(0)).find("lacks batch 1"), std::string::npos)
      << loaded.failed.at(base::Partition(0));
}

TEST_F(ShardLoaderTest, ReadsTheChangelogAgainWhenAClaimCutsBackBeforeTheSnapshotItKept) {
  // Snapshots after batch 1 and after batch 2; then a claim that continues from batch
  // 1 (as a recovery claim does after an aborted attempt that readers could see). The
  // streamed read let go of the first snapshot when the second came in, and needs it.
  const std::unique_ptr<shard::ShardState> made = NewState();
  ASSERT_NE(made, nullptr);
  shard::ShardState& state = *made;
  const auto snapshot = [&](uint64_t seq) {
    return changelog::SnapshotChunk{base::Partition(0),
                                    base::Epoch(1),
                                    base::Seq(seq),
                                    0,
                                    1,
                                    state.EncodeSnapshot(base::Epoch(1)),
                                    11};
  };
  state.Replay(Batch(1, 1, 11, 5));
  const changelog::SnapshotChunk after_1 = snapshot(1);
  state.Replay(Batch(1, 2, 11, 6));
  const changelog::SnapshotChunk after_2 = snapshot(2);
  Owner owner(kafka_, "owner", 10s);
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5), after_1, Batch(1, 2, 11, 6), after_2,
               changelog::ClaimRecord{base::Partition(0), base::Epoch(2), base::Seq(1), 22}});
  std::string log;
  ShardLoaderOptions o = Options(20s);
  o.log = [&log](const std::string& line) { log += line + "\n"; };

  LoadResult loaded = ShardLoader(o).Load({base::Partition(0)});

  ASSERT_EQ(loaded.restored.size(), 1u)
      << (loaded.failed.empty() ? "" : loaded.failed.at(base::Partition(0)));
  EXPECT_EQ(loaded.restored[0].claim.epoch.value(), 3u);
  EXPECT_EQ(loaded.restored[0].claim.base_seq.value(), 1u);
  EXPECT_EQ(loaded.restored[0].state->counters().at("n"), 5);
  EXPECT_EQ(loaded.restored[0].state->position().value(), 10);
  EXPECT_NE(log.find("reading the changelog again"), std::string::npos) << log;
}

// Regression: after its own aborted attempt that a reader could see (the embedded
// cluster shows aborted records), a restorer claims from its last commit, which cuts
// back the attempt's snapshot. The streamed read had let go of what came before that
// snapshot, and the loader asked whether to read again before the claim joined the
// lineage: the restore failed, and every retry failed the same way.
TEST_F(ShardLoaderTest, AfterItsOwnAbortReadsAgainWhenItsClaimCutsBackASnapshotOfTheAttempt) {
  const std::unique_ptr<shard::ShardState> made = NewState();
  ASSERT_NE(made, nullptr);
  shard::ShardState& state = *made;
  state.Replay(Batch(1, 1, 11, 5));
  state.Replay(Batch(1, 2, 11, 6));
  Owner owner(kafka_, "owner", 10s);
  // Batch 2 and its snapshot stand for the aborted attempt a reader still sees.
  owner.Write({changelog::ClaimRecord{base::Partition(0), base::Epoch(1), base::Seq(0), 11},
               Batch(1, 1, 11, 5), Batch(1, 2, 11, 6),
               changelog::SnapshotChunk{base::Partition(0), base::Epoch(1), base::Seq(2), 0, 1,
                                        state.EncodeSnapshot(base::Epoch(1)), 11}});

  for (int attempt = 0; attempt < 2; ++attempt) {
    LoadResult loaded = Loader(5s).Load(
        {base::Partition(0)}, {{base::Partition(0), OwnCommit{base::Epoch(1), base::Seq(1)}}});
    ASSERT_EQ(loaded.restored.size(), 1u)
        << (loaded.failed.empty() ? "" : loaded.failed.at(base::Partition(0)));
    EXPECT_EQ(loaded.restored[0].claim.epoch.value(), 2u);
    EXPECT_EQ(loaded.restored[0].claim.base_seq.value(), 1u);
    EXPECT_EQ(loaded.restored[0].state->counters().at("n"), 5) << "the attempt's batch is cut";
    EXPECT_EQ(loaded.restored[0].state->position().value(), 10);
  }
}

}  // namespace
}  // namespace oncecount::service
