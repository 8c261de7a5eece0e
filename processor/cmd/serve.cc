#include "processor/cmd/serve.h"

#include <ostream>
#include <random>

#include "processor/base/kafka_name.h"
#include "processor/cmd/log_sink.h"
#include "processor/cmd/service_runtime.h"
#include "processor/cmd/service_topics.h"
#include "processor/kafka/embedded_cluster.h"

namespace oncecount::cmd {
namespace {

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

int RunServe(const ServeOptions& o, std::ostream& out, std::ostream& err) {
  const std::optional<base::LogLevel> level = base::ParseName(base::kLogLevelNames, o.log_level);
  if (!level) {
    err << "serve: --log-level: " << base::ExpectedOneOf(base::kLogLevelNames, o.log_level) << "\n";
    return 2;
  }
  const std::optional<LogFormat> format = base::ParseName(kLogFormatNames, o.log_format);
  if (!format) {
    err << "serve: --log-format: " << base::ExpectedOneOf(kLogFormatNames, o.log_format) << "\n";
    return 2;
  }
  const auto loaded = config::LoadConfigFileWithProcessEnvironment(o.config_file);
  if (!loaded) {
    err << "serve: " << loaded.error() << "\n";
    return base::ExitCodeFor(loaded.code());
  }
  const config::Config& c = loaded.value();
  const std::string instance_id =
      o.instance_id.empty() ? DefaultInstanceId(c.http.listen, RandomSeed()) : o.instance_id;
  // The id is the group.instance.id, which a broker refuses unless Kafka's rule for
  // names holds (every JoinGroup would fail), and the key of the instance's heartbeats.
  if (const std::string problem = base::KafkaNameProblem(instance_id); !problem.empty()) {
    err << "serve: " << (o.instance_id.empty() ? "the default instance id " : "--instance-id ")
        << instance_id << ": " << problem << " (Kafka's rule for group.instance.id)"
        << (o.instance_id.empty() ? " (it comes from the hostname): give --instance-id" : "")
        << "\n";
    return 2;
  }
  std::unique_ptr<kafka::EmbeddedCluster> embedded;
  std::string bootstrap = c.kafka.bootstrap_servers;
  if (bootstrap == "embedded") {
    constexpr int kEmbeddedPartitions = 8;
    auto started = kafka::EmbeddedCluster::Start(1, ServiceTopics(c.kafka, kEmbeddedPartitions));
    if (!started) {
      err << "serve: " << started.error() << "\n";
      return base::ExitCodeFor(started.code());
    }
    embedded = std::move(started).value();
    bootstrap = embedded->bootstrap_servers();
    err << "serve: embedded Kafka cluster at " << bootstrap << " (in memory only)\n";
  }
  base::Logger log(MakeStreamLogSink(err, *level, *format), instance_id);
  if (embedded) {
    // Said at warn, in the log's format: a deployment whose configuration lost its
    // bootstrap_servers would otherwise serve counters that the next restart zeroes.
    log.Warn(
        "kafka.bootstrap_servers is \"embedded\": the events, the counters and their changelog "
        "live in this process only and are lost when it stops; set kafka.bootstrap_servers "
        "(ONCECOUNT_KAFKA_BOOTSTRAP_SERVERS) to serve a Kafka cluster");
  }
  RuntimeOptions ro{
      c,
      bootstrap,
      instance_id,
      log,
      embedded ? kafka::EmbeddedCluster::kPartitionRetentionBytes
               : static_cast<size_t>(c.kafka.changelog_retention_bytes),
      /*local_checkpoints=*/embedded == nullptr,
      /*stop_requested=*/StopSignalPending,
      /*stable_instance_id=*/!o.instance_id.empty() || DefaultInstanceIdIsStable(c.http.listen),
      /*check_brokers_abort_interval=*/embedded == nullptr};
  auto started = ServiceRuntime::Start(std::move(ro));
  if (!started) {
    err << "serve: " << started.error() << "\n";
    return base::ExitCodeFor(started.code());  // kStopped: 0, nothing to undo
  }
  auto& runtime = started.value();
  out << runtime->url() << std::endl;
  err << "serve: HTTP API at " << runtime->url() << "; SIGTERM or Ctrl-C stops it\n";
  const int signal_number = WaitForStop([&] { return runtime->finished(); });
  if (signal_number > 0) err << "serve: stopping on signal " << signal_number << "\n";
  const base::Status stopped = runtime->Stop();
  if (!stopped) {
    err << "serve: " << stopped.error() << "\n";
    return base::ExitCodeFor(stopped.code());
  }
  err << "serve: stopped cleanly\n";
  return 0;
}

}  // namespace oncecount::cmd
