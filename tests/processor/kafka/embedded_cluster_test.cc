#include "processor/kafka/embedded_cluster.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdlib>

#include "tests/processor/kafka/kafka_test_client.h"

namespace oncecount::kafka {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EmbeddedCluster> Started(int brokers, const std::vector<TopicSpec>& topics) {
  auto started = EmbeddedCluster::Start(brokers, topics);
  if (auto* error = (started.ok() ? nullptr : &started.message())) {
    ADD_FAILURE() << *error;
    return nullptr;
  }
  return std::move(started).value();
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

// The TCP_NODELAY option of every connection this process accepted on `port`.
std::vector<int> NoDelayOfAcceptedConnections(int port) {
  std::vector<int> options;
  DIR* fds = opendir("/proc/self/fd");
  while (const dirent* entry = readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    int listening = 1;
    socklen_t size = sizeof listening;
    if (fd <= 2 || getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || listening) {
      continue;
    }
    sockaddr_in local{};
    socklen_t local_size = sizeof local;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size) != 0 ||
        local.sin_family != AF_INET || ntohs(local.sin_port) != port) {
      continue;
    }
    int nodelay = -1;
    size = sizeof nodelay;
    getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size);
    options.push_back(nodelay);
  }
  closedir(fds);
  return options;
}

// Nagle's algorithm on the brokers' side made every transaction commit wait ~40 ms
// for a delayed ACK; real brokers turn it off, and so does the embedded cluster.
TEST(EmbeddedCluster, AcceptsConnectionsWithNagleOff) {
  auto cluster = Started(1, {{"events", 1}});
  ASSERT_NE(cluster, nullptr);
  const std::string& servers = cluster->bootstrap_servers();
  const int port = std::atoi(servers.substr(servers.rfind(':') + 1).c_str());
  // A producer that stays connected while we look at the broker's side.
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", servers.c_str(), error, sizeof error),
            RD_KAFKA_CONF_OK);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  ASSERT_NE(producer, nullptr) << error;
  ASSERT_EQ(rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_VALUE((void*)"v", 1),
                              RD_KAFKA_V_END),
            RD_KAFKA_RESP_ERR_NO_ERROR);
  ASSERT_EQ(rd_kafka_flush(producer, 15000), RD_KAFKA_RESP_ERR_NO_ERROR);
  const std::vector<int> options = NoDelayOfAcceptedConnections(port);
  ASSERT_FALSE(options.empty()) << "no accepted connection found on port " << port;
  for (int nodelay : options) EXPECT_EQ(nodelay, 1);
  rd_kafka_destroy(producer);
}

TEST(EmbeddedCluster, ListsOneBootstrapServerPerBroker) {
  auto cluster = Started(3, {});
  ASSERT_NE(cluster, nullptr);
  const std::string& servers = cluster->bootstrap_servers();
  EXPECT_EQ(std::count(servers.begin(), servers.end(), ','), 2) << servers;
}

TEST(EmbeddedCluster, RejectsBadBrokerAndPartitionCounts) {
  EXPECT_FALSE((EmbeddedCluster::Start(0, {})).ok());
  EXPECT_FALSE((EmbeddedCluster::Start(17, {})).ok());
  auto bad_topic = EmbeddedCluster::Start(1, {{"t", 0}});
  ASSERT_FALSE(bad_topic.ok());
  EXPECT_NE(bad_topic.message().find("partitions"), std::string::npos);
}

}  // namespace
}  // namespace oncecount::kafka
