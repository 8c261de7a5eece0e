// RequireTopics and AwaitTopics over the strict Kafka double, on its simulated clock.
#include "processor/kafka/topics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/testing/strict_kafka.h"

namespace oncecount::kafka {
namespace {

using namespace std::chrono_literals;

const std::vector<RequiredTopic> kTopics = {{"events", "create it"}, {"events.changelog", ""}};

TEST(RequireTopics, GivesThePartitionCountOfEveryTopic) {
  testing::StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("events", 4).ok());
  ASSERT_TRUE(kafka.CreateTopic("events.changelog", 4).ok());
  ASSERT_TRUE(kafka.CreateTopic("other", 2).ok());
  auto clients = kafka.ClientsFor("a");
  auto counts = RequireTopics(*clients, kTopics, 1s);
  ASSERT_TRUE(counts) << counts.error();
  EXPECT_EQ(counts.value(), (std::map<std::string, int>{{"events", 4}, {"events.changelog", 4}}));
}

TEST(RequireTopics, NamesTheFirstMissingTopicWithItsHint) {
  testing::StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("events.changelog", 4).ok());
  auto clients = kafka.ClientsFor("a");
  auto counts = RequireTopics(*clients, kTopics, 1s);
  ASSERT_FALSE(counts);
  EXPECT_EQ(counts.code(), base::Errc::kMissingTopic);
  EXPECT_EQ(counts.message().rfind("topic events does not exist; create it (", 0), 0)
      << counts.error();
}

// Kafka leaves a topic the principal may not describe out of a list of every topic:
// the error says that it may be hidden, not only missing, and what to grant.
TEST(RequireTopics, SaysATopicItCannotSeeMayBeHiddenByAnAcl) {
  testing::StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("events", 4).ok());
  ASSERT_TRUE(kafka.CreateTopic("events.changelog", 4).ok());
  kafka.DenyDescribe("events");
  auto clients = kafka.ClientsFor("a");
  auto counts = RequireTopics(*clients, kTopics, 1s);
  ASSERT_FALSE(counts);
  EXPECT_EQ(counts.code(), base::Errc::kMissingTopic);
  EXPECT_NE(counts.message().find("topic events does not exist; create it (or this instance's "
                                  "principal may not Describe it"),
            std::string::npos)
      << counts.error();
}

TEST(AwaitTopics, WaitsWithADoublingBackOffUntilTheMissingTopicIsCreated) {
  testing::StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("events", 4).ok());
  auto clients = kafka.ClientsFor("a");
  std::vector<std::string> lines;
  std::vector<int64_t> logged_at_ms;
  base::StartWait wait;
  wait.clock = &kafka.clock();
  wait.first_backoff = 1000ms;
  wait.max_backoff = 4000ms;
  wait.log = [&](const std::string& line) {
    lines.push_back(line);
    logged_at_ms.push_back(kafka.clock().SteadyMs());
    // The job that creates the topics finishes during the fifth wait.
    if (lines.size() == 5) {
      EXPECT_TRUE(kafka.CreateTopic("events.changelog", 4).ok());
    }
  };
  const int64_t start_ms = kafka.clock().SteadyMs();
  auto counts = AwaitTopics(*clients, kTopics, 1s, wait);
  ASSERT_TRUE(counts) << counts.error();
  EXPECT_EQ(counts.value().at("events.changelog"), 4);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[0].find("waiting for topic events.changelog"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("asking again in 1000 ms"), std::string::npos) << lines[0];
  // Waits of 1, 2, 4, 4 s between the looks (capped at max_backoff), then the last.
  std::vector<int64_t> gaps;
  for (size_t i = 1; i < logged_at_ms.size(); ++i) {
    gaps.push_back(logged_at_ms[i] - logged_at_ms[i - 1]);
  }
  EXPECT_EQ(gaps, (std::vector<int64_t>{1000, 2000, 4000, 4000}));
  EXPECT_EQ(kafka.clock().SteadyMs() - start_ms, 1000 + 2000 + 4000 + 4000 + 4000);
}

TEST(AwaitTopics, GivesUpWithinAQuarterSecondOfAStopRequest) {
  testing::StrictKafka kafka;
  auto clients = kafka.ClientsFor("a");
  base::StartWait wait;
  wait.clock = &kafka.clock();
  wait.first_backoff = 30000ms;
  const int64_t start_ms = kafka.clock().SteadyMs();
  wait.stop_requested = [&] { return kafka.clock().SteadyMs() - start_ms >= 1100; };
  auto counts = AwaitTopics(*clients, kTopics, 1s, wait);
  ASSERT_FALSE(counts);
  EXPECT_EQ(counts.code(), base::Errc::kStopped);
  EXPECT_NE(counts.message().find("topic events does not exist; create it"), std::string::npos)
      << counts.error();
  EXPECT_LE(kafka.clock().SteadyMs() - start_ms, 1100 + 250);
}

TEST(AwaitTopics, KeepsAskingWhileTheClusterCannotBeReached) {
  testing::StrictKafka kafka;
  ASSERT_TRUE(kafka.CreateTopic("events", 4).ok());
  ASSERT_TRUE(kafka.CreateTopic("events.changelog", 4).ok());
  auto clients = kafka.ClientsFor("a");
  kafka.InjectError(testing::StrictKafka::Call::kPartitionCounts,
                    {ErrorKind::kRetriable, "_TRANSPORT", "the cluster cannot be reached"}, 2);
  std::vector<std::string> lines;
  base::StartWait wait;
  wait.clock = &kafka.clock();
  wait.log = [&](const std::string& line) { lines.push_back(line); };
  const int64_t start_ms = kafka.clock().SteadyMs();
  auto counts = AwaitTopics(*clients, kTopics, 1s, wait);
  ASSERT_TRUE(counts) << counts.error();
  EXPECT_EQ(counts.value().at("events"), 4);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("cannot ask the cluster which topics exist"), std::string::npos)
      << lines[0];
  EXPECT_EQ(kafka.clock().SteadyMs() - start_ms, 1000 + 2000);
}

}  // namespace
}  // namespace oncecount::kafka
