// `oncecount serve --config FILE`: the processor and the HTTP API until SIGTERM or
// SIGINT (SPEC §3). With kafka.bootstrap_servers "embedded" it also hosts an
// in-process embedded Kafka cluster (for trying things out; it keeps nothing).
//
// Thread-safety: runs on main, which must have SIGTERM and SIGINT blocked.
#pragma once

#include <iosfwd>
#include <string>

namespace oncecount::cmd {

struct ServeOptions {
  std::string config_file;
  std::string instance_id;          // empty: DefaultInstanceId
  std::string log_level = "info";   // debug | info | warn | error
  std::string log_format = "text";  // text | json (one JSON object per line)
};

// Exit codes: 0 after a signal and a clean drain, 1 on a runtime failure, 2 on a
// configuration error.
int RunServe(const ServeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace oncecount::cmd
