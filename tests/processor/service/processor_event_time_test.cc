// Processor in event time, on the StrictKafka double's simulated clock: the dedup
// window is measured on the input's record timestamps, so that a retry whose
// timestamp is within the window of the first copy's is caught however late it is
// processed — after an outage longer than the window, behind a backlog, after a
// failover — and a producer whose clock runs far ahead makes nothing forgotten.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
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
using Options = testing::StrictInstanceOptions;

constexpr int32_t kPartitions = testing::kServicePartitions;

Options TenSecondWindow(std::string process) {
  Options o;
  o.process = std::move(process);
  o.dedup_window = 10s;
  return o;
}

TEST(EventTime, RetriesProcessedAfterAnOutageLongerThanTheWindowAreStillCaught) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  {
    Instance a(kafka, TenSecondWindow("a"));
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 200);
    a.StepAndCommit();
  }  // stopped
  kafka.Advance(3s);
  Send(kafka, 0, 200);  // every client retries, 3 s after the originals
  kafka.Advance(15s);   // the outage outlasts the window
  Instance b(kafka, TenSecondWindow("b"));
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  b.StepAndCommit();
  ExpectExactlyOnce(kafka, 200);
}

TEST(EventTime, ABacklogOlderThanTheWindowIsDedupedOnItsOwnTimestamps) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  // An hour of input, with a retry of every event 2 s after it, waits for a first
  // instance: processed in a few seconds, it still spans an hour of record time.
  for (int minute = 0; minute < 60; ++minute) {
    Send(kafka, minute * 10, minute * 10 + 10);
    kafka.Advance(2s);
    Send(kafka, minute * 10, minute * 10 + 10);
    kafka.Advance(58s);
  }
  Instance a(kafka, TenSecondWindow("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  a.StepAndCommit();
  RunFor(kafka, {&a}, 1s);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 600);
  // An hour of record time went by: the shards' clocks say so, the wall clock aside.
  const int64_t clock = a.View(0)->event_clock_ms;
  EXPECT_GT(clock, kafka.clock().WallMs() - 2 * 60'000);
  EXPECT_EQ(a.View(0)->timestamps_ahead, 0u);
}

TEST(EventTime, AProducerWhoseClockRunsADayAheadMakesNothingForgotten) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, TenSecondWindow("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 100);
  a.StepAndCommit();
  const int64_t tomorrow = kafka.clock().WallMs() + 24 * 3'600'000;
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", p, "skewed/" + std::to_string(p),
                                    "{\"counter\":\"skewed\"}", {}, tomorrow)
                    .ok());
  }
  a.StepAndCommit();
  kafka.Advance(2s);
  Send(kafka, 0, 100);  // retries, well inside the window
  a.StepAndCommit();
  RunFor(kafka, {&a}, 1s);
  a.StepAndCommit();
  EXPECT_EQ(testing::CountsInChangelog(kafka)["n0"], testing::Expected(100)["n0"]);
  EXPECT_EQ(testing::CountsInChangelog(kafka)["skewed"], kPartitions);
  EXPECT_EQ(a.View(0)->timestamps_ahead + a.View(1)->timestamps_ahead,
            static_cast<uint64_t>(kPartitions))
      << "the skewed records are counted";
}

// SPEC §2.1: a retry is inside the guarantee only while its shard's clock is at most
// dedup.timestamp_tolerance_ms (1 s here) past its timestamp. One that waited in a
// producer's queue while other producers moved the clock on is late, and counted,
// even though its timestamp is well inside the window of the first copy's.
TEST(EventTime, ARetryAppliedMoreThanTheToleranceBehindTheShardsClockIsCountedLate) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Instance a(kafka, TenSecondWindow("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  Send(kafka, 0, 2);  // one event a partition, stamped now
  a.StepAndCommit();
  const int64_t first_ms = kafka.clock().WallMs();
  kafka.Advance(5s);
  Send(kafka, 2, 4);  // other producers: the shards' clocks move 5 s on
  a.StepAndCommit();
  const auto send_stamped = [&](int i, int64_t timestamp_ms) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", i % kPartitions, "client/" + std::to_string(i),
                                    "{\"counter\":\"n" + std::to_string(i % 3) + "\",\"delta\":1}",
                                    {}, timestamp_ms)
                    .ok());
  };
  // New events 0.5 s behind the clocks: inside the tolerance, not late.
  send_stamped(4, first_ms + 4500);
  send_stamped(5, first_ms + 4500);
  a.StepAndCommit();
  EXPECT_EQ(a.View(0)->late_events + a.View(1)->late_events, 0u);
  // The retries, stamped 2 s after the originals, reach the partitions only now.
  send_stamped(0, first_ms + 2000);
  send_stamped(1, first_ms + 2000);
  a.StepAndCommit();
  EXPECT_EQ(a.View(0)->late_events + a.View(1)->late_events, 2u)
      << "3 s behind the shards' clocks, past the 1 s tolerance";
  ExpectExactlyOnce(kafka, 6);  // still caught here: the filter keeps window + tolerance
}

// Event i (as Send makes it) with the record timestamp `timestamp_ms`.
void SendStamped(StrictKafka& kafka, int i, int64_t timestamp_ms) {
  ASSERT_TRUE(kafka
                  .ProduceForTest("events", i % kPartitions, "client/" + std::to_string(i),
                                  "{\"counter\":\"n" + std::to_string(i % 3) + "\",\"delta\":1}",
                                  {}, timestamp_ms)
                  .ok());
}

// The committed dead letters of reason `reason`, by key.
std::vector<std::string> DeadLettered(const StrictKafka& kafka, const std::string& reason) {
  std::vector<std::string> keys;
  for (const StrictKafka::StoredEntry& e : kafka.Entries("events.dlq", 0)) {
    if (e.state != StrictKafka::StoredEntry::kCommitted) continue;
    for (const kafka::Header& h : e.headers) {
      if (h.name == "oncecount.error" && h.value == reason) keys.push_back(e.key.value_or(""));
    }
  }
  return keys;
}

// dedup.late_records: dead_letter. A retry that reaches its partition after the
// shard's clock moved past the window (the filter forgot its first copy) would be
// counted twice under apply; here it goes to the dead-letter topic with reason late.
TEST(EventTime, UnderDeadLetterALateRetryGoesToTheDeadLetterTopicInsteadOfCountingTwice) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Options o = TenSecondWindow("a");
  o.late_records = shard::LatePolicy::kDeadLetter;
  Instance a(kafka, o);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  const int64_t first_ms = kafka.clock().WallMs();
  Send(kafka, 0, 2);
  a.StepAndCommit();
  kafka.Advance(15s);  // past window + tolerance: the filters forget events 0 and 1
  Send(kafka, 2, 4);
  a.StepAndCommit();
  SendStamped(kafka, 0, first_ms + 2000);  // the retries, stamped 2 s after the originals
  SendStamped(kafka, 1, first_ms + 2000);
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 4);
  std::vector<std::string> late = DeadLettered(kafka, "late");
  std::sort(late.begin(), late.end());
  EXPECT_EQ(late, (std::vector<std::string>{"client/0", "client/1"}));
  EXPECT_EQ(a.View(0)->late_events + a.View(1)->late_events, 2u);
  EXPECT_EQ(a.View(0)->dead_lettered_by_reason[static_cast<size_t>(event::DlqReason::kLate)] +
                a.View(1)->dead_lettered_by_reason[static_cast<size_t>(event::DlqReason::kLate)],
            2u);
}

// SPEC §2.1 item 5 of the event-time issue: the shard's clock is in the snapshot. A
// shard restored from a snapshot with no batch after it judges a late retry by the
// clock its last owner had, not by a clock restarted at 0 (which would take the retry
// for on time and count it again).
TEST(EventTime, AShardRestoredFromItsSnapshotJudgesALateRetryByItsLastOwnersClock) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  Options o = TenSecondWindow("a");
  o.late_records = shard::LatePolicy::kDeadLetter;
  const int64_t first_ms = kafka.clock().WallMs();
  {
    Instance a(kafka, o);
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
    Send(kafka, 0, 2);
    a.StepAndCommit();
    kafka.Advance(70s);  // a snapshot is due a minute after the claim
    Send(kafka, 2, 4);
    a.StepAndCommit();
    a.Kill();
  }
  SendStamped(kafka, 0, first_ms + 2000);
  SendStamped(kafka, 1, first_ms + 2000);
  o.process = "b";
  Instance b(kafka, o);
  ASSERT_TRUE(RunUntil(kafka, {&b}, [&] { return b.RunsAll(kPartitions); })) << b.log();
  EXPECT_NE(b.log().find("restored 0 batches after snapshot"), std::string::npos)
      << "the restore reads the snapshot alone: " << b.log();
  b.StepAndCommit();
  EXPECT_GE(b.View(0)->event_clock_ms, first_ms + 70'000) << "the clock came with the snapshot";
  ExpectExactlyOnce(kafka, 4);
  EXPECT_EQ(DeadLettered(kafka, "late").size(), 2u);
}

// Issue 32, item 3: in a backlog every record is behind the wall clock, so the
// processor's own check of timestamps ahead does not bite. The guard that holds there
// is the broker's: a topic with message.timestamp.after.max.ms refuses a producer ten
// minutes ahead at append, and the backlog replayed half an hour later is exact.
TEST(EventTime, ATopicThatBoundsTimestampsAheadKeepsABacklogExactAndTheStartSaysSo) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.SetTimestampRules("events", "CreateTime", 1000);
  const int64_t ahead = kafka.clock().WallMs() + 10 * 60'000;
  Send(kafka, 0, 100);
  for (int32_t p = 0; p < kPartitions; ++p) {
    EXPECT_EQ(kafka
                  .ProduceForTest("events", p, "skewed/" + std::to_string(p),
                                  "{\"counter\":\"skewed\"}", {}, ahead)
                  .code,
              "INVALID_TIMESTAMP");
  }
  kafka.Advance(2s);
  Send(kafka, 0, 100);  // every client retries
  kafka.Advance(30min);
  Instance a(kafka, TenSecondWindow("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  a.StepAndCommit();
  ExpectExactlyOnce(kafka, 100);
  EXPECT_EQ(a.View(0)->late_events + a.View(1)->late_events, 0u);
  EXPECT_NE(a.log().find("refuses records stamped more than 1000 ms ahead"), std::string::npos)
      << a.log();
  EXPECT_NE(a.metrics().Render().find("oncecount_input_timestamps_guarded 1\n"), std::string::npos);
}

// Regression: the input topic's timestamp settings were judged once: a bound dropped
// while the service ran left oncecount_input_timestamps_guarded at 1 and said nothing.
TEST(EventTime, SaysSoWhenTheInputTopicsTimestampBoundIsDroppedWhileItRuns) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.SetTimestampRules("events", "CreateTime", 1000);
  Instance a(kafka, TenSecondWindow("a"));
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  ASSERT_NE(a.metrics().Render().find("oncecount_input_timestamps_guarded 1\n"), std::string::npos);
  kafka.SetTimestampRules("events", "CreateTime", std::nullopt);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    return a.metrics().Render().find("oncecount_input_timestamps_guarded 0\n") != std::string::npos;
  })) << a.log();
  EXPECT_NE(a.log().find("events's settings changed: "), std::string::npos) << a.log();
  EXPECT_NE(a.log().find("takes records stamped any time ahead"), std::string::npos) << a.log();
}

// The same backlog on a topic without the bound: the producer ten minutes ahead moves
// the shards' clocks, and the retries behind it are late. The start warns, naming the
// setting; the late retries are counted and, under dead_letter, not counted twice.
TEST(EventTime, WithoutABoundOnTimestampsAheadTheStartWarnsAndTheBacklogsLateRetriesAreCounted) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.SetTimestampRules("events", "CreateTime", std::nullopt);
  const int64_t ahead = kafka.clock().WallMs() + 10 * 60'000;
  Send(kafka, 0, 2);
  for (int32_t p = 0; p < kPartitions; ++p) {
    ASSERT_TRUE(kafka
                    .ProduceForTest("events", p, "skewed/" + std::to_string(p),
                                    "{\"counter\":\"skewed\"}", {}, ahead)
                    .ok());
  }
  kafka.Advance(2s);
  Send(kafka, 0, 2);  // the retries, behind the skewed records
  kafka.Advance(30min);
  Options o = TenSecondWindow("a");
  o.late_records = shard::LatePolicy::kDeadLetter;
  Instance a(kafka, o);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  a.StepAndCommit();
  std::map<std::string, int64_t> expected = testing::Expected(2);
  expected["skewed"] = kPartitions;
  EXPECT_EQ(testing::CountsInChangelog(kafka), expected) << "nothing counted twice";
  EXPECT_EQ(a.View(0)->late_events + a.View(1)->late_events, 2u);
  EXPECT_EQ(DeadLettered(kafka, "late").size(), 2u);
  EXPECT_NE(a.log().find("takes records stamped any time ahead"), std::string::npos) << a.log();
  EXPECT_NE(a.log().find("message.timestamp.after.max.ms"), std::string::npos);
  EXPECT_NE(a.metrics().Render().find("oncecount_input_timestamps_guarded 0\n"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::service
