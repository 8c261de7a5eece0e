#include "processor/kafka/embedded_cluster.h"

#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cstdlib>
#include <set>

namespace oncecount::kafka {
namespace {

// The ports of "127.0.0.1:port,127.0.0.1:port,...".
std::set<int> Ports(const std::string& bootstrap_servers) {
  std::set<int> ports;
  size_t at = 0;
  while (at < bootstrap_servers.size()) {
    size_t end = bootstrap_servers.find(',', at);
    if (end == std::string::npos) end = bootstrap_servers.size();
    const size_t colon = bootstrap_servers.rfind(':', end);
    if (colon != std::string::npos && colon >= at) {
      ports.insert(std::atoi(bootstrap_servers.substr(colon + 1, end - colon - 1).c_str()));
    }
    at = end + 1;
  }
  return ports;
}

// The mock brokers write each response in pieces with Nagle's algorithm on, so a
// response that follows an unacknowledged one waits for the client's delayed ACK
// (about 40 ms): every transaction commit took 50 ms. Real brokers set TCP_NODELAY.
// The mock has no setting for it, but connections inherit the option from their
// listening socket, so set it there: on every listening socket of this process
// bound to one of the brokers' ports.
void DisableNagleOnListeners(const std::set<int>& ports) {
  DIR* fds = opendir("/proc/self/fd");
  if (fds == nullptr) return;
  while (const dirent* entry = readdir(fds)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2 || fd == dirfd(fds)) continue;
    int listening = 0;
    socklen_t size = sizeof listening;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening) continue;
    sockaddr_in address{};
    socklen_t address_size = sizeof address;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&address), &address_size) != 0 ||
        address.sin_family != AF_INET || !ports.contains(ntohs(address.sin_port))) {
      continue;
    }
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  }
  closedir(fds);
}

}  // namespace

base::Result<std::unique_ptr<EmbeddedCluster>> EmbeddedCluster::Start(
    int brokers, const std::vector<TopicSpec>& topics) {
  if (brokers < 1 || brokers > 16) {
    return base::InvalidArgument("brokers must be in 1..16 (got " + std::to_string(brokers) + ")");
  }
  char error[512] = {0};
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The hosting handle never talks to a broker; keep it quiet.
  if (rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return base::KafkaFailure(std::string("embedded cluster: ") + error);
  }
  rd_kafka_t* handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (handle == nullptr) {
    rd_kafka_conf_destroy(conf);
    return base::KafkaFailure(std::string("embedded cluster: cannot create the hosting client: ") +
                              error);
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(handle, brokers);
  if (mock == nullptr) {
    rd_kafka_destroy(handle);
    return base::KafkaFailure("embedded cluster: cannot start the mock brokers");
  }
  std::unique_ptr<EmbeddedCluster> cluster(new EmbeddedCluster(handle, mock));
  DisableNagleOnListeners(Ports(cluster->bootstrap_servers()));
  for (const TopicSpec& topic : topics) {
    if (base::Status created = cluster->CreateTopic(topic); !created) {
      return std::move(created).error();
    }
  }
  return cluster;
}

EmbeddedCluster::EmbeddedCluster(rd_kafka_s* handle, rd_kafka_mock_cluster_s* mock)
    : handle_(handle), mock_(mock), bootstrap_servers_(rd_kafka_mock_cluster_bootstraps(mock)) {}

EmbeddedCluster::~EmbeddedCluster() {
  rd_kafka_mock_cluster_destroy(mock_);
  rd_kafka_destroy(handle_);
}

base::Status EmbeddedCluster::CreateTopic(const TopicSpec& topic) {
  if (topic.name.empty()) return base::InvalidArgument("topic names must not be empty");
  if (topic.partitions < 1 || topic.partitions > 1024) {
    return base::InvalidArgument("partitions must be in 1..1024 (got " +
                                 std::to_string(topic.partitions) + ")");
  }
  const rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(mock_, topic.name.c_str(), topic.partitions, 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return base::KafkaFailure("cannot create topic " + topic.name + ": " + rd_kafka_err2str(err));
  }
  return {};
}

}  // namespace oncecount::kafka
