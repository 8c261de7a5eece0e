// EmbeddedCluster: an in-process Kafka cluster — librdkafka's mock cluster — that
// listens on loopback, for `oncecount dev-kafka`, `oncecount demo` and the tests.
//
// It speaks the real protocol over TCP, so any Kafka client can use its bootstrap
// servers. Its limits (DESIGN-NOTES §4): everything lives in this process's memory,
// a partition keeps only its newest ~100k messages or 5 MB, and transactions are
// accepted but barely enforced. A fetch gets one record batch per partition, found by
// walking the partition's batches from its oldest (librdkafka 2.0.2's
// rd_kafka_mock_msgset_find has no index): reading a partition written in n batches
// costs O(n^2), so bulk loads are written in full batches (cmd/workload_producer.h).
// Never use it for data you want to keep. Its brokers'
// connections have Nagle's algorithm off, as real brokers' do (the mock leaves it on,
// which made every transaction commit wait ~40 ms for a delayed ACK).
//
// Thread-safety: create and destroy on one thread; librdkafka runs the brokers on
// its own internal threads. mock() is for fault injection in tests.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "processor/base/result.h"

struct rd_kafka_s;
struct rd_kafka_mock_cluster_s;

namespace oncecount::kafka {

struct TopicSpec {
  std::string name;
  int partitions = 1;
};

class EmbeddedCluster {
 public:
  // What a partition keeps (librdkafka's mock cluster, fixed): its newest records up
  // to this many bytes, or this many records.
  static constexpr size_t kPartitionRetentionBytes = size_t{5} << 20;
  static constexpr size_t kPartitionRetentionRecords = 100000;

  // Starts `brokers` brokers (1..16) and creates `topics`. Errors say what failed.
  static base::Result<std::unique_ptr<EmbeddedCluster>> Start(int brokers,
                                                              const std::vector<TopicSpec>& topics);

  ~EmbeddedCluster();
  EmbeddedCluster(const EmbeddedCluster&) = delete;
  EmbeddedCluster& operator=(const EmbeddedCluster&) = delete;

  // "127.0.0.1:port,..." — the bootstrap.servers value for clients.
  const std::string& bootstrap_servers() const { return bootstrap_servers_; }

  // Ok, or the broker's error.
  base::Status CreateTopic(const TopicSpec& topic);

  rd_kafka_mock_cluster_s* mock() { return mock_; }

 private:
  EmbeddedCluster(rd_kafka_s* handle, rd_kafka_mock_cluster_s* mock);

  rd_kafka_s* handle_ = nullptr;  // hosts the mock cluster
  rd_kafka_mock_cluster_s* mock_ = nullptr;
  std::string bootstrap_servers_;
};

}  // namespace oncecount::kafka
