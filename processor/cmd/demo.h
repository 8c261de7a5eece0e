// `oncecount demo [--http ADDR]`: the whole service in one process, for a first
// look (SPEC §3): an embedded Kafka cluster, the processor, the HTTP API, and a
// steady stream of increment events in which some are retried (duplicates the
// service must drop) and a few are malformed (dead-lettered). Prints the URL to
// open and, every few seconds, what happened; Ctrl-C stops it cleanly.
//
// Thread-safety: runs on main, which must have SIGTERM and SIGINT blocked.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

namespace oncecount::cmd {

struct DemoOptions {
  std::string http = "127.0.0.1:8080";
  double rate = 500;            // new events per second
  double duplicate_rate = 0.1;  // share of events retried
  int partitions = 4;
  int64_t duration_s = 0;  // 0: until a signal
  // New events to send in all (0: no end). Once they and their retries are
  // delivered and applied, the demo says whether the counters equal what was sent.
  int64_t events = 0;
};

int RunDemo(const DemoOptions& options, std::ostream& out, std::ostream& err);

}  // namespace oncecount::cmd
