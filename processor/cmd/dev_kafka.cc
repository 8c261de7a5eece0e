#include "processor/cmd/dev_kafka.h"

#include <signal.h>

#include <ostream>

#include "processor/cmd/atomic_file.h"
#include "processor/cmd/service_topics.h"
#include "processor/kafka/embedded_cluster.h"

namespace oncecount::cmd {

int RunDevKafka(const DevKafkaOptions& o, std::ostream& out, std::ostream& err) {
  if (o.brokers < 1 || o.brokers > 16) {
    err << "dev-kafka: --brokers must be in 1..16 (got " << o.brokers << ")\n";
    return 2;
  }
  if (o.partitions < 1 || o.partitions > 1024) {
    err << "dev-kafka: --partitions must be in 1..1024 (got " << o.partitions << ")\n";
    return 2;
  }
  std::vector<kafka::TopicSpec> topics;
  for (const std::string& name : o.topics) topics.push_back({name, o.partitions});
  if (topics.empty()) topics = ServiceTopics(config::KafkaConfig{}, o.partitions);

  auto started = kafka::EmbeddedCluster::Start(o.brokers, topics);
  if (!started) {
    err << "dev-kafka: " << started.error() << "\n";
    return base::ExitCodeFor(started.code());
  }
  const auto& cluster = started.value();
  // The file first: a reader that has seen the line may rely on the file.
  if (!o.bootstrap_file.empty()) {
    const base::Status written =
        WriteFileAtomically(o.bootstrap_file, cluster->bootstrap_servers());
    if (!written) {
      err << "dev-kafka: --bootstrap-file: " << written.message() << "\n";
      return base::ExitCodeFor(written.code());
    }
  }
  out << cluster->bootstrap_servers() << std::endl;
  err << "dev-kafka: " << o.brokers << " broker(s), topics:";
  for (const auto& t : topics) err << " " << t.name << "(" << t.partitions << ")";
  err << "; embedded cluster, in memory only; SIGTERM or Ctrl-C stops it\n";

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  err << "dev-kafka: stopping on signal " << signal_number << "\n";
  return 0;
}

}  // namespace oncecount::cmd
