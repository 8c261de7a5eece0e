#include "processor/cmd/demo.h"

#include <atomic>
#include <chrono>
#include <map>
#include <ostream>
#include <string>
#include <thread>

#include "processor/base/listen_address.h"
#include "processor/cmd/inject_workload.h"
#include "processor/cmd/log_sink.h"
#include "processor/cmd/service_runtime.h"
#include "processor/cmd/service_topics.h"
#include "processor/cmd/workload_producer.h"
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

WorkloadOptions DemoWorkload(const DemoOptions& o) {
  WorkloadOptions w;
  w.events = o.events > 0 ? static_cast<uint64_t>(o.events) : uint64_t{1} << 40;
  w.duplicate_rate = o.duplicate_rate;
  w.counters = 24;
  w.clients = 50;
  w.max_retry_delay_ms = 3000;
  w.malformed_rate = 0.005;
  w.seed = static_cast<uint64_t>(Clock::now().time_since_epoch().count());
  return w;
}

void Count(const WorkloadMessage& m, GeneratorCounts& counts) {
  switch (m.kind) {
    case WorkloadMessage::Kind::kEvent:
      ++counts.events;
      break;
    case WorkloadMessage::Kind::kRetry:
      ++counts.retries;
      break;
    case WorkloadMessage::Kind::kMalformed:
      ++counts.malformed;
      break;
  }
}

// Produces the demo's stream until `stop` or, with --events, until every event and
// retry is delivered: InjectWorkload paced at `rate`. A message the producer's queue
// has no room for is offered again, so the workload's truth stays what was sent.
void Generate(const std::string& bootstrap, const std::string& topic, const DemoOptions& o,
              const std::atomic<bool>& stop, GeneratorCounts& counts) {
  auto producer = WorkloadProducer::Create(bootstrap, Pacing::kPaced);
  if (!producer) {
    counts.failed = true;
    return;
  }
  InjectWorkload workload(DemoWorkload(o));
  const auto start = Clock::now();
  while (!stop.load() && !workload.Done()) {
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
    const bool new_allowed =
        static_cast<double>(counts.events.load()) < o.rate * static_cast<double>(now_ms) / 1000.0;
    std::optional<WorkloadMessage> m = workload.Next(now_ms, new_allowed);
    if (!m) {
      (*producer)->Poll(std::chrono::milliseconds(2));
      continue;
    }
    if (!(*producer)->Produce(topic, *m, &stop).ok()) break;
    Count(*m, counts);
    (*producer)->Poll(std::chrono::milliseconds(0));
  }
  const bool delivered =
      (*producer)->Flush(std::chrono::seconds(5)) == 0 && (*producer)->counts().failed == 0;
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

base::Status CheckDemoOptions(const DemoOptions& o) {
  if (o.rate <= 0 || o.rate > 1e6) return base::UsageError("--rate must be in (0, 1000000]");
  if (!(o.duplicate_rate >= 0 && o.duplicate_rate < 1)) {
    return base::UsageError("--duplicate-rate must be in [0, 1)");
  }
  if (o.partitions < 1 || o.partitions > 64) {
    return base::UsageError("--partitions must be in 1..64");
  }
  if (auto http = base::ParseListenAddress(o.http); !http) {
    return base::UsageError("--http: " + http.message());
  }
  return {};
}

config::Config DemoConfig(const DemoOptions& o) {
  config::Config c;
  c.http.listen = o.http;
  c.dedup.expected_rate = std::max(100.0, o.rate / o.partitions * 2);
  c.kafka.group_id = "oncecount-demo";
  return c;
}

// What the demo prints while it runs: the counts every 5 s, and once, when a finite
// stream (--events) has been counted exactly.
class DemoWatcher {
 public:
  DemoWatcher(const DemoOptions& o, ServiceRuntime& runtime, const GeneratorCounts& counts,
              std::ostream& out)
      : o_(o), runtime_(runtime), counts_(counts), out_(out) {}

  // Called by WaitForStop between signals; true ends the demo.
  bool Done() {
    if (!exact_reported_ && counts_.finished.load(std::memory_order_acquire) &&
        CountersEqual(runtime_.board(), counts_.truth)) {
      exact_reported_ = true;
      out_ << "demo: all " << o_.events << " events and their retries delivered; the "
           << counts_.truth.size()
           << " counters equal what was sent (every duplicate dropped, none lost); "
              "serving until Ctrl-C"
           << std::endl;
    }
    if (Clock::now() >= next_report_) {
      next_report_ += std::chrono::seconds(5);
      ReportCounts();
    }
    return runtime_.finished() || counts_.failed.load() ||
           (o_.duration_s > 0 && Clock::now() - start_ >= std::chrono::seconds(o_.duration_s));
  }

 private:
  void ReportCounts() {
    uint64_t applied = 0, dropped = 0, dead = 0;
    for (const auto& v : runtime_.board().Read().shards) {
      applied += v->events_applied;
      dropped += v->duplicates_dropped;
      dead += v->dead_lettered;
    }
    out_ << "demo: sent " << counts_.events << " events + " << counts_.retries << " retries + "
         << counts_.malformed << " malformed | applied " << applied << ", duplicates dropped "
         << dropped << ", dead-lettered " << dead << std::endl;
  }

  const DemoOptions& o_;
  ServiceRuntime& runtime_;
  const GeneratorCounts& counts_;
  std::ostream& out_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point next_report_ = start_ + std::chrono::seconds(5);
  bool exact_reported_ = false;
};

void Announce(const DemoOptions& o, const config::Config& c, const ServiceRuntime& runtime,
              std::ostream& out, std::ostream& err) {
  out << "oncecount demo: open " << runtime.url() << "/ (counters: " << runtime.url()
      << "/v1/counters, statistics: " << runtime.url() << "/v1/stats)" << std::endl;
  err << "demo: producing " << o.rate << " events/s to " << c.kafka.input_topic << " with "
      << o.duplicate_rate * 100 << "% retried after up to 3 s and 0.5% malformed";
  if (o.events > 0) err << ", " << o.events << " events in all";
  err << "; Ctrl-C stops\n";
}

}  // namespace

int RunDemo(const DemoOptions& o, std::ostream& out, std::ostream& err) {
  const auto fail = [&err](const base::Error& e) {
    err << "demo: " << e << "\n";
    return base::ExitCodeFor(e.code());
  };
  if (const base::Status valid = CheckDemoOptions(o); !valid) return fail(valid.error());
  const config::Config c = DemoConfig(o);
  err << "demo: starting an embedded Kafka cluster (" << o.partitions << " partitions)\n";
  auto cluster = kafka::EmbeddedCluster::Start(1, ServiceTopics(c.kafka, o.partitions));
  if (!cluster) return fail(cluster.error());
  const std::string bootstrap = cluster.value()->bootstrap_servers();
  auto started = ServiceRuntime::Start(
      {c, bootstrap, "demo",
       base::Logger(MakeStreamLogSink(err, base::LogLevel::kInfo, LogFormat::kText), "demo"),
       kafka::EmbeddedCluster::kPartitionRetentionBytes,
       /*local_checkpoints=*/false, StopSignalPending});
  if (!started) return fail(started.error());
  ServiceRuntime& runtime = *started.value();
  Announce(o, c, runtime, out, err);

  std::atomic<bool> stop_generator{false};
  GeneratorCounts counts;
  std::thread generator(
      [&] { Generate(bootstrap, c.kafka.input_topic, o, stop_generator, counts); });
  DemoWatcher watcher(o, runtime, counts, out);
  const int signal_number = WaitForStop([&] { return watcher.Done(); });
  if (signal_number > 0) err << "demo: stopping on signal " << signal_number << "\n";
  stop_generator = true;
  generator.join();
  if (const base::Status stopped = runtime.Stop(); !stopped) return fail(stopped.error());
  if (counts.failed) {
    err << "demo: the event generator could not start\n";
    return 1;
  }
  err << "demo: stopped cleanly\n";
  return 0;
}

}  // namespace oncecount::cmd
