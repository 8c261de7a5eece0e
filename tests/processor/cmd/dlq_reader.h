// ReadDlq: every committed record of the dead-letter topic `events.dlq`, with its
// key, value and headers, read from the beginning of each partition to its end.
//
// Test code only.
#pragma once

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

namespace oncecount::cmd {

struct DlqRecord {
  int32_t partition = -1;
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
};

inline std::vector<DlqRecord> ReadDlq(const std::string& bootstrap, int partitions = 8) {
  using namespace std::chrono_literals;
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  rd_kafka_conf_set(conf, "group.id", "dlq-reader", error, sizeof error);
  rd_kafka_conf_set(conf, "isolation.level", "read_committed", error, sizeof error);
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", error, sizeof error);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    rd_kafka_topic_partition_list_add(parts, "events.dlq", p)->offset = RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_assign(rk, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::vector<DlqRecord> records;
  int at_end = 0;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (at_end < partitions && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end;
    } else if (!m->err) {
      DlqRecord r;
      r.partition = m->partition;
      if (m->key) r.key.assign(static_cast<const char*>(m->key), m->key_len);
      if (m->payload) r.value.assign(static_cast<const char*>(m->payload), m->len);
      rd_kafka_headers_t* headers = nullptr;
      if (rd_kafka_message_headers(m, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name;
        const void* value;
        size_t size;
        for (size_t i = 0; !rd_kafka_header_get_all(headers, i, &name, &value, &size); ++i) {
          r.headers[name] = std::string(static_cast<const char*>(value), size);
        }
      }
      records.push_back(std::move(r));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return records;
}

}  // namespace oncecount::cmd
