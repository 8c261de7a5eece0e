#include "processor/cmd/demo.h"

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <thread>

#include "processor/cmd/inject_workload.h"
#include "processor/cmd/log_sink.h"
#include "processor/cmd/service_runtime.h"
#include "processor/cmd/service_topics.h"
#include "processor/kafka/embedded_cluster.h"

namespace oncecount::cmd {
namespace {

using Clock = std::chrono::steady_clock;

struct GeneratorCounts {
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> malformed{0};
  std::atomic<bool> failed{false};
  // Set once every event and retry of a finite stream (--events) was delivered;
  // `truth` is written before it and read only after it.
  std::atomic<bool> finished{false};
  std::map<std::string, int64_t> truth;
};

// Produces the demo's stream until `stop` or, with --events, until every event and
// retry is delivered: InjectWorkload paced at `rate`. A message the producer's queue
// has no room for is offered again, so the workload's truth stays what was sent.
void Generate(const std::string& bootstrap, const std::string& topic, const DemoOptions& o,
              const std::atomic<bool>& stop, GeneratorCounts& counts) {
  char error[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), error, sizeof error) ||
      rd_kafka_conf_set(conf, "enable.idempotence", "true", error, sizeof error)) {
    rd_kafka_conf_destroy(conf);
    counts.failed = true;
    return;
  }
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, error, sizeof error);
  if (producer == nullptr) {
    rd_kafka_conf_destroy(conf);
    counts.failed = true;
    return;
  }
  WorkloadOptions w;
  w.events = o.events > 0 ? static_cast<uint64_t>(o.events) : uint64_t{1} << 40;
  w.duplicate_rate = o.duplicate_rate;
  w.counters = 24;
  w.clients = 50;
  w.max_retry_delay_ms = 3000;
  w.malformed_rate = 0.005;
  w.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  InjectWorkload workload(w);
  const auto start = Clock::now();
  uint64_t sent_new = 0;
  while (!stop.load() && !workload.Done()) {
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    const bool new_allowed =
        static_cast<double>(sent_new) < o.rate * static_cast<double>(now_ms) / 1000.0;
    std::optional<WorkloadMessage> m = workload.Next(now_ms, new_allowed);
    if (!m) {
      rd_kafka_poll(producer, 2);
      continue;
    }
    const void* key = m->key ? m->key->data() : nullptr;
    const size_t key_size = m->key ? m->key->size() : 0;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__QUEUE_FULL;
    while (!stop.load()) {
      e = rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic.c_str()),
                            RD_KAFKA_V_KEY(key, key_size),
                            RD_KAFKA_V_VALUE(m->value.data(), m->value.size()),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) break;
      rd_kafka_poll(producer, 10);
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) break;
    switch (m->kind) {
      case WorkloadMessage::Kind::kEvent:
        ++sent_new;
        ++counts.events;
        break;
      case WorkloadMessage::Kind::kRetry:
        ++counts.retries;
        break;
      case WorkloadMessage::Kind::kMalformed:
        ++counts.malformed;
        break;
    }
    rd_kafka_poll(producer, 0);
  }
  const bool delivered = rd_kafka_flush(producer, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR;
  rd_kafka_destroy(producer);
  if (workload.Done() && delivered) {
    counts.truth = workload.truth().counters;
    counts.finished.store(true, std::memory_order_release);
  }
}

// Whether the service's merged counters equal what the finished stream sent.
bool CountersEqual(const shard::StateBoard& board, const std::map<std::string, int64_t>& truth) {
  const auto snapshot = board.Read();
  if (!snapshot.complete()) return false;
  std::map<std::string, int64_t> merged;
  for (const auto& v : snapshot.shards) {
    if (v->role != shard::ShardRole::kActive) continue;
    for (const auto& c : v->counters->counters()) merged[c.name] += c.value;
  }
  return merged == truth;
}

}  // namespace

int RunDemo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
  if (o.rate <= 0 || o.rate > 1e6) {
    err << "demo: --rate must be in (0, 1000000]\n";
    return 2;
  }
  if (o.partitions < 1 || o.partitions > 64) {
    err << "demo: --partitions must be in 1..64\n";
    return 2;
  }
  config::Config c;
  c.http.listen = o.http;
  c.dedup.expected_rate = std::max(100.0, o.rate / o.partitions * 2);
  c.kafka.group_id = "oncecount-demo";
  err << "demo: starting an embedded Kafka cluster (" << o.partitions << " partitions)\n";
  auto cluster = kafka::EmbeddedCluster::Start(1, ServiceTopics(c.kafka, o.partitions));
  if (!cluster) {
    err << "demo: " << cluster.error() << "\n";
    return base::ExitCodeFor(cluster.code());
  }
  const std::string bootstrap = cluster.value()->bootstrap_servers();
  auto started = ServiceRuntime::Start(
      {c, bootstrap, "demo",
       base::Logger(MakeStreamLogSink(err, base::LogLevel::kInfo, LogFormat::kText), "demo"),
       kafka::EmbeddedCluster::kPartitionRetentionBytes,
       /*local_checkpoints=*/false, StopSignalPending});
  if (!started) {
    err << "demo: " << started.error() << "\n";
    return base::ExitCodeFor(started.code());
  }
  auto& runtime = started.value();
  out << "oncecount demo: open " << runtime->url() << "/ (counters: " << runtime->url()
      << "/v1/counters, statistics: " << runtime->url() << "/v1/stats)" << std::endl;
  err << "demo: producing " << o.rate << " events/s to " << c.kafka.input_topic << " with "
      << o.duplicate_rate * 100 << "% retried after up to 3 s and 0.5% malformed";
  if (o.events > 0) err << ", " << o.events << " events in all";
  err << "; Ctrl-C stops\n";

  std::atomic<bool> stop_generator{false};
  GeneratorCounts counts;
  std::thread generator(
      [&] { Generate(bootstrap, c.kafka.input_topic, o, stop_generator, counts); });
  const auto start = Clock::now();
  auto next_report = start + std::chrono::seconds(5);
  bool exact_reported = false;
  const int signal_number = WaitForStop([&] {
    if (!exact_reported && counts.finished.load(std::memory_order_acquire) &&
        CountersEqual(runtime->board(), counts.truth)) {
      exact_reported = true;
      out << "demo: all " << o.events << " events and their retries delivered; the "
          << counts.truth.size()
          << " counters equal what was sent (every duplicate dropped, none lost); "
             "serving until Ctrl-C"
          << std::endl;
    }
    if (Clock::now() >= next_report) {
      next_report += std::chrono::seconds(5);
      uint64_t applied = 0, dropped = 0, dead = 0;
      for (const auto& v : runtime->board().Read().shards) {
        applied += v->events_applied;
        dropped += v->duplicates_dropped;
        dead += v->dead_lettered;
      }
      out << "demo: sent " << counts.events << " events + " << counts.retries << " retries + "
          << counts.malformed << " malformed | applied " << applied << ", duplicates dropped "
          << dropped << ", dead-lettered " << dead << std::endl;
    }
    return runtime->processor_finished() || counts.failed.load() ||
           (o.duration_s > 0 && Clock::now() - start >= std::chrono::seconds(o.duration_s));
  });
  if (signal_number > 0) err << "demo: stopping on signal " << signal_number << "\n";
  stop_generator = true;
  generator.join();
  const base::Status stopped = runtime->Stop();
  if (!stopped) {
    err << "demo: " << stopped.error() << "\n";
    return base::ExitCodeFor(stopped.code());
  }
  if (counts.failed) {
    err << "demo: the event generator could not start\n";
    return 1;
  }
  err << "demo: stopped cleanly\n";
  return 0;
}

}  // namespace oncecount::cmd
