// ProduceInOrder: writes records to the topic "events" of a cluster, in the order
// given, each to its partition, with an idempotent librdkafka producer, and waits
// until every one is acknowledged. For end-to-end tests that need records the
// workload injector does not make (bad input, chosen timestamps).
//
// Test code only.
#pragma once

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace oncecount::cmd {

struct ProducedRecord {
  int32_t partition = 0;
  std::optional<std::string> key;  // nullopt: no key
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  int64_t timestamp_ms = 0;  // 0: the producer's clock; -1: no timestamp
};

inline void ProduceInOrder(const std::string& bootstrap,
                           const std::vector<ProducedRecord>& records) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error);
  rd_kafka_conf_set(conf, "enable.idempotence", "true", error, sizeof error);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  ASSERT_NE(rk, nullptr) << error;
  for (const ProducedRecord& r : records) {
    rd_kafka_headers_t* headers = rd_kafka_headers_new(r.headers.size());
    for (const auto& [name, value] : r.headers) {
      rd_kafka_header_add(headers, name.c_str(), -1, value.data(),
                          static_cast<ssize_t>(value.size()));
    }
    const void* key = r.key ? r.key->data() : nullptr;
    const size_t key_size = r.key ? r.key->size() : 0;
    const rd_kafka_resp_err_t e =
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_PARTITION(r.partition),
                          RD_KAFKA_V_KEY(key, key_size),
                          RD_KAFKA_V_VALUE(const_cast<char*>(r.value.data()), r.value.size()),
                          RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_TIMESTAMP(r.timestamp_ms),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (e) rd_kafka_headers_destroy(headers);
    ASSERT_EQ(e, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(e);
  }
  EXPECT_EQ(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

}  // namespace oncecount::cmd
