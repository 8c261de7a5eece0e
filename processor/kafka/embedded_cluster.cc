#include "processor/kafka/embedded_cluster.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

namespace oncecount::kafka {

std::variant<std::unique_ptr<EmbeddedCluster>, std::string> EmbeddedCluster::Start(
    int brokers, const std::vector<TopicSpec>& topics) {
  if (brokers < 1 || brokers > 16) {
    return "brokers must be in 1..16 (got " + std::to_string(brokers) + ")";
  }
  char error[512] = {0};
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The hosting handle never talks to a broker; keep it quiet.
  if (rd_kafka_conf_set(conf, "log_level", "3", error, sizeof error) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return std::string("embedded cluster: ") + error;
  }
  rd_kafka_t* handle = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (handle == nullptr) {
    rd_kafka_conf_destroy(conf);
    return std::string("embedded cluster: cannot create the hosting client: ") + error;
  }
  rd_kafka_mock_cluster_t* mock = rd_kafka_mock_cluster_new(handle, brokers);
  if (mock == nullptr) {
    rd_kafka_destroy(handle);
    return "embedded cluster: cannot start the mock brokers";
  }
  std::unique_ptr<EmbeddedCluster> cluster(new EmbeddedCluster(handle, mock));
  for (const TopicSpec& topic : topics) {
    const std::string failed = cluster->CreateTopic(topic);
    if (!failed.empty()) return failed;
  }
  return cluster;
}

EmbeddedCluster::EmbeddedCluster(rd_kafka_s* handle, rd_kafka_mock_cluster_s* mock)
    : handle_(handle), mock_(mock), bootstrap_servers_(rd_kafka_mock_cluster_bootstraps(mock)) {}

EmbeddedCluster::~EmbeddedCluster() {
  rd_kafka_mock_cluster_destroy(mock_);
  rd_kafka_destroy(handle_);
}

std::string EmbeddedCluster::CreateTopic(const TopicSpec& topic) {
  if (topic.name.empty()) return "topic names must not be empty";
  if (topic.partitions < 1 || topic.partitions > 1024) {
    return "partitions must be in 1..1024 (got " + std::to_string(topic.partitions) + ")";
  }
  const rd_kafka_resp_err_t err =
      rd_kafka_mock_topic_create(mock_, topic.name.c_str(), topic.partitions, 1);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return "cannot create topic " + topic.name + ": " + rd_kafka_err2str(err);
  }
  return {};
}

}  // namespace oncecount::kafka
