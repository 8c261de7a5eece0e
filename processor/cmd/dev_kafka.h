// `oncecount dev-kafka`: an embedded Kafka cluster as its own process, for local
// development and tests (SPEC §3). Prints the bootstrap servers on the first line
// of stdout (and to --bootstrap-file, written atomically), then runs until SIGTERM
// or SIGINT.
//
// Thread-safety: runs on the calling thread, which must have SIGTERM and SIGINT
// blocked (main does that before any thread exists) so that it can sigwait.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace oncecount::cmd {

struct DevKafkaOptions {
  int brokers = 1;
  int partitions = 8;
  std::vector<std::string> topics;  // empty: the service's four (service_topics.h)
  std::string bootstrap_file;
};

// Returns the exit code: 0 after a signal, 1 when the cluster cannot start, 2 on bad
// options.
int RunDevKafka(const DevKafkaOptions& options, std::ostream& out, std::ostream& err);

}  // namespace oncecount::cmd
