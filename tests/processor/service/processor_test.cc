// Processor under a real broker's transactional rules: whole instances (processor,
// shard workers on their own threads) on the StrictKafka double, on simulated time,
// with the interleavings a real cluster produces and the embedded cluster cannot:
// an owner killed at each step of a commit, a member the group moved on without that
// commits anyway, a second failover while the first dead owner's transaction still
// holds the last stable offset, aborts, restores that fail, a fenced producer.
//
// Every test ends with the same two questions a user asks: does the changelog (what
// any later owner restores) hold each event exactly once, and did every claim take
// a new epoch?
#include "processor/service/processor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "tests/testing/out_of_memory_filter.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::RunFor;
using testing::RunUntil;
using testing::StrictKafka;
using Call = StrictKafka::Call;
using Instance = testing::StrictInstance;

constexpr int32_t kPartitions = testing::kServicePartitions;
using testing::ClaimEpochs;
using testing::CountsInChangelog;
using testing::ExpectAllInputCommitted;
using testing::Expected;
using testing::ExpectEveryClaimTookANewEpoch;
using testing::ExpectExactlyOnce;
using testing::NewCluster;
using testing::Send;

// Steps `a` until it runs every shard and says it is ready.
bool RunsAllAndIsReady(StrictKafka& kafka, Instance& a) {
  return RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions) && a.Ready(); });
}

// --- An owner killed in the middle of a commit ------------------------------------

class KilledMidCommit : public ::testing::TestWithParam<Call> {};

TEST_P(KilledMidCommit, CountsEveryEventOnceAfterTheNextOwnerTakesOver) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  auto a = std::make_unique<Instance>(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  Send(kafka, 0, 100);
  a->StepAndCommit();
  Send(kafka, 100, 200);
  Send(kafka, 0, 50);  // retries of events already counted
  a->CommitAndDieAt(GetParam());

  // The clients retry what was not acknowledged, and go on.
  Send(kafka, 100, 200);
  Send(kafka, 200, 260);
  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  b.StepAndCommit();

  ExpectExactlyOnce(kafka, 260);
  EXPECT_EQ(
      b.View(0)->counters->Find("n0").value_or(0) + b.View(1)->counters->Find("n0").value_or(0),
      Expected(260)["n0"])
      << "the new owner serves what its changelog holds";
  // b drew keys of its own, but every claim and batch of a shard carries the one
  // a's first claim drew: b hashed the retries of what a committed as a had.
  for (int32_t p = 0; p < kPartitions; ++p) {
    std::set<uint64_t> keys;
    for (const std::string& bytes : kafka.CommittedValues("events.changelog", p)) {
      const auto record = changelog::DecodeRecord(bytes);
      ASSERT_TRUE(record.ok()) << record.error();
      if (const auto* claim = std::get_if<changelog::ClaimRecord>(&record.value())) {
        keys.insert(claim->hash_key);
      } else if (const auto* batch = std::get_if<changelog::BatchRecord>(&record.value())) {
        keys.insert(batch->hash_key);
      }
    }
    EXPECT_EQ(keys.size(), 1u) << "shard " << p;
    EXPECT_EQ(keys.count(0), 0u) << "shard " << p << " is keyed";
    EXPECT_TRUE(b.View(p)->hash_keyed);
  }
}

std::string StepName(const ::testing::TestParamInfo<Call>& step) {
  switch (step.param) {
    case Call::kBeginTransaction:
      return "AtBeginTransaction";
    case Call::kProduce:
      return "AtProduce";
    case Call::kSendOffsets:
      return "AtSendOffsets";
    default:
      return "AtCommitTransaction";
  }
}

INSTANTIATE_TEST_SUITE_P(EveryStep, KilledMidCommit,
                         ::testing::Values(Call::kBeginTransaction, Call::kProduce,
                                           Call::kSendOffsets, Call::kCommitTransaction),
                         StepName);

// --- A zombie -------------------------------------------------------------------

// a counts events [0, 100) and commits, applies [100, 150) without committing, and
// freezes (a long GC pause, a stopped VM): its session expires and b, returned,
// takes every shard over, counts [150, 250) and commits.
std::unique_ptr<Instance> FreezeWithWorkInHandAndLetBTakeOver(StrictKafka& kafka, Instance& a) {
  EXPECT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 150);
  for (int i = 0; i < 3; ++i) a.Step();  // applied, not committed

  kafka.Freeze("a");
  auto b = std::make_unique<Instance>(kafka, "b");
  EXPECT_TRUE(RunUntil(kafka, {b.get()}, [&] { return b->RunsAll(kPartitions); })) << b->log();
  Send(kafka, 150, 250);
  b->StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(250));
  return b;
}

// a rejoins, the group balances the shards between a and b again, clients send more
// and retry, and every event is counted once.
void RejoinAndCountEveryEventOnce(StrictKafka& kafka, Instance& a, Instance& b) {
  ASSERT_TRUE(RunUntil(kafka, {&a, &b},
                       [&] { return (a.Runs(0) && b.Runs(1)) || (a.Runs(1) && b.Runs(0)); }))
      << a.log() << b.log();
  Send(kafka, 250, 300);
  Send(kafka, 100, 200);  // retries
  a.StepAndCommit();
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, 300);
}

// Regression: a second deployment (a canary with another kafka.group_id) on the same
// input topic restored the first one's shards from their shared changelog and claimed
// them under its own transactional ids, which fence nothing of the other group's: the
// two took each other's state without a word. Its shards now fail, saying why, and
// the first deployment's counts and claims stand.
TEST(Processor, ASecondDeploymentOnTheSameInputIsRefusedTheFirstOnesShards) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  testing::StrictInstanceOptions canary;
  canary.process = "canary";
  canary.group_id = "oncecount-canary";
  Instance c(kafka, canary);
  ASSERT_TRUE(RunUntil(kafka, {&a, &c}, [&] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (!c.View(p) || c.View(p)->phase != shard::ShardPhase::kFailed) return false;
    }
    return true;
  })) << c.log();
  EXPECT_NE(c.View(0)->failure.find("the changelog's newest claim is by consumer group "
                                    "\"oncecount\", not this instance's \"oncecount-canary\""),
            std::string::npos)
      << c.View(0)->failure;
  EXPECT_FALSE(c.Ready());
  Send(kafka, 100, 200);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 200);
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(ClaimEpochs(kafka, p), (std::vector<uint64_t>{1})) << "shard " << p;
  }
}

// The group drops a member while it reads its shards' changelogs (a restore longer
// than max.poll.interval.ms, or its session timing out meanwhile): it claims nothing,
// says why, and restores again once the group gives the shards back.
TEST(Processor, AMemberDroppedWhileItRestoresSaysSoAndClaimsNothing) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 100);
    a.StepAndCommit();
    ASSERT_TRUE(a.Finish().ok());
  }
  // The group moves on during b's first read of a changelog: the double drops a member
  // stuck in its assignment callback past max.poll.interval.ms (as a rebalance that
  // waits for it does), and b's client learns it at its next read.
  kafka.ObserveAt(Call::kReaderPoll, "b", [&] {
    kafka.set_max_poll_interval(1s);
    kafka.Advance(2s);
    kafka.set_max_poll_interval(300s);
    kafka.LearnDropAt(Call::kReaderPoll, "b");
  });
  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); }))
      << b.log() << (b.View(0) ? shard::ShardPhaseName(b.View(0)->phase) : "none") << " "
      << (b.View(0) ? b.View(0)->failure : "");
  EXPECT_NE(b.log().find("and meanwhile the group moved on without this instance"),
            std::string::npos)
      << b.log();
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(ClaimEpochs(kafka, p), (std::vector<uint64_t>{1, 2}))
        << "shard " << p << ": the first owner's claim, then b's once it was given the shard again";
  }
  Send(kafka, 100, 150);
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, 150);
  ExpectEveryClaimTookANewEpoch(kafka);
}

// Restores run in the rebalance callback: one that takes more than half of
// max.poll.interval.ms is warned about, naming the setting (a rebalance meanwhile
// waits that long for the instance, then puts it out of the group).
TEST(Processor, WarnsOfARestoreThatTakesHalfOfMaxPollInterval) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance first(kafka, "first");  // leaves a changelog to read
    ASSERT_TRUE(RunUntil(kafka, {&first}, [&] { return first.RunsAll(kPartitions); }));
    Send(kafka, 0, 20);
    first.StepAndCommit();
    ASSERT_TRUE(first.Finish().ok());
  }
  testing::StrictInstanceOptions options;
  options.process = "a";
  options.max_poll_interval = 2s;
  kafka.ObserveAt(Call::kReaderPoll, "a", [&] { kafka.Advance(1500ms); });
  Instance a(kafka, options);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  EXPECT_NE(a.log().find("more than half of max.poll.interval.ms (2000 ms)"), std::string::npos)
      << a.log();
}

// The input topic deleted: the group gives every member an empty share, which alone
// would look ready with nothing counted. The instance asks the cluster whether it still
// lists the topic and is not ready while it does not, naming it.
TEST(Processor, IsNotReadyWhileTheClusterNoLongerListsItsInputTopic) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_topic_listed 1\n"), std::string::npos);
  ASSERT_TRUE(kafka.DeleteTopic("events").ok());
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.Runs(0) && !a.Runs(1); }, 30s))
      << a.log();
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.Ready(); }, 25s))
      << "ready with no shard and no input topic";
  EXPECT_NE(a.board().Read().topics_unavailable.find(
                "topic events is not in the cluster's list of topics"),
            std::string::npos)
      << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_topic_listed 0\n"), std::string::npos);
  RunFor(kafka, {&a}, 30s);
  EXPECT_FALSE(a.Ready()) << "it stays not ready while the topic is gone";
}

// A principal whose Describe on the input topic is revoked no longer sees it listed;
// granted again, the instance is ready again.
TEST(Processor, IsReadyAgainOnceItsInputTopicIsListedAgain) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  kafka.DenyDescribe("events");
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.Ready(); }, 25s))
      << a.log();
  kafka.DenyDescribe("events", false);
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.Ready(); }, 25s))
      << a.log();
  EXPECT_NE(a.log().find("topic events is listed by the cluster again"), std::string::npos)
      << a.log();
  Send(kafka, 0, 60);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 60);
}

// A commit that hangs (a transaction coordinator that cannot be reached) blocks the
// processor's thread, which then publishes nothing: the board says when the
// transaction began, so that /readyz can tell it is stuck once it outlives its timeout.
TEST(Processor, TellsTheBoardWhenItsTransactionBeganSoThatAStuckCommitShows) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_EQ(a.board().Read().transaction_timeout_ms, 10000);
  Send(kafka, 0, 20);
  std::string during;
  int64_t began = -1;
  kafka.ObserveAt(Call::kCommitTransaction, "a", [&] {
    began = a.board().Read().transaction_open_since_ms;
    EXPECT_TRUE(a.board().Read().StuckTransaction(kafka.clock().SteadyMs()).empty());
    kafka.Advance(11s);  // the commit waits on its coordinator
    during = a.board().Read().StuckTransaction(kafka.clock().SteadyMs());
  });
  a.StepAndCommit();
  EXPECT_GE(began, 0);
  EXPECT_NE(during.find("the instance's transaction has been open for 11 s, past "
                        "kafka.transaction_timeout_ms (10000 ms)"),
            std::string::npos)
      << during;
  EXPECT_EQ(a.board().Read().transaction_open_since_ms, -1) << "none is open after it";
  EXPECT_TRUE(a.board().Read().StuckTransaction(kafka.clock().SteadyMs()).empty());
}

// The dead-letter topic deleted while the instance runs: nothing fails until a
// malformed event comes (maybe hours later), and then every commit would. The
// instance counts on and says so at once, under `degraded`, until the topic is back.
TEST(Processor, ListsADeadLetterTopicTheClusterNoLongerListsAsDegradedAndCountsOn) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_output_topics_listed 1\n"), std::string::npos);
  ASSERT_TRUE(kafka.DeleteTopic("events.dlq").ok());
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.board().Read().instance_degraded.empty(); }, 25s))
      << "nothing said of a missing dead-letter topic\n"
      << a.log();
  const shard::StateBoard::Snapshot gone = a.board().Read();
  ASSERT_EQ(gone.instance_degraded.size(), 1u);
  EXPECT_NE(gone.instance_degraded[0].find("topic events.dlq is not in the cluster's list of "
                                           "topics (deleted, or this instance's principal may "
                                           "no longer Describe it): the shards count on"),
            std::string::npos)
      << gone.instance_degraded[0];
  EXPECT_TRUE(gone.ready()) << "its shards still count";
  EXPECT_NE(a.metrics().Render().find("oncecount_output_topics_listed 0\n"), std::string::npos);
  Send(kafka, 0, 30);
  a.StepAndCommit();
  ASSERT_TRUE(kafka.CreateTopic("events.dlq", 1).ok());
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.board().Read().instance_degraded.empty(); }, 25s))
      << a.log();
  EXPECT_NE(a.log().find("topic events.dlq is listed by the cluster again"), std::string::npos);
  SendMalformed(kafka, 0, 4);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 30);
  testing::ExpectDeadLetteredOnce(kafka, 0, 4);
}

// One answer is not enough either way: librdkafka asks any one broker, and one that
// just restarted (or lags) may answer from a partial or stale cache. Two in a row are.
TEST(Processor, TakesATopicForMissingOrBackOnlyAfterTwoListingsInARowAgree) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  const auto unavailable = [&] { return !a.board().Read().topics_unavailable.empty(); };
  const auto gauge = [&](const char* value) {
    return a.metrics().Render().find(std::string("oncecount_output_topics_listed ") + value +
                                     "\n") != std::string::npos;
  };
  // Line up on a check: the one that says the changelog is missing.
  kafka.DenyDescribe("events.changelog");
  ASSERT_TRUE(RunUntil(kafka, {&a}, unavailable, 25s)) << a.log();
  RunFor(kafka, {&a}, 5s);  // halfway to the next check: each 10 s below holds one
  kafka.DenyDescribe("events.changelog", false);
  RunFor(kafka, {&a}, 10s);
  EXPECT_TRUE(unavailable()) << "listed once: not back yet";
  EXPECT_TRUE(gauge("0"));
  kafka.DenyDescribe("events.changelog");
  RunFor(kafka, {&a}, 10s);
  EXPECT_TRUE(unavailable());
  kafka.DenyDescribe("events.changelog", false);
  RunFor(kafka, {&a}, 20s);
  EXPECT_FALSE(unavailable()) << "listed twice in a row: back\n" << a.log();
  EXPECT_TRUE(gauge("1"));
  kafka.DenyDescribe("events.changelog");
  RunFor(kafka, {&a}, 10s);
  EXPECT_FALSE(unavailable()) << "missed once: not missing yet";
  EXPECT_TRUE(gauge("1"));
  RunFor(kafka, {&a}, 10s);
  EXPECT_TRUE(unavailable()) << "missed twice in a row\n" << a.log();
  EXPECT_NE(a.board().Read().topics_unavailable.find("topic events.changelog is not in"),
            std::string::npos);
  EXPECT_TRUE(gauge("0"));
}

// Both reasons at once: the input and the changelog hidden from this principal.
TEST(Processor, NamesEveryTopicTheClusterNoLongerListsWhenItIsNotReady) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  kafka.DenyDescribe("events.changelog");
  kafka.DenyDescribe("events");
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.Ready(); }, 25s))
      << a.log();
  const std::string why = a.board().Read().topics_unavailable;
  EXPECT_NE(why.find("topic events is not in the cluster's list"), std::string::npos) << why;
  EXPECT_NE(why.find("; topic events.changelog is not in the cluster's list"), std::string::npos)
      << why;
  kafka.DenyDescribe("events", false);
  kafka.DenyDescribe("events.changelog", false);
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.Ready(); }, 30s))
      << a.log();
  EXPECT_TRUE(a.board().Read().topics_unavailable.empty());
}

// Partitions added to the input move keys: until every producer learned the new count
// (their metadata refresh, 5 min) and one dedup window passed, a retry may reach a
// shard that never saw its first copy. The instance stays ready, runs the new shard,
// and says so for that long (log, /readyz degraded, a gauge).
TEST(Processor,
     SaysForAMetadataRefreshAndADedupWindowThatRetriesMayCountTwiceOnceItsInputGainsPartitions) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_partitions 2\n"), std::string::npos);
  EXPECT_NE(a.metrics().Render().find("oncecount_input_repartitioned 0\n"), std::string::npos);
  ASSERT_TRUE(kafka.AddPartitions("events.changelog", 3).ok());
  ASSERT_TRUE(kafka.AddPartitions("events", 3).ok());
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.Runs(2) && !a.board().Read().instance_degraded.empty(); }, 30s))
      << a.log();
  const shard::StateBoard::Snapshot grown = a.board().Read();
  EXPECT_TRUE(grown.ready()) << "keys moved, but every shard runs";
  EXPECT_EQ(grown.partitions, 3) << "a merged answer waits for the new shard too";
  ASSERT_EQ(grown.instance_degraded.size(), 1u);
  EXPECT_NE(grown.instance_degraded[0].find("topic events has 3 partitions now, 2 before"),
            std::string::npos)
      << grown.instance_degraded[0];
  EXPECT_NE(grown.instance_degraded[0].find("counted twice, for 901 s after the change"),
            std::string::npos)
      << grown.instance_degraded[0];
  EXPECT_NE(a.log().find("counted twice"), std::string::npos) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_partitions 3\n"), std::string::npos);
  EXPECT_NE(a.metrics().Render().find("oncecount_input_repartitioned 1\n"), std::string::npos);

  RunFor(kafka, {&a}, 860s);
  EXPECT_FALSE(a.board().Read().instance_degraded.empty()) << "still within the window";
  EXPECT_NE(a.metrics().Render().find("oncecount_input_repartitioned 1\n"), std::string::npos);
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.board().Read().instance_degraded.empty(); }, 70s))
      << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_repartitioned 0\n"), std::string::npos);
  EXPECT_NE(a.log().find("gained partitions: a retry now reaches its first copy's shard"),
            std::string::npos)
      << a.log();
  Send(kafka, 0, 40);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 40);
}

// The input grown alone: its new partitions' shards have no changelog partition to
// claim. The instance is not ready and says what to grow; once it is grown, the new
// shard counts its partition from its first record.
TEST(Processor, SaysTheNewShardsCannotRunUntilItsChangelogGainsThePartitionsToo) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  ASSERT_TRUE(kafka.AddPartitions("events", 3).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", 2, "late/" + std::to_string(i),
                                    R"({"counter":"p2","delta":1})")
                    .ok());
  }
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return !a.board().Read().instance_degraded.empty(); }, 30s))
      << a.log();
  EXPECT_NE(a.log().find("topic events.changelog has 2 partitions: the new partitions' shards "
                         "cannot run until it has as many"),
            std::string::npos)
      << a.log();
  RunFor(kafka, {&a}, 30s);
  EXPECT_FALSE(a.Ready()) << "shard 2 cannot run";
  EXPECT_FALSE(a.Runs(2));
  ASSERT_NE(a.View(2), nullptr);
  EXPECT_NE(a.View(2)->failure.find("no partition 2 of topic events.changelog"), std::string::npos)
      << a.View(2)->failure;
  ASSERT_TRUE(kafka.AddPartitions("events.changelog", 3).ok());
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.Runs(2) && a.Ready(); }, 60s))
      << a.log();
  a.StepAndCommit();
  EXPECT_EQ(a.View(2)->counters->Find("p2").value_or(0), 5) << "none of its input was lost";
  EXPECT_EQ(kafka.CommittedOffset("oncecount", "events", 2), 5);
}

// An error the consumer reports (and retries itself) is logged with its name and
// counted, so that an alert can see it.
TEST(Processor, CountsAndLogsTheErrorsItsConsumerReports) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_consumer_errors_total 0\n"), std::string::npos);
  kafka.InjectError(Call::kConsumerPoll,
                    {kafka::ErrorKind::kFailed, "TOPIC_AUTHORIZATION_FAILED",
                     "Broker: Topic authorization failed"},
                    1, "a");
  a.Step();
  EXPECT_NE(a.metrics().Render().find("oncecount_consumer_errors_total 1\n"), std::string::npos)
      << a.metrics().Render();
  EXPECT_NE(a.log().find("consumer: TOPIC_AUTHORIZATION_FAILED"), std::string::npos) << a.log();
  Send(kafka, 0, 20);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 20);
}

// A partition without a leader gives the consumer nothing and no error: its shard
// looked running and idle, ready, its lag frozen. Quiet for a few checks, the
// instance asks the partition's end itself; failing twice, the shard shows failed,
// naming the error, until the partition has a leader again. Nothing is lost or
// counted twice.
TEST(Processor, AShardWhoseInputPartitionHasNoLeaderShowsFailedUntilItHasOneAgain) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  Send(kafka, 0, 40);
  a.StepAndCommit();
  kafka.MakeLeaderless("events", 0);
  Send(kafka, 40, 80);  // half of it on partition 0, which the consumer cannot fetch
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    a.Commit();
    return a.View(0)->phase == shard::ShardPhase::kFailed;
  })) << a.log();
  EXPECT_NE(a.View(0)->failure.find("its input partition cannot be read"), std::string::npos)
      << a.View(0)->failure;
  EXPECT_NE(a.View(0)->failure.find("NOT_LEADER_FOR_PARTITION"), std::string::npos)
      << a.View(0)->failure;
  EXPECT_FALSE(a.Ready());
  EXPECT_TRUE(a.Runs(1)) << "the other shard goes on";
  kafka.MakeLeaderless("events", 0, false);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    a.Commit();
    return a.Runs(0) && a.Ready();
  })) << a.log();
  EXPECT_NE(a.log().find("shard 0: its input partition can be read again"), std::string::npos);
  ExpectExactlyOnce(kafka, 80);
}

// A question that times out may only have met a busy broker: a quiet shard shows
// failed only at the fourth in a row, not at the second as for a definite refusal.
TEST(Processor, AQuietShardWhoseQuestionsTimeOutShowsFailedOnlyAtTheFourthInARow) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  const kafka::KafkaError timed_out{kafka::ErrorKind::kRetriable, "_TIMED_OUT", "injected"};
  // One broker leads both quiet partitions: one question a check, its timeout counted
  // for both. Three checks' worth of timeouts.
  kafka.InjectError(Call::kQueryEnd, timed_out, 3, "a");
  RunFor(kafka, {&a}, 90s);
  EXPECT_TRUE(a.RunsAll(kPartitions) && a.Ready()) << a.log();
  kafka.InjectError(Call::kQueryEnd, timed_out, 4, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return !a.Ready(); })) << a.log();
  EXPECT_NE(a.View(0)->failure.find("_TIMED_OUT"), std::string::npos) << a.View(0)->failure;
}

// A renamed instance whose start could not tell that the old group stopped is ready,
// and lists why under /readyz `degraded` for its life.
TEST(Processor, ListsAnUnverifiedPreviousGroupAmongItsDegradedReasons) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  testing::StrictInstanceOptions options;
  options.process = "a";
  options.previous_group_id = "oncecount-old";
  options.previous_group_unverified = "the start could not tell whether consumer group ...";
  Instance a(kafka, options);
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  EXPECT_EQ(a.board().Read().instance_degraded,
            std::vector<std::string>{options.previous_group_unverified});
  RunFor(kafka, {&a}, 30s);
  EXPECT_EQ(a.board().Read().instance_degraded,
            std::vector<std::string>{options.previous_group_unverified});
}

// Regression: each quiet partition's question was counted for it alone, and a check
// asks for a second at most (a timeout takes 300 ms): twelve partitions of a broker
// that does not answer showed failed only after twelve checks of asking. A question
// that times out counts for every quiet partition its broker leads; those of a broker
// that answers stay running.
TEST(Processor, EveryShardOfABrokerThatDoesNotAnswerShowsFailedInFourChecksHoweverManyTheyAre) {
  std::unique_ptr<StrictKafka> holder;
  constexpr int32_t kMany = 16;
  StrictKafka& kafka = NewCluster(holder, kMany);
  const auto led_by_2 = [](int32_t p) { return p % 4 != 0; };  // 12 of 16
  for (int32_t p = 0; p < kMany; ++p) {
    if (led_by_2(p)) kafka.SetLeader("events", p, 2);
  }
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kMany) && a.Ready(); })) << a.log();
  kafka.SetAnswerDelay(2, 1h);  // takes requests, answers none
  const int64_t start_ms = kafka.clock().SteadyMs();
  const auto brokers_2_failed = [&] {
    for (int32_t p = 0; p < kMany; ++p) {
      if (led_by_2(p) && a.View(p)->phase != shard::ShardPhase::kFailed) return false;
    }
    return true;
  };
  ASSERT_TRUE(RunUntil(kafka, {&a}, brokers_2_failed, 300s)) << a.log();
  // Three quiet checks, then four that ask: 10 s apart.
  EXPECT_LE(kafka.clock().SteadyMs() - start_ms, (3 + 4 + 1) * 10'000);
  EXPECT_NE(a.View(kMany - 1)->failure.find("broker 2, which leads it, answered no question"),
            std::string::npos)
      << a.View(kMany - 1)->failure;
  RunFor(kafka, {&a}, 120s);
  for (int32_t p = 0; p < kMany; ++p) {
    EXPECT_EQ(a.View(p)->phase,
              led_by_2(p) ? shard::ShardPhase::kFailed : shard::ShardPhase::kRunning)
        << "shard " << p << ": " << a.View(p)->failure;
  }
  kafka.SetAnswerDelay(2, 0ms);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kMany) && a.Ready(); })) << a.log();
}

// A broker that is silent for a while and then answers some questions of a check takes
// back what its silence counted for the partitions it was not asked about: counted on,
// silent spells apart added up to four, and shards it kept answering for showed failed.
TEST(Processor, ABrokerThatAnswersAgainTakesBackWhatItsSilenceCounted) {
  std::unique_ptr<StrictKafka> holder;
  constexpr int32_t kMany = 12;
  StrictKafka& kafka = NewCluster(holder, kMany);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kMany) && a.Ready(); })) << a.log();
  RunFor(kafka, {&a}, 40s);  // every shard quiet: asked at each check
  bool ever_unready = false;
  const auto watch = [&] {
    ever_unready = ever_unready || !a.Ready();
    return false;
  };
  for (int spell = 0; spell < 4; ++spell) {
    kafka.SetAnswerDelay(1, 1h);  // two checks of silence
    RunUntil(kafka, {&a}, watch, 20s);
    kafka.SetAnswerDelay(1, 250ms);  // a check that answers three of twelve, cuts one short
    RunUntil(kafka, {&a}, watch, 10s);
  }
  EXPECT_FALSE(ever_unready) << a.log();
  EXPECT_EQ(a.log().find("cannot be read"), std::string::npos) << a.log();
}

// A partition whose question the budget cuts short goes first at the next check: after
// slow answers about the others, the one partition of a broker that answers nothing
// was cut short at every check, never counted, and its shard looked running for good.
TEST(Processor, AQuestionCutShortGoesFirstAtTheNextCheck) {
  std::unique_ptr<StrictKafka> holder;
  constexpr int32_t kMany = 7;
  StrictKafka& kafka = NewCluster(holder, kMany);
  kafka.SetLeader("events", kMany - 1, 2);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kMany) && a.Ready(); })) << a.log();
  kafka.SetAnswerDelay(1, 140ms);  // six answers take 840 ms of the check's second
  kafka.SetAnswerDelay(2, 1h);
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.View(kMany - 1)->phase == shard::ShardPhase::kFailed; }, 150s))
      << a.log();
  for (int32_t p = 0; p + 1 < kMany; ++p) EXPECT_TRUE(a.Runs(p)) << "shard " << p;
}

// A broker that answers slowly answers most questions of a check, and the last may
// be cut short by the check's budget: that timeout does not count for the others.
// Counted for them, a shard that the cut question found every few checks in a row
// showed failed, and with more partitions every shard flapped.
TEST(Processor, QuietShardsOfABrokerThatAnswersSlowlyStayRunning) {
  std::unique_ptr<StrictKafka> holder;
  constexpr int32_t kMany = 32;
  StrictKafka& kafka = NewCluster(holder, kMany);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kMany) && a.Ready(); })) << a.log();
  kafka.SetAnswerDelay(1, 150ms);  // six answers a check, the seventh cut to 100 ms
  bool ever_unready = false;
  RunUntil(
      kafka, {&a},
      [&] {
        ever_unready = ever_unready || !a.Ready();
        return false;
      },
      600s);
  EXPECT_FALSE(ever_unready) << a.log();
  EXPECT_EQ(a.log().find("cannot be read"), std::string::npos) << a.log();
}

// A quiet partition that has a leader is only quiet: its shard stays running.
TEST(Processor, AShardWhoseInputIsQuietButReadableStaysRunning) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunsAllAndIsReady(kafka, a)) << a.log();
  Send(kafka, 0, 40);
  a.StepAndCommit();
  RunFor(kafka, {&a}, 120s);
  EXPECT_TRUE(a.RunsAll(kPartitions) && a.Ready()) << a.log();
  EXPECT_EQ(a.log().find("cannot be read"), std::string::npos) << a.log();
}

// A rebalance completes between the moment a reads the group's metadata and the
// moment its offsets reach the coordinator (b joins: librdkafka rejoins a in the
// background, and a still holds both partitions until it serves the revocation). The
// coordinator refuses a's offsets (ILLEGAL_GENERATION). a is alive and owns its
// shards: it tries the same transaction once more with the metadata as it is now,
// and no shard is given up or restored.
TEST(Processor, ALiveMemberRefusedForAGenerationThatMovedOnCommitsOnceMoreWithoutARestore) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 200);
  for (int i = 0; i < 3; ++i) a.Step();
  const int32_t generation = kafka.Generation("oncecount");
  std::unique_ptr<Instance> b;
  kafka.ObserveAt(Call::kSendOffsets, "a", [&] { b = std::make_unique<Instance>(kafka, "b"); });
  a.Commit();
  ASSERT_NE(b, nullptr);
  EXPECT_GT(kafka.Generation("oncecount"), generation) << "b's join made a new generation";
  EXPECT_NE(a.log().find("ILLEGAL_GENERATION"), std::string::npos)
      << "the first attempt was not refused: no test\n"
      << a.log();
  EXPECT_TRUE(a.RunsAll(kPartitions)) << a.log();
  EXPECT_EQ(a.log().find("restoring the shards"), std::string::npos) << a.log();
  EXPECT_EQ(a.log().find("the group moved on"), std::string::npos) << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_generation_retries_total 1\n"), std::string::npos);
  EXPECT_EQ(CountsInChangelog(kafka), Expected(200)) << "the second attempt committed";

  ASSERT_TRUE(RunUntil(kafka, {&a, b.get()}, [&] { return a.Runs(0) != a.Runs(1) && b->Ready(); }))
      << a.log() << b->log();
  Send(kafka, 0, 250);  // every client retries, and new events come
  a.StepAndCommit();
  b->StepAndCommit();
  ExpectExactlyOnce(kafka, 250);
  std::map<std::string, int64_t> live = testing::CountsInViews(a);
  for (const auto& [name, value] : testing::CountsInViews(*b)) live[name] += value;
  EXPECT_EQ(live, Expected(250)) << "the live views of a and b together";
}

TEST(Processor, AMemberTheGroupMovedOnWithoutNeverCutsBackItsSuccessorsWork) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  std::unique_ptr<Instance> b = FreezeWithWorkInHandAndLetBTakeOver(kafka, a);
  ASSERT_FALSE(::testing::Test::HasFailure());

  // a wakes up and commits before it hears that it lost its shards: the broker
  // refuses its offsets, and a drops the shards without claiming them again.
  kafka.Thaw("a");
  a.Commit();
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_NE(a.View(p), nullptr);
    EXPECT_EQ(a.View(p)->phase, shard::ShardPhase::kFailed) << "shard " << p;
    EXPECT_NE(a.View(p)->failure.find("the group moved on without this instance"),
              std::string::npos)
        << a.View(p)->failure;
  }
  EXPECT_EQ(CountsInChangelog(kafka), Expected(250)) << "b's batches stand";

  RejoinAndCountEveryEventOnce(kafka, a, *b);
}

// The same zombie, in the other interleaving of a real client: its commit fails with
// an abortable error while librdkafka's background thread learns, in the same moment,
// that the session timed out. The abort path would restore the shards and claim them
// at once, in the loop turn that committed; with the assignment lost that claim is a
// zombie's (a real broker refuses it, the embedded cluster takes it and readers then
// follow it instead of the successor's). The instance claims nothing and leaves the
// shards to the revocation that the next poll serves.
TEST(Processor, AMemberThatLearnsItWasDroppedAsItsCommitAbortsClaimsNothing) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // Commits in its own loop turn, as the service does, so that the abort and the
  // restores it makes due happen in one turn, before the next poll.
  testing::StrictInstanceOptions options;
  options.process = "a";
  options.commit_interval = 1s;
  Instance a(kafka, options);
  std::unique_ptr<Instance> b = FreezeWithWorkInHandAndLetBTakeOver(kafka, a);
  ASSERT_FALSE(::testing::Test::HasFailure());

  // a wakes: its next loop turn polls (nothing tells it yet), commits what it
  // applied (the interval has passed), and the commit's first record times out as
  // the session check fires.
  kafka.Thaw("a");
  kafka.InjectError(Call::kProduce, {kafka::ErrorKind::kAbortable, "_MSG_TIMED_OUT", "injected"}, 1,
                    "a");
  kafka.LearnDropAt(Call::kProduce, "a");
  a.Step();
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_NE(a.View(p), nullptr);
    EXPECT_EQ(a.View(p)->transactions_aborted, 1u) << "shard " << p << ": the commit aborted";
    EXPECT_EQ(a.View(p)->restore_retries, 0u) << "shard " << p << ": " << a.View(p)->failure;
    EXPECT_FALSE(a.Runs(p)) << "shard " << p << " claimed by a member the group dropped";
  }
  EXPECT_EQ(a.log().find("its claim was refused"), std::string::npos) << a.log();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(250)) << "b's batches stand";
  ExpectEveryClaimTookANewEpoch(kafka);

  // The next poll serves the loss. Holding no shard, a is not ready until the group
  // gives it its share again (it said it was, with nothing to check).
  for (int i = 0; i < 20 && a.log().find("lost 2 partition(s)") == std::string::npos; ++i) {
    a.Step();
  }
  ASSERT_NE(a.log().find("lost 2 partition(s)"), std::string::npos) << a.log();
  EXPECT_FALSE(a.Ready()) << "ready while it rejoins its group";
  RejoinAndCountEveryEventOnce(kafka, a, *b);
  EXPECT_TRUE(a.Ready()) << a.log();
}

// A frozen owner in the middle of its commit: the commit's records are still in its
// producer's queue (a real producer sends them asynchronously), the broker has
// accepted its offsets at the generation it still had, and its process stops (SIGSTOP,
// a paused VM) longer than the session timeout. b is given the shards, reads their
// changelogs (a's records are not there) and claims them, counts more and commits.
// Then a goes on with its commit. Which regime it runs under decides the rest.
struct FrozenMidCommit {
  std::chrono::milliseconds session;
  std::chrono::milliseconds transaction;
  std::chrono::milliseconds abort_interval;
};

// The cluster and both instances once a's commit returned.
struct FrozenScene {
  std::unique_ptr<StrictKafka> kafka;
  std::unique_ptr<Instance> a;
  std::unique_ptr<Instance> b;
};

// Events [0, 100) counted by a; [100, 150) and malformed [0, 10) applied by a in the
// frozen commit; b counts [150, 250).
void FreezeMidCommit(const FrozenMidCommit& t, FrozenScene& scene) {
  StrictKafka& kafka = NewCluster(scene.kafka);
  kafka.set_session_timeout(t.session);
  kafka.set_transaction_abort_interval(t.abort_interval);
  testing::StrictInstanceOptions options;
  options.process = "a";
  options.transaction_timeout = t.transaction;
  scene.a = std::make_unique<Instance>(kafka, options);
  Instance& a = *scene.a;
  std::unique_ptr<Instance>& b = scene.b;
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 150);
  testing::SendMalformed(kafka, 0, 10);
  for (int i = 0; i < 3; ++i) a.Step();

  kafka.HoldProduce("a");
  kafka.ObserveAt(Call::kCommitTransaction, "a", [&] {
    kafka.Freeze("a");
    b = std::make_unique<Instance>(kafka, "b");
    ASSERT_TRUE(RunUntil(kafka, {b.get()}, [&] { return b->RunsAll(kPartitions); })) << b->log();
    Send(kafka, 150, 250);
    b->StepAndCommit();
    kafka.Thaw("a");
  });
  a.Commit();
  ASSERT_NE(b, nullptr) << "a's commit never reached CommitTransaction: " << a.log();
}

// The regime the start-up check requires (kafka.transaction_timeout_ms +
// kafka.transaction_abort_interval_ms + heartbeat.interval.ms < session.timeout.ms,
// config_test): the coordinator aborts a's transaction and fences its producer before
// the group gives b the shards. a's records never land, its commit fails fenced, and
// every event and every dead letter is written once.
TEST(Processor, AFrozenOwnerWhoseOffsetsWereAcceptedCannotCommitAfterItsSuccessorTookOver) {
  FrozenScene scene;
  FreezeMidCommit({6s, 2s, 1s}, scene);
  ASSERT_FALSE(::testing::Test::HasFailure());
  StrictKafka& kafka = *scene.kafka;
  Instance& a = *scene.a;

  EXPECT_FALSE(a.Step()) << "a's producer is fenced: the process exits";
  const base::Status a_exit = a.Finish();
  EXPECT_FALSE(a_exit.ok());
  EXPECT_NE(a_exit.ok() ? std::string::npos : a_exit.message().find("PRODUCER_FENCED"),
            std::string::npos)
      << a.log();
  Send(kafka, 100, 150);  // the clients retry what a never acknowledged
  scene.b->StepAndCommit();
  ExpectExactlyOnce(kafka, 250);
  testing::ExpectDeadLetteredOnce(kafka, 0, 10);
  EXPECT_EQ(testing::CountsInViews(*scene.b), Expected(250)) << "b's live views";
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(ClaimEpochs(kafka, p), (std::vector<uint64_t>{1, 2})) << "shard " << p;
  }
}

// The same freeze where the session timeout is below the transaction timeout (the
// regime the start-up check refuses): nothing fences a, its queued records land after
// b's claim and its commit succeeds. The scenario is not vacuous: this is the double
// count the check prevents.
TEST(Processor, AFrozenOwnerCommitsAfterItsSuccessorsClaimWhereTheStartUpCheckWouldRefuse) {
  FrozenScene scene;
  FreezeMidCommit({3s, 10s, 10s}, scene);
  ASSERT_FALSE(::testing::Test::HasFailure());

  scene.b->StepAndCommit();
  // b re-read the input a's offsets covered (they were not committed when b began):
  // a's dead letters stand, and b wrote them again.
  EXPECT_EQ(testing::DeadLetteredKeys(*scene.kafka).size(), 20u);
}

// --- Failovers while a dead owner's transaction is open --------------------------

TEST(Processor, ASecondFailoverWhileADeadOwnersTransactionIsOpenNeverReusesAnEpoch) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // Sessions end long before transactions time out: the next owner is assigned the
  // shards while the dead owner's transaction still holds the last stable offset. The
  // start-up check refuses this regime (a frozen owner could commit late); a dead one
  // cannot, and the successors must still get it right.
  kafka.set_session_timeout(3s);
  auto a = std::make_unique<Instance>(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  Send(kafka, 0, 100);
  a->StepAndCommit();
  Send(kafka, 100, 200);
  a->CommitAndDieAt(Call::kCommitTransaction);  // its batches and offsets stay open
  const int64_t a_died_ms = kafka.clock().SteadyMs();

  auto b = std::make_unique<Instance>(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {b.get()}, [&] { return b->RunsAll(kPartitions); })) << b->log();
  EXPECT_GE(kafka.clock().SteadyMs() - a_died_ms, 10'000)
      << "b claimed before a's transaction was decided";
  b->StepAndCommit();
  Send(kafka, 200, 300);
  b->CommitAndDieAt(Call::kSendOffsets);  // its batches stay open

  Instance c(kafka, "c");
  ASSERT_TRUE(RunUntil(kafka, {&c}, [&] { return c.RunsAll(kPartitions); })) << c.log();
  Send(kafka, 0, 320);  // every client retries everything
  c.StepAndCommit();

  ExpectExactlyOnce(kafka, 320);
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(ClaimEpochs(kafka, p), (std::vector<uint64_t>{1, 2, 3})) << "shard " << p;
  }
}

// --- How long a failover takes --------------------------------------------------

struct Timeouts {
  std::chrono::milliseconds session;
  std::chrono::milliseconds transaction;
  std::chrono::milliseconds abort_interval;  // the coordinators' check for timed-out ones
};

class FailoverTime : public ::testing::TestWithParam<Timeouts> {};

// The owner dies with a transaction open. The group gives its shards away after the
// session timeout; the new owner's restore then waits for the transaction to be
// aborted, at the coordinator's first check after the transaction timeout. Failover
// takes whichever is later (plus the 100 ms steps of this test): between
// max(session, transaction timeout) and max(session, transaction timeout + abort
// interval). Where the start-up check holds (transaction timeout + abort interval +
// heartbeat below the session timeout) that is the session timeout.
TEST_P(FailoverTime, IsTheLaterOfTheSessionTimeoutAndTheTransactionsAbort) {
  const Timeouts t = GetParam();
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.set_session_timeout(t.session);
  kafka.set_transaction_abort_interval(t.abort_interval);
  testing::StrictInstanceOptions a_options;
  a_options.process = "a";
  a_options.transaction_timeout = t.transaction;
  auto a = std::make_unique<Instance>(kafka, a_options);
  ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  Send(kafka, 0, 100);
  a->CommitAndDieAt(Call::kCommitTransaction);
  const int64_t died_ms = kafka.clock().SteadyMs();

  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  const int64_t failover_ms = kafka.clock().SteadyMs() - died_ms;
  EXPECT_GE(failover_ms, std::max(t.session, t.transaction).count());
  EXPECT_LE(failover_ms, std::max(t.session, t.transaction + t.abort_interval).count() + 300);
  RecordProperty("failover_ms", std::to_string(failover_ms));
  b.StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(100));
}

INSTANTIATE_TEST_SUITE_P(SessionAndTransactionTimeouts, FailoverTime,
                         ::testing::Values(Timeouts{3s, 10s, 10s}, Timeouts{10s, 10s, 10s},
                                           Timeouts{10s, 3s, 1s}, Timeouts{45s, 10s, 10s},
                                           Timeouts{6s, 2s, 1s}));

// Restores run in the rebalance callback, where the group can complete no other
// rebalance. One that a dead owner's open transaction holds back gives the loop back
// after ProcessorOptions::restore_wait (5 s) and tries again at the next step: a
// member that joins meanwhile gets its share long before the broker aborts the
// transaction, and every shard runs, exactly once, once it has.
TEST(Processor, ARestoreHeldBackByADeadOwnersTransactionLetsTheGroupRebalanceMeanwhile) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.set_session_timeout(3s);
  kafka.set_transaction_abort_interval(10s);
  testing::StrictInstanceOptions a_options;
  a_options.process = "a";
  a_options.transaction_timeout = 60s;
  auto a = std::make_unique<Instance>(kafka, a_options);
  ASSERT_TRUE(RunUntil(kafka, {a.get()}, [&] { return a->RunsAll(kPartitions); })) << a->log();
  Send(kafka, 0, 100);
  a->CommitAndDieAt(Call::kCommitTransaction);  // both changelog partitions held back
  const int64_t died_ms = kafka.clock().SteadyMs();
  const auto since_death = [&] { return kafka.clock().SteadyMs() - died_ms; };

  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.View(0) && b.View(1); })) << b.log();
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(b.View(p)->phase, shard::ShardPhase::kRestoring);
    EXPECT_NE(b.View(p)->failure.find("waiting for the changelog"), std::string::npos)
        << b.View(p)->failure;
  }
  Instance c(kafka, "c");
  ASSERT_TRUE(RunUntil(kafka, {&b, &c}, [&] { return c.View(0) || c.View(1); })) << c.log();
  EXPECT_LT(since_death(), 30000) << "c got its share while a's transaction was open";

  ASSERT_TRUE(RunUntil(kafka, {&b, &c},
                       [&] { return (b.Runs(0) || c.Runs(0)) && (b.Runs(1) || c.Runs(1)); }))
      << b.log() << c.log();
  EXPECT_GE(since_death(), 60000) << "no shard ran before the broker aborted a's transaction";
  b.StepAndCommit();
  c.StepAndCommit();
  ExpectExactlyOnce(kafka, 100);
}

// --- When commits happen -----------------------------------------------------------

// Under a backlog the last events of a burst would wait up to a whole commit interval
// to be visible; they are committed once the input is drained instead, and so are the
// few events after a burst's commit. A light load (fewer than 1,000 events pending,
// and the last commit as small) still waits for the interval, so that it costs one
// transaction an interval, not one a fetch.
TEST(Processor, CommitsABurstAndItsTailOnceTheInputIsDrainedAndALightLoadOnlyEachInterval) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  testing::StrictInstanceOptions options;
  options.process = "a";
  options.commit_interval = 10s;
  Instance a(kafka, options);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  kafka.Advance(3s);  // past a fifth of the interval since the claims

  Send(kafka, 0, 400);
  a.Step();
  a.Step();
  EXPECT_TRUE(CountsInChangelog(kafka).empty()) << "a light load waits for the interval";

  Send(kafka, 400, 4000);  // more than one poll burst (2,048 messages)
  a.Step();
  EXPECT_TRUE(CountsInChangelog(kafka).empty()) << "not drained yet: the burst goes on";
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(4000)) << "drained: committed 7 s early";

  Send(kafka, 4000, 6000);
  a.Step();
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(4000))
      << "drained, but within a fifth of the interval of the last commit";
  kafka.Advance(3s);
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(6000));

  Send(kafka, 6000, 6010);  // the burst's last few events
  a.Step();
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(6000)) << "within a fifth of the interval";
  kafka.Advance(3s);
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(6010))
      << "the tail of a burst is committed like the burst";

  Send(kafka, 6010, 6020);  // after a small commit: a light load again
  kafka.Advance(3s);
  a.Step();
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(6010)) << "a light load waits for the interval";
  kafka.Advance(7s);
  a.Step();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(6020));
}

// --- Aborts and failed restores ---------------------------------------------------

// Sends 100 events; retention removes the first half of each input partition while
// a's first transaction (its claim) commits. The partitions' ends.
std::map<int32_t, int64_t> RemoveHalfTheInputAsAClaims(StrictKafka& kafka) {
  Send(kafka, 0, 100);
  std::map<int32_t, int64_t> ends;
  for (int32_t p = 0; p < kPartitions; ++p) ends[p] = kafka.HighWatermark("events", p);
  kafka.ObserveAt(Call::kCommitTransaction, "a", [&kafka, ends] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      EXPECT_FALSE(kafka.DeleteRecordsBefore("events", p, ends.at(p) / 2));
    }
  });
  return ends;
}

// Regression: a record the consumer could not read (a checksum mismatch under
// check.crcs, a batch it cannot decompress) was a log line. librdkafka goes on past
// it, the next batch's input range covered its offset, and its event was neither
// counted, nor dead-lettered, nor counted as lost.
TEST(Processor, AnInputRecordTheConsumerCannotReadIsCountedAsLost) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 40);
  const int64_t end = kafka.HighWatermark("events", 0);
  ASSERT_GE(end, 6);
  ASSERT_FALSE(kafka.MakeUnreadable("events", 0, 2));
  ASSERT_FALSE(kafka.MakeUnreadable("events", 0, 3));  // two in a row: both counted
  a.StepAndCommit();
  const auto view = a.View(0);
  EXPECT_EQ(view->input_lost, 2u);
  EXPECT_EQ(view->events_applied, static_cast<uint64_t>(end - 2));
  EXPECT_EQ(view->input_offset, base::Offset(end));
  EXPECT_NE(a.log().find("shard 0: the input record at offset 2 cannot be read (_BAD_MSG"),
            std::string::npos)
      << a.log();
  EXPECT_NE(a.log().find("shard 0: the consumer went past input offsets 2..2, which it could "
                         "not read: up to 1 message(s) lost"),
            std::string::npos)
      << a.log();
  EXPECT_EQ(a.View(1)->input_lost, 0u);
}

// librdkafka fetches a batch it cannot decompress again and again, never past it: the
// shard shows failed, naming the error, for as long as it is stuck, rather than count
// it as lost (nothing was yet) or stall with only its lag showing it. Records deleted
// past it (the way out) are counted as lost, and the shard runs again.
TEST(Processor, AShardWhoseConsumerIsStuckOnAnInputRecordItCannotReadShowsFailedUntilItIsPast) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 40);
  ASSERT_GE(kafka.HighWatermark("events", 0), 4);
  ASSERT_FALSE(kafka.MakeUnreadable("events", 0, 2, /*stuck=*/true));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    auto view = a.View(0);
    return view && view->phase == shard::ShardPhase::kFailed;
  })) << a.log();
  EXPECT_NE(a.View(0)->failure.find("its input record at offset 2 cannot be read and the "
                                    "consumer does not go past it (_BAD_MSG"),
            std::string::npos)
      << a.View(0)->failure;
  EXPECT_EQ(a.View(0)->input_lost, 0u);
  EXPECT_FALSE(a.Ready());
  testing::RunFor(kafka, {&a}, 120s);
  EXPECT_EQ(a.View(0)->phase, shard::ShardPhase::kFailed) << "not ready for a moment only";
  EXPECT_FALSE(a.Ready());
  EXPECT_EQ(a.View(1)->phase, shard::ShardPhase::kRunning) << "the other shard goes on";

  ASSERT_FALSE(kafka.DeleteRecordsBefore("events", 0, 3));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.Ready(); })) << a.log();
  a.StepAndCommit();
  EXPECT_EQ(a.View(0)->input_lost, 1u) << a.log();
  EXPECT_EQ(a.View(0)->input_offset, base::Offset(kafka.HighWatermark("events", 0)));
}

// A shard that never had input claims the start of its input partition as it is at
// the claim, and reads on from there: input that retention removes between the claim
// and the first fetch is counted as lost, not skipped without a word (as a fetch
// from the logical beginning, resolved only when fetching starts, would).
TEST(Processor, InputRemovedBetweenAFreshShardsClaimAndItsFirstFetchIsCountedAsLost) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  const std::map<int32_t, int64_t> ends = RemoveHalfTheInputAsAClaims(kafka);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  a.StepAndCommit();
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_GE(ends.at(p), 4);
    auto view = a.View(p);
    EXPECT_EQ(view->input_lost, static_cast<uint64_t>(ends.at(p) / 2)) << "partition " << p;
    EXPECT_EQ(view->events_applied, static_cast<uint64_t>(ends.at(p) - ends.at(p) / 2));
    EXPECT_EQ(view->input_offset, base::Offset(ends.at(p))) << "partition " << p;
  }
  EXPECT_NE(a.log().find("removed by retention before they were applied"), std::string::npos)
      << a.log();
}

// Regression: input lost before a commit that aborted was counted again when the
// shard, restored from its last commit, went back over the same gap: twice as many
// messages were reported lost as retention removed.
TEST(Processor, InputLostBeforeAnAbortIsCountedOnceWhenTheShardGoesOverItAgain) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  const std::map<int32_t, int64_t> ends = RemoveHalfTheInputAsAClaims(kafka);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  // The first commit after the loss aborts: the shards go back to their claims.
  kafka.InjectError(Call::kProduce, {kafka::ErrorKind::kAbortable, "_MSG_TIMED_OUT", "injected"}, 1,
                    "a");
  a.StepAndCommit();
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  a.StepAndCommit();
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_GE(ends.at(p), 4);
    auto view = a.View(p);
    EXPECT_GE(view->transactions_aborted, 1u) << "partition " << p;
    EXPECT_EQ(view->input_lost, static_cast<uint64_t>(ends.at(p) / 2)) << "partition " << p;
    EXPECT_EQ(view->input_offset, base::Offset(ends.at(p))) << "partition " << p;
  }
  EXPECT_NE(a.log().find("of them counted already: before an abort took the shard back"),
            std::string::npos)
      << a.log();
}

// Regression: a shard that never applied a batch has no input position in its state,
// so its next owner claimed the input's start as it found it: records retention had
// removed while the shard had no owner were skipped with no word and no count. The
// group's offset, which the last claim committed, says where they began.
TEST(Processor, InputRemovedWhileAShardThatNeverHadInputHadNoOwnerIsCountedAsLost) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    a.StepAndCommit();
    ASSERT_TRUE(a.Finish().ok()) << a.log();
  }
  Send(kafka, 0, 100);
  std::map<int32_t, int64_t> ends;
  for (int32_t p = 0; p < kPartitions; ++p) {
    ends[p] = kafka.HighWatermark("events", p);
    ASSERT_GE(ends[p], 4);
    ASSERT_FALSE(kafka.DeleteRecordsBefore("events", p, ends[p] / 2));
  }
  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  b.StepAndCommit();
  for (int32_t p = 0; p < kPartitions; ++p) {
    auto view = b.View(p);
    EXPECT_EQ(view->input_lost, static_cast<uint64_t>(ends[p] / 2)) << "partition " << p;
    EXPECT_EQ(view->events_applied, static_cast<uint64_t>(ends[p] - ends[p] / 2));
  }
  EXPECT_NE(b.log().find("input offsets 0.." + std::to_string(ends[0] / 2 - 1) +
                         " were removed by retention before they were applied"),
            std::string::npos)
      << b.log();
}

// Regression: an input that ends before the shard's position (a topic deleted and
// recreated, a log truncated by an unclean leader election, or, as here, a changelog
// mirrored to a cluster whose input holds fewer records) was taken for retention with
// 0 messages lost: the shard went on from the log's start, and the worker skipped
// every new record below its position as counted already. The shard now fails,
// naming why, and counts nothing from an input that is not the one it counted.
TEST(Processor, AnInputThatEndsBeforeTheShardsPositionFailsTheShardInsteadOfSkippingIt) {
  const std::string changelog = "events.changelog";
  std::unique_ptr<StrictKafka> first_holder;
  StrictKafka& first = NewCluster(first_holder);
  {
    Instance a(first, "a");
    ASSERT_TRUE(RunUntil(first, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(first, 0, 100);
    a.StepAndCommit();
    ExpectExactlyOnce(first, 100);
    EXPECT_TRUE(a.Finish().ok());
  }
  std::unique_ptr<StrictKafka> second_holder;
  StrictKafka& second = NewCluster(second_holder);
  {
    auto mirror = second.ClientsFor("mirror")->NewPlainProducer({});
    ASSERT_TRUE(mirror.ok()) << mirror.error();
    for (int32_t p = 0; p < kPartitions; ++p) {
      for (const StrictKafka::StoredEntry& e : first.Entries(changelog, p)) {
        if (e.state != StrictKafka::StoredEntry::kCommitted) continue;
        const std::optional<std::string_view> key =
            e.key ? std::optional<std::string_view>(*e.key) : std::nullopt;
        ASSERT_FALSE(mirror.value()->Produce({changelog, base::Partition(p), key, e.value, {}}));
      }
    }
    ASSERT_EQ(mirror.value()->Flush(10s), 0u);
  }
  Send(second, 0, 10);  // 5 records a partition, below the 50 each shard counted
  Instance b(second, "b");
  const auto failed_for_its_input = [&](int32_t p) {
    auto view = b.View(p);
    return view && view->phase != shard::ShardPhase::kRunning &&
           view->failure.find("input partition ends at offset 5, before the offset 50") !=
               std::string::npos;
  };
  ASSERT_TRUE(RunUntil(second, {&b}, [&] {
    for (int32_t p = 0; p < kPartitions; ++p) {
      if (!failed_for_its_input(p)) return false;
    }
    return true;
  })) << b.log();
  EXPECT_EQ(b.log().find("removed by retention"), std::string::npos) << b.log();
  EXPECT_FALSE(b.Ready());
}

// Regression: the number of changelog records a restore could not read went to a log
// line only; a shard restored past a damaged record looked like any other.
TEST(Processor, ShowsHowManyChangelogRecordsAShardsRestoreCouldNotRead) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance a(kafka, "a");
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 100);
    a.StepAndCommit();
    EXPECT_TRUE(a.Finish().ok());
  }
  {
    auto writer = kafka.ClientsFor("writer")->NewPlainProducer({});
    ASSERT_TRUE(writer.ok()) << writer.error();
    ASSERT_FALSE(writer.value()->Produce(
        {"events.changelog", base::Partition(1), std::nullopt, "not a changelog record", {}}));
    ASSERT_EQ(writer.value()->Flush(10s), 0u);
  }
  Send(kafka, 100, 120);
  Instance b(kafka, "b");
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  b.StepAndCommit();
  // Every event once (ExpectExactlyOnce would refuse the record that does not decode).
  EXPECT_EQ(CountsInChangelog(kafka), Expected(120));
  ExpectAllInputCommitted(kafka);
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(b.View(p)->changelog_unreadable_records, p == 1 ? 1u : 0u) << "partition " << p;
  }
  EXPECT_NE(b.log().find("shard 1: "), std::string::npos) << b.log();
  EXPECT_NE(b.log().find("1 changelog record(s) could not be read"), std::string::npos) << b.log();
}

TEST(Processor, AnAbortedCommitRestoresTheShardsAndCountsTheirInputOnce) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 200);
  for (int i = 0; i < 3; ++i) a.Step();
  kafka.InjectError(Call::kCommitTransaction,
                    {kafka::ErrorKind::kAbortable, "INVALID_PRODUCER_ID_MAPPING", "injected"});
  a.Commit();
  EXPECT_FALSE(a.Runs(0));
  EXPECT_EQ(a.View(0)->transactions_aborted, 1u);

  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 150, 220);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 220);
}

// Regression: an abort restored every shard from its changelog, idle ones too (they
// had nothing in the transaction): each re-read its whole changelog partition while
// /readyz said 503, for nothing.
TEST(Processor, AnAbortRestoresOnlyTheShardsThatHadABatchInTheTransaction) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  for (int i = 100; i < 200; i += 2) Send(kafka, i, i + 1);  // shard 0's input only
  for (int i = 0; i < 3; ++i) a.Step();
  kafka.InjectError(Call::kCommitTransaction,
                    {kafka::ErrorKind::kAbortable, "INVALID_PRODUCER_ID_MAPPING", "injected"});
  a.Commit();
  EXPECT_FALSE(a.Runs(0));
  EXPECT_EQ(a.View(0)->transactions_aborted, 1u);
  EXPECT_TRUE(a.Runs(1)) << a.log();
  EXPECT_EQ(a.View(1)->transactions_aborted, 0u);

  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 100, 200);  // shard 1's input, and shard 0's again (retries)
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 200);
  EXPECT_EQ(CountsInViews(a), Expected(200));
}

// Regression: a commit that kept timing out was retried for minutes without a line in
// the log, and when the abort after it was refused (librdkafka refuses one after a
// commit that timed out), the instance exited naming only the abort's _CONFLICT.
TEST(Processor, SaysEachRetryOfACommitAndExitsNamingTheCommitsErrorBeforeTheRefusedAborts) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  for (int i = 0; i < 3; ++i) a.Step();
  kafka.InjectError(Call::kCommitTransaction,
                    {kafka::ErrorKind::kRetriable, "_TIMED_OUT", "commit timed out"}, 5, "a");
  kafka.InjectError(Call::kAbortTransaction,
                    {kafka::ErrorKind::kFailed, "_CONFLICT", "a commit is in progress"}, 1, "a");
  a.Commit();
  EXPECT_FALSE(a.Step());
  const std::string exit = a.Finish().error().ToString();
  EXPECT_NE(exit.find("commit timed out (_TIMED_OUT); the abort that followed failed too: "
                      "a commit is in progress (_CONFLICT)"),
            std::string::npos)
      << exit;
  for (int attempt = 1; attempt <= 4; ++attempt) {
    EXPECT_NE(a.log().find("the commit failed (attempt " + std::to_string(attempt) +
                           " of 5): commit timed out (_TIMED_OUT); trying again"),
              std::string::npos)
        << a.log();
  }
  EXPECT_EQ(a.log().find("(attempt 5 of 5)"), std::string::npos) << a.log();
}

// Regression: an abort that came back at every commit (a dead letter the broker always
// refuses, a permission missing) restored every shard at once, again and again, with
// no back-off, while /readyz went back to 200 between the rounds and nothing said the
// instance was stuck.
TEST(Processor, AbortsThatComeBackAtEveryCommitBackOffAndShowTheShardsFailed) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 200);
  for (int round = 1; round <= 3; ++round) {
    for (int i = 0; i < 3; ++i) a.Step();
    kafka.InjectError(Call::kCommitTransaction,
                      {kafka::ErrorKind::kAbortable, "TOPIC_AUTHORIZATION_FAILED", "injected"});
    a.Commit();
    ASSERT_FALSE(a.Runs(0)) << "round " << round;
    const auto view = a.View(0);
    EXPECT_EQ(view->transactions_aborted, static_cast<uint64_t>(round));
    if (round == 1) {
      EXPECT_EQ(view->phase, shard::ShardPhase::kRestoring) << "a one-off abort restores at once";
      EXPECT_EQ(view->failure, "");
    } else {
      EXPECT_EQ(view->phase, shard::ShardPhase::kFailed) << "round " << round;
      EXPECT_NE(view->failure.find("aborted " + std::to_string(round) + " times in a row"),
                std::string::npos)
          << view->failure;
      EXPECT_NE(view->failure.find("TOPIC_AUTHORIZATION_FAILED"), std::string::npos)
          << view->failure;
      EXPECT_FALSE(a.Ready());
      a.Step();
      EXPECT_FALSE(a.Runs(0)) << "round " << round << ": restored before its back-off";
    }
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  }
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 200);
  // Committed: the next abort is a one-off again.
  Send(kafka, 200, 210);
  for (int i = 0; i < 3; ++i) a.Step();
  kafka.InjectError(Call::kCommitTransaction,
                    {kafka::ErrorKind::kAbortable, "TOPIC_AUTHORIZATION_FAILED", "injected"});
  a.Commit();
  EXPECT_EQ(a.View(0)->phase, shard::ShardPhase::kRestoring);
}

// Regression: once an abort restored only the shards that had a batch in it, another
// shard's commit during a back-off reset the count of aborts in a row of every
// shard: one whose commits always aborted restored at once, again and again, its back-off
// never growing.
TEST(Processor, AShardsAbortsInARowKeepCountingWhileAnotherShardCommits) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  const auto shard_zero_aborts = [&](int from) {
    for (int i = from; i < from + 10; i += 2) Send(kafka, i, i + 1);  // shard 0's input only
    for (int i = 0; i < 3; ++i) a.Step();
    kafka.InjectError(Call::kCommitTransaction,
                      {kafka::ErrorKind::kAbortable, "TOPIC_AUTHORIZATION_FAILED", "injected"});
    a.Commit();
    EXPECT_FALSE(a.Runs(0));
    EXPECT_TRUE(a.Runs(1)) << "shard 1 had nothing in the transaction";
  };
  shard_zero_aborts(100);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  shard_zero_aborts(110);
  EXPECT_NE(a.View(0)->failure.find("aborted 2 times in a row"), std::string::npos)
      << a.View(0)->failure;
  for (int i = 101; i < 121; i += 2) Send(kafka, i, i + 1);  // shard 1 commits meanwhile
  a.StepAndCommit();
  EXPECT_EQ(a.View(1)->transactions_committed, 2u);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  shard_zero_aborts(120);
  EXPECT_NE(a.View(0)->failure.find("aborted 3 times in a row"), std::string::npos)
      << "shard 0 started over: " << a.View(0)->failure;
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  // Restored, then idle for longer than aborts count as in a row: the next is a one-off.
  RunFor(kafka, {&a}, 6min);
  shard_zero_aborts(130);
  EXPECT_EQ(a.View(0)->phase, shard::ShardPhase::kRestoring) << a.View(0)->failure;
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 100, 140);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 140);
}

// The line of a Prometheus exposition that starts with `prefix`, or "".
std::string MetricLine(const std::string& exposition, const std::string& prefix) {
  const size_t at = exposition.find("\n" + prefix);
  if (at == std::string::npos) return "";
  return exposition.substr(at + 1, exposition.find('\n', at + 1) - at - 1);
}

TEST(Processor, MeasuresEachTransactionAndEachRestoreOnItsClock) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  std::string m = a.metrics().Render();
  EXPECT_EQ(MetricLine(m, "oncecount_restore_duration_seconds_count"),
            "oncecount_restore_duration_seconds_count 1")
      << m;
  const std::string claims = MetricLine(m, "oncecount_commit_duration_seconds_count");
  EXPECT_EQ(claims, "oncecount_commit_duration_seconds_count 1") << "the claim's transaction";

  Send(kafka, 0, 100);
  a.StepAndCommit();
  Send(kafka, 100, 150);
  a.StepAndCommit();
  m = a.metrics().Render();
  EXPECT_EQ(MetricLine(m, "oncecount_commit_duration_seconds_count"),
            "oncecount_commit_duration_seconds_count 3")
      << m;
  EXPECT_EQ(MetricLine(m, "oncecount_commit_duration_seconds_bucket{le=\"+Inf\"}"),
            "oncecount_commit_duration_seconds_bucket{le=\"+Inf\"} 3");
}

TEST(Processor, ARestoreThatFailsIsRetriedWithGrowingBackOffAndShownUntilItWorks) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.InjectError(Call::kHighWatermark,
                    {kafka::ErrorKind::kRetriable, "REQUEST_TIMED_OUT", "injected"}, 2, "a");
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.View(0) != nullptr; }, 1s))
      << a.log();
  auto failed = a.View(0);
  EXPECT_EQ(failed->phase, shard::ShardPhase::kFailed);
  EXPECT_NE(failed->failure.find("REQUEST_TIMED_OUT"), std::string::npos) << failed->failure;
  EXPECT_EQ(failed->restore_retries, 1u);

  const int64_t first_failure_ms = kafka.clock().SteadyMs();
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.RunsAll(kPartitions); }, 10s))
      << a.log();
  // Two failed attempts: retried after 1 s, then after 2 s more.
  EXPECT_GE(kafka.clock().SteadyMs() - first_failure_ms, 3000);
  EXPECT_EQ(a.View(0)->restore_retries, 2u);
  EXPECT_EQ(a.View(0)->failure, "");
  Send(kafka, 0, 50);
  a.StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(50));
  ExpectAllInputCommitted(kafka);
}

// A shard whose state throws on its worker (its filter runs out of memory) fails
// alone: the other shard commits on, the failed one commits nothing more, shows why,
// and is restored from its changelog; the input it had not committed is read again,
// and every event is counted once.
TEST(Processor, AShardThatRunsOutOfMemoryFailsAloneAndIsRestoredFromItsChangelog) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  const uint64_t commits_of_1 = a.View(1)->transactions_committed;

  auto running = a.View(0);
  auto failing = shard::ShardState::WithFilter(base::Partition(0),
                                               std::make_unique<testing::OutOfMemoryAfter>(0));
  failing->SetClaim(running->epoch, 0xdead, filter::IdHashKey{1});
  a.ReplaceShardState(std::move(failing));
  Send(kafka, 100, 200);
  a.StepAndCommit();
  auto failed = a.View(0);
  ASSERT_NE(failed, nullptr);
  EXPECT_EQ(failed->phase, shard::ShardPhase::kFailed);
  EXPECT_NE(failed->failure.find("applying its input failed: out of memory"), std::string::npos)
      << failed->failure;
  EXPECT_FALSE(a.Ready());
  EXPECT_NE(a.log().find("shard 0: applying its input failed: out of memory"), std::string::npos)
      << a.log();
  EXPECT_GT(a.View(1)->transactions_committed, commits_of_1) << "the other shard commits on";

  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.RunsAll(kPartitions); }, 10s))
      << a.log();
  Send(kafka, 50, 150);  // retries
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 200);
}

TEST(Processor, AClaimTheBrokerRefusesIsRetriedAndNeverLeavesTwoClaimsOfOneEpoch) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // Twice: the claim, and its second attempt with the group's metadata read anew.
  kafka.InjectError(Call::kSendOffsets,
                    {kafka::ErrorKind::kGroupFenced, "ILLEGAL_GENERATION", "injected"}, 2, "a");
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(
      kafka, {&a}, [&] { return a.RunsAll(kPartitions); }, 10s))
      << a.log();
  EXPECT_NE(a.log().find("its claim was refused"), std::string::npos) << a.log();
  Send(kafka, 0, 50);
  a.StepAndCommit();
  EXPECT_EQ(CountsInChangelog(kafka), Expected(50));
  ExpectEveryClaimTookANewEpoch(kafka);
}

// --- A fenced producer --------------------------------------------------------------

TEST(Processor, AProducerFencedByASecondProcessWithItsIdEndsTheInstanceWithAClearError) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance first(kafka, "first", "shared-id");
  ASSERT_TRUE(RunUntil(kafka, {&first}, [&] { return first.RunsAll(kPartitions); })) << first.log();
  Send(kafka, 0, 50);
  first.StepAndCommit();

  // A second process started with the same instance id: its init_transactions fences
  // the first one's producer.
  Instance second(kafka, "second", "shared-id");
  Send(kafka, 50, 100);
  for (int i = 0; i < 3; ++i) first.Step();
  first.Commit();
  EXPECT_FALSE(first.Step());
  const base::Status finished = first.Finish();
  ASSERT_FALSE(finished.ok());
  EXPECT_EQ(finished.code(), base::Errc::kKafka);
  const std::string& error = finished.message();
  EXPECT_NE(error.find("PRODUCER_FENCED"), std::string::npos) << error;
  EXPECT_NE(error.find("shared-id"), std::string::npos) << error;
  EXPECT_EQ(CountsInChangelog(kafka), Expected(50)) << "the fenced batch never counts";
}

}  // namespace
}  // namespace oncecount::service
