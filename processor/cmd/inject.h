// `oncecount inject`: produce a test workload of increment events with retried
// duplicates and optional malformed messages to a Kafka topic, and write the truth
// (SPEC §3). Progress goes to stderr once per second.
//
// Thread-safety: runs on the calling thread (librdkafka adds its own).
#pragma once

#include <iosfwd>
#include <string>

#include "processor/cmd/inject_workload.h"

namespace oncecount::cmd {

struct InjectOptions {
  std::string bootstrap;
  std::string topic = "events";
  WorkloadOptions workload;
  double rate = 0;  // events per second; 0: as fast as the producer goes
  std::string truth_file;
  // When set, a CSV row every 100 ms: wall clock (ms since the epoch), events sent so
  // far, and the sum over all counters of what those events add up to (the value a
  // single-counter workload's counter should show once they are applied).
  std::string timeline_file;
};

// Exit code: 0 when every message was acknowledged, 1 when some were not (or the
// truth cannot be written), 2 on bad options.
int RunInject(const InjectOptions& options, std::ostream& err);

}  // namespace oncecount::cmd
