#include "processor/kafka/embedded_cluster.h"

#include <gtest/gtest.h>

#include "tests/processor/kafka/kafka_test_client.h"

namespace oncecount::kafka {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EmbeddedCluster> Started(int brokers, const std::vector<TopicSpec>& topics) {
  auto started = EmbeddedCluster::Start(brokers, topics);
  if (auto* error = std::get_if<std::string>(&started)) {
    ADD_FAILURE() << *error;
    return nullptr;
  }
  return std::move(std::get<std::unique_ptr<EmbeddedCluster>>(started));
}

TEST(EmbeddedCluster, CarriesAMessageFromAProducerToAConsumerOverLoopback) {
  auto cluster = Started(1, {{"events", 4}});
  ASSERT_NE(cluster, nullptr);
  EXPECT_EQ(cluster->bootstrap_servers().rfind("127.0.0.1:", 0), 0u)
      << cluster->bootstrap_servers();
  ASSERT_EQ(testing::ProduceOne(cluster->bootstrap_servers(), "events", 3, "client-1/1",
                                R"({"counter":"likes"})"),
            "");
  const auto message = testing::ConsumeFirst(cluster->bootstrap_servers(), "events", 3, 15s);
  ASSERT_TRUE(message.has_value());
  EXPECT_EQ(message->key, "client-1/1");
  EXPECT_EQ(message->value, R"({"counter":"likes"})");
}

TEST(EmbeddedCluster, ListsOneBootstrapServerPerBroker) {
  auto cluster = Started(3, {});
  ASSERT_NE(cluster, nullptr);
  const std::string& servers = cluster->bootstrap_servers();
  EXPECT_EQ(std::count(servers.begin(), servers.end(), ','), 2) << servers;
}

TEST(EmbeddedCluster, RejectsBadBrokerAndPartitionCounts) {
  EXPECT_TRUE(std::holds_alternative<std::string>(EmbeddedCluster::Start(0, {})));
  EXPECT_TRUE(std::holds_alternative<std::string>(EmbeddedCluster::Start(17, {})));
  auto bad_topic = EmbeddedCluster::Start(1, {{"t", 0}});
  ASSERT_TRUE(std::holds_alternative<std::string>(bad_topic));
  EXPECT_NE(std::get<std::string>(bad_topic).find("partitions"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::kafka
