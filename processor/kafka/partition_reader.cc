#include "processor/kafka/partition_reader.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <memory>
#include <set>

namespace oncecount::kafka {
namespace {

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const {
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
  }
};
using ConsumerHandle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

}  // namespace

std::variant<PartitionRecords, std::string> ReadPartitions(
    const Settings& connection, const std::map<std::string, std::string>& user_properties,
    const std::string& topic, const std::vector<int32_t>& partitions,
    std::chrono::milliseconds timeout, const std::map<int32_t, int64_t>& start) {
  PartitionRecords records;
  if (partitions.empty()) return records;
  Settings pinned = {{"enable.partition.eof", "true"},
                     {"isolation.level", "read_committed"},
                     {"enable.auto.commit", "false"},
                     {"enable.auto.offset.store", "false"},
                     {"group.id", "oncecount-changelog-reader"}};
  auto made = MakeClientConfig(connection, user_properties, pinned);
  if (auto* error = std::get_if<std::string>(&made)) return *error;
  char error[512];
  rd_kafka_conf_t* conf = std::get<rd_kafka_conf_t*>(made);
  ConsumerHandle rk(rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error));
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    return std::string("cannot create the changelog reader: ") + error;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::set<int32_t> open;
  rd_kafka_topic_partition_list_t* list =
      rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()));
  for (int32_t p : partitions) {
    records[p];
    int64_t low = 0, high = 0;
    const rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
        rk.get(), topic.c_str(), p, &low, &high, static_cast<int>(timeout.count()));
    if (e) {
      rd_kafka_topic_partition_list_destroy(list);
      return "cannot read the end of " + topic + "/" + std::to_string(p) + ": " +
             rd_kafka_err2str(e);
    }
    const auto from = start.find(p);
    const int64_t first = from == start.end() ? low : std::max(low, from->second);
    if (high > first) {
      rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = first;
      open.insert(p);
    }
  }
  const rd_kafka_resp_err_t assigned = rd_kafka_assign(rk.get(), list);
  rd_kafka_topic_partition_list_destroy(list);
  if (assigned) return std::string("cannot assign the changelog: ") + rd_kafka_err2str(assigned);
  while (!open.empty()) {
    if (std::chrono::steady_clock::now() > deadline) {
      return "timed out reading " + topic + " (" + std::to_string(open.size()) +
             " partitions unfinished)";
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk.get(), 100);
    if (m == nullptr) continue;
    std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> owned(
        m, rd_kafka_message_destroy);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      open.erase(m->partition);
    } else if (m->err) {
      return "reading " + topic + ": " + rd_kafka_message_errstr(m);
    } else if (m->payload != nullptr) {
      records[m->partition].emplace_back(static_cast<const char*>(m->payload), m->len);
    }
  }
  return records;
}

}  // namespace oncecount::kafka
