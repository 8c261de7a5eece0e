// The baseline of the service's throughput benchmark (scripts/bench-service): a bare
// librdkafka consumer that reads every partition of a topic from the start to its
// end, does nothing with the messages, and prints one JSON line with the message
// count and the rate from the assignment to the last message. Its clock starts when
// fetching starts, as serve's does in the script (at /readyz, once its input is
// assigned): the first fetch's latency is part of both spans (first_message_ms says
// how much of this one it was).
//
// Usage: consume_topic BOOTSTRAP TOPIC PARTITIONS
#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: consume_topic BOOTSTRAP TOPIC PARTITIONS\n");
    return 2;
  }
  const std::string topic = argv[2];
  const int partitions = std::atoi(argv[3]);
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const char* settings[][2] = {{"bootstrap.servers", argv[1]},
                               {"group.id", "consume-topic-baseline"},
                               {"enable.partition.eof", "true"},
                               {"enable.auto.commit", "false"},
                               {"fetch.wait.max.ms", "20"},
                               // As serve's consumer (rdkafka_clients.cc): librdkafka 2.0.2
                               // stops fetching once the consumer queue holds this many
                               // messages and looks again only at its broker thread's next
                               // one-second wakeup (2.0.2 has no fetch.queue.backoff.ms).
                               // At the default of 100,000 a fetcher that got that far
                               // ahead of this loop left it idle until ~1.0 s after the
                               // assignment, and a round took 1.1-1.3 s instead of ~0.5.
                               {"queued.min.messages", "1000000"}};
  for (const auto& s : settings) {
    if (rd_kafka_conf_set(conf, s[0], s[1], error, sizeof error) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "%s\n", error);
      return 2;
    }
  }
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, error, sizeof error);
  if (rk == nullptr) {
    std::fprintf(stderr, "%s\n", error);
    return 1;
  }
  // Each partition from its first offset, absolute, as serve resumes its shards: a
  // logical offset (BEGINNING) costs an offset query, which librdkafka retries only
  // after 500 ms when it asks before it knows the partition's leader, and a partition
  // starting half a second late would stretch this reader's span.
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p) {
    int64_t low = 0, high = 0;
    const rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, 10000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "partition %d: %s\n", p, rd_kafka_err2str(e));
      return 1;
    }
    rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = low;
  }
  using Clock = std::chrono::steady_clock;
  const Clock::time_point assigned = Clock::now();
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  Clock::time_point first{}, last{};
  long long messages = 0;
  int at_end = 0;
  const auto deadline = Clock::now() + std::chrono::minutes(5);
  while (at_end < partitions && Clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++at_end;
    } else if (!m->err) {
      if (messages++ == 0) first = Clock::now();
      last = Clock::now();
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  const double seconds = std::chrono::duration<double>(last - assigned).count();
  const double first_ms = std::chrono::duration<double, std::milli>(first - assigned).count();
  std::printf(
      "{\"messages\": %lld, \"seconds\": %.3f, \"first_message_ms\": %.1f, \"rate\": %.0f}\n",
      messages, seconds, first_ms, seconds > 0 ? static_cast<double>(messages) / seconds : 0.0);
  return at_end == partitions ? 0 : 1;
}
