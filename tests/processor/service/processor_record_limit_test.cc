// Processor under a broker's size limits, on the StrictKafka double.
//
// Record size (max.message.bytes): the double refuses an oversized record as a real
// broker does (the transaction must abort). No input may make a commit fail
// forever: a commit of many distinct counters is cut into batches under the limit,
// whether or not the cluster tells the limit, and a dead letter near the limit is
// trimmed to fit.
//
// Retention by size (retention.bytes): the double drops a changelog partition's
// oldest records as the embedded cluster does. Snapshots come often enough that a
// complete one and every batch after it always remain: a restore never fails for
// want of one.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "processor/changelog/changelog_record.h"
#include "processor/service/processor.h"
#include "processor/service/restore.h"
#include "tests/testing/strict_instance.h"

namespace oncecount::service {
namespace {

using namespace std::chrono_literals;
using testing::ExpectAllInputCommitted;
using testing::ExpectEveryClaimTookANewEpoch;
using testing::NewCluster;
using testing::RunFor;
using testing::RunUntil;
using testing::StrictKafka;
using Instance = testing::StrictInstance;

constexpr int32_t kPartitions = testing::kServicePartitions;
constexpr size_t kChangelogLimit = 64 * 1024;

// Counter i's name: long, so that a few hundred of them outgrow the limit.
std::string WideCounter(int i) {
  std::string name = "campaign-" + std::to_string(i) + "-creative-";
  name.resize(200, 'x');
  return name;
}

// Events [from, to), each adding 1 to its own counter.
void SendWide(StrictKafka& kafka, int from, int to) {
  for (int i = from; i < to; ++i) {
    const std::string value = "{\"counter\":\"" + WideCounter(i) + "\"}";
    ASSERT_TRUE(
        kafka.ProduceForTest("events", i % kPartitions, "wide/" + std::to_string(i), value).ok());
  }
}

bool AllInputCommitted(StrictKafka& kafka) {
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    if (kafka.CommittedOffset("oncecount", "events", p.value()) !=
        kafka.HighWatermark("events", p.value())) {
      return false;
    }
  }
  return true;
}

// What a cold restore of every shard gives; a restore error in `error`.
std::map<std::string, int64_t> RestoredCounters(StrictKafka& kafka, std::string* error);

std::map<std::string, int64_t> RestoredCounters(StrictKafka& kafka) {
  std::string error;
  std::map<std::string, int64_t> counts = RestoredCounters(kafka, &error);
  EXPECT_EQ(error, "");
  return counts;
}

size_t LargestChangelogRecord(StrictKafka& kafka) {
  size_t largest = 0;
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    for (const auto& entry : kafka.Entries("events.changelog", p.value())) {
      largest = std::max(largest, entry.value.value_or("").size());
    }
  }
  return largest;
}

std::map<std::string, int64_t> RestoredCounters(StrictKafka& kafka, std::string* error) {
  std::map<std::string, int64_t> counts;
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    auto restored = RestoreCold(p, kafka.CommittedValues("events.changelog", p.value()),
                                testing::TestDedup(), ClaimDraw{1, filter::IdHashKey{1}});
    if (!restored.ok()) {
      *error = "shard " + std::to_string(p.value()) + ": " + restored.message();
      continue;
    }
    for (const auto& c : restored.value().state->counters()) counts[c.name] += c.value;
  }
  return counts;
}

// Whether the cluster tells the changelog's limit (DescribeConfigs), or only
// refuses records above it.
class RecordLimit : public ::testing::TestWithParam<bool> {};

TEST_P(RecordLimit, ACommitOfManyDistinctCountersIsCutUnderTheLimitAndNeverFailsForever) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  const bool described = GetParam();
  kafka.SetMaxMessageBytes("events.changelog", kChangelogLimit, described);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  // 1,500 counters of 200 bytes per shard in one commit: about 330 KB of batch.
  SendWide(kafka, 0, 3000);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    a.Commit();
    return AllInputCommitted(kafka);
  })) << a.log();

  const std::map<std::string, int64_t> counts = RestoredCounters(kafka);
  EXPECT_EQ(counts.size(), 3000u);
  for (int i = 0; i < 3000; ++i) ASSERT_EQ(counts.at(WideCounter(i)), 1) << i;
  EXPECT_LE(LargestChangelogRecord(kafka), kChangelogLimit);
  ExpectEveryClaimTookANewEpoch(kafka);
  // Told the limit, the instance never tries a record above it; not told, one
  // refusal teaches it.
  EXPECT_EQ(a.log().find("too large") != std::string::npos, !described) << a.log();
  ASSERT_NE(a.View(0), nullptr);
  EXPECT_EQ(a.View(0)->counters->size() + a.View(1)->counters->size(), 3000u);
}

INSTANTIATE_TEST_SUITE_P(, RecordLimit, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& told) {
                           return told.param ? "ToldByTheCluster" : "LearntFromARefusal";
                         });

TEST(RecordLimitOfDeadLetters, AMalformedMessageNearTheLimitIsTrimmedToFitAndTheServiceGoesOn) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  kafka.SetMaxMessageBytes("events.dlq", 16 * 1024);
  Instance a(kafka, "a");
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  const std::string huge(100 * 1024, '{');  // not JSON, and larger than the DLQ allows
  ASSERT_TRUE(
      kafka.ProduceForTest("events", 0, "big/1", huge, {{"trace", std::string(1000, 't')}}).ok());
  testing::Send(kafka, 0, 10);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
    a.Commit();
    return AllInputCommitted(kafka);
  })) << a.log();

  const std::vector<StrictKafka::StoredEntry> dlq = kafka.Entries("events.dlq", 0);
  std::vector<const StrictKafka::StoredEntry*> letters;
  for (const auto& e : dlq) {
    if (e.state == StrictKafka::StoredEntry::kCommitted) letters.push_back(&e);
  }
  ASSERT_EQ(letters.size(), 1u);
  EXPECT_EQ(letters[0]->key, "big/1");
  EXPECT_LT(letters[0]->value.value_or("").size(), 16u * 1024);
  EXPECT_EQ(letters[0]->value.value_or("").substr(0, 10), huge.substr(0, 10))
      << "what fits of the original value is kept";
  std::map<std::string, std::string> headers;
  for (const kafka::Header& h : letters[0]->headers) headers[h.name] = h.value.value_or("");
  EXPECT_EQ(headers["oncecount.error"], "invalid_json");
  EXPECT_EQ(headers["oncecount.truncated"], "key=5 value=102400 headers=1");
  EXPECT_EQ(headers.count("trace"), 0u) << "the original headers go first";
  EXPECT_EQ(RestoredCounters(kafka), testing::Expected(10));
  ExpectAllInputCommitted(kafka);
}

}  // namespace
}  // namespace oncecount::service

namespace oncecount::service {
namespace {

constexpr size_t kChangelogRetention = 256 * 1024;

// How the instance learns the changelog's retention: the cluster tells it
// (DescribeConfigs) before the shards start or only after they run (its answer comes
// in the background), or the instance is configured with it (the embedded cluster
// cannot say).
enum class RetentionLearnt { kToldAtStart, kToldOnceTheShardsRun, kConfigured };

class SnapshotsUnderRetention : public ::testing::TestWithParam<RetentionLearnt> {};

TEST_P(SnapshotsUnderRetention, AlwaysLeaveACompleteSnapshotAndTheBatchesAfterItInTheChangelog) {
  std::unique_ptr<StrictKafka> holder;
  StrictKafka& kafka = NewCluster(holder);
  const RetentionLearnt learnt = GetParam();
  kafka.SetRetentionBytes("events.changelog", kChangelogRetention,
                          learnt != RetentionLearnt::kConfigured);
  testing::StrictInstanceOptions options;
  options.process = "a";
  if (learnt == RetentionLearnt::kConfigured) {
    options.changelog_retention_bytes = kChangelogRetention;
  }
  kafka.HoldSettingsAnswers(learnt == RetentionLearnt::kToldOnceTheShardsRun);
  Instance a(kafka, options);
  ASSERT_TRUE(RunUntil(kafka, {&a}, [&] { return a.RunsAll(kPartitions); })) << a.log();
  kafka.HoldSettingsAnswers(false);
  RunFor(kafka, {&a}, 2s);  // the instance asks again each second
  // 100 new counters of 200 bytes a commit: about 11 KB of batch per shard, so that
  // 60 commits write two and a half times what a changelog partition keeps.
  constexpr int kCommits = 60, kPerCommit = 100;
  for (int c = 0; c < kCommits; ++c) {
    SendWide(kafka, c * kPerCommit, (c + 1) * kPerCommit);
    ASSERT_TRUE(RunUntil(kafka, {&a}, [&] {
      a.Commit();
      return AllInputCommitted(kafka);
    })) << a.log();
    std::string error;
    const std::map<std::string, int64_t> counts = RestoredCounters(kafka, &error);
    ASSERT_EQ(error, "") << "after commit " << c;
    ASSERT_EQ(counts.size(), static_cast<size_t>((c + 1) * kPerCommit)) << "after commit " << c;
  }
  for (base::Partition p : base::AllPartitions(kPartitions)) {
    EXPECT_GT(kafka.LogStart("events.changelog", p.value()), 0)
        << "retention removed nothing: no test";
  }
  EXPECT_EQ(a.log().find("too few for two snapshots"), std::string::npos) << a.log();
}

INSTANTIATE_TEST_SUITE_P(, SnapshotsUnderRetention,
                         ::testing::Values(RetentionLearnt::kToldAtStart,
                                           RetentionLearnt::kToldOnceTheShardsRun,
                                           RetentionLearnt::kConfigured),
                         [](const ::testing::TestParamInfo<RetentionLearnt>& learnt) {
                           switch (learnt.param) {
                             case RetentionLearnt::kToldAtStart:
                               return "ToldByTheCluster";
                             case RetentionLearnt::kToldOnceTheShardsRun:
                               return "ToldByTheClusterOnceTheShardsRun";
                             case RetentionLearnt::kConfigured:
                               return "Configured";
                           }
                           return "";
                         });

}  // namespace
}  // namespace oncecount::service
