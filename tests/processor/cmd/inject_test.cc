// `inject` against the embedded cluster over real sockets: every message arrives,
// retries land on their event's partition, and the truth matches the topic.
#include "processor/cmd/inject.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "processor/kafka/embedded_cluster.h"
#include "tests/processor/kafka/kafka_test_client.h"

namespace oncecount::cmd {
namespace {

using namespace std::chrono_literals;

TEST(Inject, ProducesTheWorkloadAndWritesItsTruth) {
  auto started = kafka::EmbeddedCluster::Start(1, {{"events", 4}});
  ASSERT_TRUE(started.ok());
  const auto& cluster = started.value();

  InjectOptions o;
  o.bootstrap = cluster->bootstrap_servers();
  o.workload.events = 800;
  o.workload.duplicate_rate = 0.2;
  o.workload.counters = 13;
  o.workload.max_retry_delay_ms = 100;
  o.workload.malformed_rate = 0.03;
  o.truth_file = ::testing::TempDir() + "inject-truth-" + std::to_string(getpid()) + ".json";
  std::ostringstream log;
  ASSERT_EQ(RunInject(o, log), 0) << log.str();

  InjectWorkload expected(o.workload);  // same seed: the same stream and truth
  for (int64_t now = 0; !expected.Done(); now += 10) {
    while (expected.Next(now, true)) {
    }
  }
  const Truth& truth = expected.truth();
  std::ifstream file(o.truth_file);
  std::string written((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_EQ(written, truth.ToJson() + "\n");

  const size_t total = truth.events + truth.duplicates + truth.malformed;
  const auto records = kafka::testing::ConsumeAll(o.bootstrap, "events", 4, total, 30s);
  ASSERT_EQ(records.size(), total);
  std::map<std::string, std::set<int>> partitions_of_key;
  std::map<std::string, int> copies;
  for (const auto& r : records) {
    if (!r.key || r.key->rfind("client-", 0) != 0) continue;  // malformed ones
    partitions_of_key[*r.key].insert(r.partition);
    ++copies[*r.key];
  }
  EXPECT_EQ(copies.size(), truth.events);
  size_t extra = 0;
  for (const auto& [key, n] : copies) extra += static_cast<size_t>(n - 1);
  EXPECT_EQ(extra, truth.duplicates);
  for (const auto& [key, parts] : partitions_of_key) {
    EXPECT_EQ(parts.size(), 1u) << key << " landed on more than one partition";
  }
}

TEST(Inject, RejectsBadOptionsNamingThem) {
  InjectOptions o;
  std::ostringstream log;
  EXPECT_EQ(RunInject(o, log), 2);
  EXPECT_NE(log.str().find("--bootstrap"), std::string::npos);
  o.bootstrap = "127.0.0.1:1";
  o.workload.duplicate_rate = 2;
  log.str("");
  EXPECT_EQ(RunInject(o, log), 2);
  EXPECT_NE(log.str().find("--duplicate-rate"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::cmd
