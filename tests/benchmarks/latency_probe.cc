// Visibility latency of the service (scripts/bench-service): produces probe events,
// each to a counter of its own, and polls GET /v1/counters/{name} until the counter
// shows up, while the script keeps a steady load running beside it. Prints one JSON
// line with the median, p90, p99 and maximum in ms.
//
// With PARTITIONS (comma-separated), the probes go to those input partitions in
// turn (scripts/bench-standby probes an instance's replicas this way); otherwise the
// key chooses, as for any event.
//
// Usage: latency_probe BOOTSTRAP API_URL PROBES [PARTITIONS]
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "http/client.h"

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: latency_probe BOOTSTRAP API_URL PROBES [PARTITIONS]\n");
    return 2;
  }
  std::vector<int32_t> partitions;
  if (argc == 5) {
    std::stringstream list(argv[4]);
    for (std::string p; std::getline(list, p, ',');) partitions.push_back(std::atoi(p.c_str()));
  }
  const std::string api = argv[2];
  const int probes = std::atoi(argv[3]);
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], error, sizeof error);
  rd_kafka_conf_set(conf, "linger.ms", "0", error, sizeof error);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (producer == nullptr) return 1;
  using Clock = std::chrono::steady_clock;
  const std::string run = std::to_string(Clock::now().time_since_epoch().count());
  std::vector<double> ms;
  for (int i = 0; i < probes; ++i) {
    const std::string counter = "probe-" + run + "-" + std::to_string(i);
    const std::string key = "probe-" + run + "/" + std::to_string(i);
    const std::string value = "{\"counter\":\"" + counter + "\",\"delta\":1}";
    const auto start = Clock::now();
    const int32_t partition = partitions.empty()
                                  ? RD_KAFKA_PARTITION_UA
                                  : partitions[static_cast<size_t>(i) % partitions.size()];
    rd_kafka_producev(producer, RD_KAFKA_V_TOPIC("events"), RD_KAFKA_V_PARTITION(partition),
                      RD_KAFKA_V_KEY(key.data(), key.size()),
                      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    rd_kafka_poll(producer, 0);
    while (Clock::now() - start < std::chrono::seconds(10)) {
      auto got =
          oncecount::http::HttpGet(api, "/v1/counters/" + counter, std::chrono::milliseconds(2000));
      const auto* r = (got.ok() ? &got.value() : nullptr);
      if (r != nullptr && r->status == 200) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(37));  // off the commit rhythm
  }
  rd_kafka_flush(producer, 5000);
  rd_kafka_destroy(producer);
  std::sort(ms.begin(), ms.end());
  auto at = [&](double q) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(q * ms.size()))];
  };
  std::printf(
      "{\"probes\": %zu, \"p50_ms\": %.1f, \"p90_ms\": %.1f, \"p99_ms\": %.1f, \"max_ms\": %.1f}\n",
      ms.size(), at(0.5), at(0.9), at(0.99), ms.back());
  return 0;
}
