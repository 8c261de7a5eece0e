// Small librdkafka helpers for tests: produce one message and read it back over
// real sockets. Test code only.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace oncecount::kafka::testing {

struct Message {
  std::string key;
  std::string value;
};

// Produces key/value to topic partition `partition` and waits for the ack.
inline std::string ProduceOne(const std::string& bootstrap, const std::string& topic, int partition,
                              const std::string& key, const std::string& value) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (producer == nullptr) return error;
  const rd_kafka_resp_err_t err =
      rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                        RD_KAFKA_V_KEY(key.data(), key.size()),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  std::string result = err ? rd_kafka_err2str(err) : "";
  if (!err && rd_kafka_flush(producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
    result = "flush timed out";
  rd_kafka_destroy(producer);
  return result;
}

// Reads the first message of topic/partition, waiting up to `timeout`.
inline std::optional<Message> ConsumeFirst(const std::string& bootstrap, const std::string& topic,
                                           int partition, std::chrono::milliseconds timeout) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  rd_kafka_conf_set(conf, "group.id", "oncecount-test-reader", error, sizeof error);
  rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
  if (consumer == nullptr) return std::nullopt;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic.c_str(), partition)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(consumer, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::optional<Message> found;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!found && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
    if (m == nullptr) continue;
    if (!m->err) {
      found = Message{std::string(static_cast<const char*>(m->key), m->key_len),
                      std::string(static_cast<const char*>(m->payload), m->len)};
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  return found;
}

struct Record {
  int partition = 0;
  std::optional<std::string> key;  // nullopt: no key
  std::string value;
};

// Reads every partition of `topic` from the beginning until `expected` records have
// arrived or `timeout` passes.
inline std::vector<Record> ConsumeAll(const std::string& bootstrap, const std::string& topic,
                                      int partitions, size_t expected,
                                      std::chrono::milliseconds timeout) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  rd_kafka_conf_set(conf, "group.id", "oncecount-test-reader", error, sizeof error);
  rd_kafka_t* consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
  std::vector<Record> records;
  if (consumer == nullptr) return records;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(consumer, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (records.size() < expected && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer, 100);
    if (m == nullptr) continue;
    if (!m->err) {
      Record r;
      r.partition = m->partition;
      if (m->key != nullptr) r.key = std::string(static_cast<const char*>(m->key), m->key_len);
      r.value = std::string(static_cast<const char*>(m->payload), m->len);
      records.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(consumer);
  rd_kafka_destroy(consumer);
  return records;
}

}  // namespace oncecount::kafka::testing
